"""A judge engine's view of the Go games engine 1 lost: `klent bench judge FOLDER... --judge CMD`.

A lost game's record says neither whether it was given up too soon nor where it was lost.  A
judge (any GTP engine; Pachi at many playouts is the natural one: it resigns by its own search,
below a win rate of 0.2, and reports its win rates through ``pachi-result``) answers both:

- by default, at every position where engine 1 of the given `klent match` folders resigned, the
  judge is asked for engine 1's move: a judge that resigns too agrees with the resignation; one
  that plays on says so, with its win rate;
- with ``--trace``, in every game engine 1 lost, the judge gives its win rate for engine 1 before
  each of engine 1's moves after the opening (``--from``): the move from which it stayed below
  ``--lost-below`` (where the game was lost), the largest drop between two of engine 1's moves,
  and over all games the mean drop a move by phase of the game.  Tracing needs a judge that
  reports win rates and never resigns (Pachi with ``resign_threshold=0``).

    klent bench judge runs/strength/p9base-200-pachi1000 --judge \
        ".venv/bin/pachi -t =20000 threads=1,pondering=0,pass_all_alive"
    klent bench judge runs/strength/p9base-800-pachi1000 --trace --judge \
        ".venv/bin/pachi -t =5000 threads=1,pondering=0,pass_all_alive,resign_threshold=0"
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from klent.engine.games.base import GameFormatError
from klent.engine.games.sgf import read_sgf
from klent.matchplay.engine_process import EngineError, GtpFailure, GtpProcess
from klent.matchplay.records import MatchFolderError, read_results
from klent.protocols.go_text import pachi_win_rate

JUDGE_TIMEOUT = 600.0  # seconds for the judge's move: a slow judge is the point
PHASES = (20, 40, 60)  # trace summary: moves 1-20, 21-40, 41-60, 61 on
BLUNDER = 0.4  # trace summary: a drop of the judge's win rate this large between two own moves


@dataclass(frozen=True)
class LostGame:
    """A game engine 1 lost, as its record has it."""

    folder: Path
    game: int
    reason: str
    moves: list[str]  # GTP vertices, from the empty board
    colour: str  # engine 1's, "b" or "w"
    size: int
    komi: float


def lost_games(folder: Path, resigned: bool) -> list[LostGame]:
    """The games of ``folder`` engine 1 lost (by resigning only, if ``resigned``), read from
    their SGF records."""
    found = []
    for result in read_results(folder):
        if result.winner != 1 or (resigned and result.reason != "resignation"):
            continue
        path = folder / result.record
        try:
            record = read_sgf(path.read_bytes())
        except (OSError, GameFormatError) as error:
            raise MatchFolderError(f"{path}: {error}") from None
        if record.states[0].board().any():
            raise MatchFolderError(f"{path}: a game from a set-up position; only games from the empty board are judged")
        colour = "bw"[result.first]
        if resigned and colour != "bw"[len(record.moves) % 2]:
            raise MatchFolderError(f"{path}: engine 1 resigned, but the record leaves the other side to move")
        found.append(LostGame(folder, result.game, result.reason, [record.game.vertex(a) for a in record.moves],
                              colour, record.game.size, record.game.komi))
    return found


def judge_move(judge: GtpProcess, lost: LostGame, plies: int) -> tuple[str, float | None]:
    """The judge's move for engine 1 after the game's first ``plies`` moves, and its win rate
    where it reports one.  The board is set up afresh each time: Pachi refuses ``undo`` after
    a ``genmove``."""
    for command in (f"boardsize {lost.size}", "clear_board", f"komi {lost.komi:g}"):
        judge.send(command)
    for number, vertex in enumerate(lost.moves[:plies]):
        judge.send(f"play {'bw'[number % 2]} {vertex}")
    move = judge.send(f"genmove {lost.colour}", timeout=JUDGE_TIMEOUT)
    if move.lower() == "resign" or judge.send("known_command pachi-result") != "true":
        return move, None
    return move, pachi_win_rate(judge.send("pachi-result"))


def judged(judge: GtpProcess, lost: LostGame, plies: int) -> tuple[str, float | None]:
    """`judge_move`, a refused move of the record a one-line `MatchFolderError`."""
    try:
        return judge_move(judge, lost, plies)
    except GtpFailure as error:
        raise MatchFolderError(f"{lost.folder} game {lost.game}: the judge refused the game's moves "
                               f"({error})") from None


def resignations(games: Sequence[LostGame], judge: GtpProcess) -> None:
    """Print the judge's move (and win rate) at each of engine 1's resignations, then how many
    of them it would have played on."""
    print(f"{'folder':<32} {'game':>4} c {'moves':>5} {'judge':>7} win rate")
    rates: list[float] = []
    played_on = 0
    for lost in games:
        move, rate = judged(judge, lost, len(lost.moves))
        if move.lower() != "resign":
            played_on += 1
            rates += [] if rate is None else [rate]
        print(f"{lost.folder.name:<32} {lost.game:>4} {lost.colour} {len(lost.moves):>5} {move:>7} "
              f"{'' if rate is None else f'{rate:.2f}'}", flush=True)
    print(f"{len(games)} resignations of engine 1; the judge resigned too in {len(games) - played_on}, "
          f"played on in {played_on}" + (f" (win rates {min(rates):.2f} to {max(rates):.2f})" if rates else ""))


def trace(judge: GtpProcess, lost: LostGame, first: int) -> list[tuple[int, float]]:
    """The judge's win rate for engine 1 before each of its moves from ply ``first`` on (the
    ply, counting from 1: the move engine 1 was about to play), and once more at the end when
    engine 1 is to move there."""
    plies = [ply for ply in range(first, len(lost.moves) + 1) if "bw"[ply % 2] == lost.colour]
    found = []
    for ply in plies:
        move, rate = judged(judge, lost, ply)
        if rate is None:
            raise MatchFolderError(f"{lost.folder} game {lost.game}: the judge answered {move!r} with no win "
                                   "rate; tracing needs one that reports them and never resigns "
                                   "(Pachi with resign_threshold=0)")
        found.append((ply + 1, rate))
    return found


def where_lost(rates: Sequence[tuple[int, float]], below: float) -> int | None:
    """The move from which the win rate stayed below ``below`` to the end, None if it ended above."""
    last_above = max((index for index, (_, rate) in enumerate(rates) if rate >= below), default=-1)
    return None if last_above == len(rates) - 1 else rates[last_above + 1][0]


def traces(games: Sequence[LostGame], judge: GtpProcess, first: int, below: float) -> None:
    """Print each lost game's trace summary, then the summary over all games."""
    print(f"{'folder':<32} {'game':>4} c {'moves':>5} {'first':>5} {'lost from':>9} {'largest drop':>12} at move")
    lost_from: list[int] = []
    largest: list[float] = []
    drops: list[list[float]] = [[] for _ in range(len(PHASES) + 1)]
    for lost in games:
        rates = trace(judge, lost, first)
        moves = [move for move, _ in rates]
        steps = -np.diff([rate for _, rate in rates])  # the fall across each own move and the reply
        for move, step in zip(moves, steps):
            drops[int(np.searchsorted(PHASES, move))].append(float(step))
        at = where_lost(rates, below)
        lost_from += [] if at is None else [at]
        worst = int(np.argmax(steps)) if len(steps) else None
        largest += [] if worst is None else [float(steps[worst])]
        print(f"{lost.folder.name:<32} {lost.game:>4} {lost.colour} {len(lost.moves):>5} "
              f"{f'{rates[0][1]:.2f}' if rates else '-':>5} {'-' if at is None else at:>9} "
              + ("" if worst is None else f"{steps[worst]:>12.2f} {moves[worst]}"), flush=True)
    print(f"{len(games)} lost games of engine 1; the judge's win rate stayed below {below:g} from move "
          + (f"{int(np.percentile(lost_from, 25))} / {int(np.median(lost_from))} / {int(np.percentile(lost_from, 75))} "
             f"(quartiles) in {len(lost_from)}" if lost_from else "- in none"))
    print(f"largest drop between two own moves: median {np.median(largest):.2f}; at least {BLUNDER:g} in "
          f"{sum(drop >= BLUNDER for drop in largest)} games" if largest else "no drops: games too short")
    for start, end, step in zip((0, *PHASES), (*PHASES, None), drops):
        span = f"moves {start + 1}-{end}" if end else f"moves {start + 1} on"
        print(f"{span:<14} mean drop a move {np.mean(step) if step else float('nan'):.3f} over {len(step)} moves")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench judge", description=__doc__.split("\n")[0])
    parser.add_argument("folders", type=Path, nargs="+", metavar="folder",
                        help="klent match folders of Go games; the games engine 1 lost are judged")
    parser.add_argument("--judge", required=True,
                        help="GTP command line of the judge, e.g. "
                             "'pachi -t =20000 threads=1,pondering=0,pass_all_alive'")
    parser.add_argument("--trace", action="store_true",
                        help="the judge's win rate along every lost game, not only at the resignations")
    parser.add_argument("--from", dest="first", type=int, default=4, metavar="PLY",
                        help="--trace: plies of the opening not judged (default 4, the balanced openings')")
    parser.add_argument("--lost-below", type=float, default=0.3,
                        help="--trace: the win rate below which a game counts as lost (default 0.3)")
    args = parser.parse_args(argv)
    if args.first < 0 or not 0 < args.lost_below < 1:
        parser.error("--from must be at least 0 and --lost-below within (0, 1)")
    try:
        games = [lost for folder in args.folders for lost in lost_games(folder, resigned=not args.trace)]
        with GtpProcess(args.judge) as judge:
            if args.trace:
                traces(games, judge, args.first, args.lost_below)
            else:
                resignations(games, judge)
    except (MatchFolderError, EngineError, ValueError) as error:  # ValueError: the judge's command line
        parser.error(str(error))
    return 0
