"""A Go match's resignations put to a judge: would a stronger engine have resigned there too?

klent resigns after several moves valued as lost (`klent.engine.resign`).  A resignation in a
position that could still be saved costs a game outright, and a match's record cannot tell that
apart from a lost game.  This benchmark sets a judge (any GTP engine; Pachi at many playouts is
the natural one, since it resigns by its own search, below a win rate of 0.2) up at every
position where engine 1 of the given `klent match` folders resigned, and asks it for engine 1's
move there.  A judge that resigns as well agrees; one that plays on disagrees, and a judge that
answers ``pachi-result`` says with what win rate:

    klent bench resignations runs/strength/p9base-200-pachi1000 --judge \
        ".venv/bin/pachi -t =20000 threads=1,pondering=0,pass_all_alive"

Prints one line a resignation (the folder, the game, engine 1's colour, the moves played, the
judge's move and win rate) and the count of resignations the judge played on.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from klent.engine.games.base import GameFormatError
from klent.engine.games.sgf import read_sgf
from klent.matchplay.engine_process import EngineError, GtpFailure, GtpProcess
from klent.matchplay.records import MatchFolderError, read_results

JUDGE_TIMEOUT = 600.0  # seconds for the judge's move: a slow judge is the point


@dataclass(frozen=True)
class Verdict:
    """The judge's answer at one of engine 1's resignations."""

    game: int
    colour: str  # engine 1's, "b" or "w"
    moves: int  # moves played before the resignation
    move: str  # the judge's move for engine 1, "resign" if it resigned too
    win_rate: float | None  # the judge's win rate for engine 1 (Pachi's pachi-result), if it gave one

    @property
    def played_on(self) -> bool:
        return self.move.lower() != "resign"


@dataclass(frozen=True)
class Resignation:
    """A game engine 1 lost by resigning: where it stood when it did."""

    game: int
    moves: list[str]  # GTP vertices, from the empty board
    colour: str  # engine 1's, to move
    size: int
    komi: float


def resignations(folder: Path) -> list[Resignation]:
    """The games of ``folder`` engine 1 lost by resigning, read from their SGF records."""
    found = []
    for result in read_results(folder):
        if result.winner != 1 or result.reason != "resignation":
            continue
        path = folder / result.record
        try:
            record = read_sgf(path.read_bytes())
        except (OSError, GameFormatError) as error:
            raise MatchFolderError(f"{path}: {error}") from None
        if record.states[0].board().any():
            raise MatchFolderError(f"{path}: a game from a set-up position; only games from the empty board are judged")
        colour = "bw"[len(record.moves) % 2]
        if colour != "bw"[result.first]:
            raise MatchFolderError(f"{path}: engine 1 resigned, but the record leaves the other side to move")
        found.append(Resignation(result.game, [record.game.vertex(action) for action in record.moves], colour,
                                 record.game.size, record.game.komi))
    return found


def judge_position(judge: GtpProcess, resignation: Resignation) -> tuple[str, float | None]:
    """The judge's move for the resigning side, and its win rate where it reports one."""
    for command in (f"boardsize {resignation.size}", "clear_board", f"komi {resignation.komi:g}"):
        judge.send(command)
    for number, vertex in enumerate(resignation.moves):
        judge.send(f"play {'bw'[number % 2]} {vertex}")
    move = judge.send(f"genmove {resignation.colour}", timeout=JUDGE_TIMEOUT)
    if move.lower() == "resign" or judge.send("known_command pachi-result") != "true":
        return move, None
    fields = judge.send("pachi-result").split()  # colour move playouts winrate dynkomi
    try:
        return move, float(fields[3])
    except (IndexError, ValueError):
        return move, None


def verdicts(games: Sequence[tuple[Path, Resignation]], judge_command: str) -> list[Verdict]:
    """The judge's answer at each (match folder, resignation), printed as it comes."""
    found = []
    with GtpProcess(judge_command) as judge:
        for folder, resignation in games:
            try:
                move, rate = judge_position(judge, resignation)
            except GtpFailure as error:
                raise MatchFolderError(f"{folder} game {resignation.game}: the judge refused "
                                       f"the game's moves ({error})") from None
            verdict = Verdict(resignation.game, resignation.colour, len(resignation.moves), move, rate)
            found.append(verdict)
            print(f"{folder.name:<32} {verdict.game:>4} {verdict.colour} {verdict.moves:>5} {move:>7} "
                  f"{'' if rate is None else f'{rate:.2f}'}", flush=True)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench resignations", description=__doc__.split("\n")[0])
    parser.add_argument("folders", type=Path, nargs="+", metavar="folder",
                        help="klent match folders of Go games; engine 1's resignations are judged")
    parser.add_argument("--judge", required=True,
                        help="GTP command line of the judge, e.g. "
                             "'pachi -t =20000 threads=1,pondering=0,pass_all_alive'")
    args = parser.parse_args(argv)
    try:
        games = [(folder, resignation) for folder in args.folders for resignation in resignations(folder)]
        print(f"{'folder':<32} {'game':>4} c {'moves':>5} {'judge':>7} win rate")
        found = verdicts(games, args.judge)
    except (MatchFolderError, EngineError, ValueError) as error:  # ValueError: the judge's command line
        parser.error(str(error))
    played_on = [verdict for verdict in found if verdict.played_on]
    rates = sorted(verdict.win_rate for verdict in played_on if verdict.win_rate is not None)
    print(f"{len(found)} resignations of engine 1; the judge resigned too in {len(found) - len(played_on)}, "
          f"played on in {len(played_on)}" + (f" (win rates {rates[0]:.2f} to {rates[-1]:.2f})" if rates else ""))
    return 0
