"""Tablebase endings held against Stockfish: `klent bench endings`.

The goal for the Syzygy tables: klent keeps the draw of a level KRvKR (it must not
lose) and converts the wins of KQvK, KRvK and KPvK to mate.  For each ending, ``--games``
games from as many random legal placements of its material (seeded: the same placements every
run), each one the tables hold as that result for klent's side (a win that the fifty-move rule
does not spoil), with no capture to play at once, klent's side White or Black and either side
to move.  klent plays through ``klent uci`` (one thread, ``SyzygyPath`` set to ``--syzygy``)
at ``go movetime``, Stockfish defends at a shorter ``go movetime``; our rules are the arbiter,
with the draws a player may claim (threefold repetition, fifty moves) ended at once, as lichess
ends them, and a cap of ``--max-plies`` (adjudicated a draw).  Prints per ending the games,
klent's draws kept or wins converted, the games that missed the goal, the plies to mate
and how the games ended.

The games are played here rather than by `klent match`, whose games from one opening
alternate the colours: here klent always takes the side whose result is tested.  Exits 1 when
a game missed its goal.

    klent bench endings --games 20
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.syzygy

from klent.engine.games.chess import ChessGame
from klent.engine.tablebase import DEFAULT_SYZYGY_DIR
from klent.matchplay.engine_process import UciProcess, find_program

# Ending: (klent's pieces, the defender's, the result klent must reach: "draw" or "mate").
ENDINGS = {
    "KRvKR": ("KR", "kr", "draw"),
    "KQvK": ("KQ", "k", "mate"),
    "KRvK": ("KR", "k", "mate"),
    "KPvK": ("KP", "k", "mate"),
}
MOVE_TIMEOUT = 30.0  # seconds past which an engine's move is an error


@dataclass(frozen=True)
class Start:
    """A start position and klent's colour in it (0 White, 1 Black, as `State.to_play`)."""

    fen: str
    klent: int


@dataclass(frozen=True)
class Played:
    """One finished game: klent's result (+1 mate, 0 draw, -1 mated), its plies, how it ended."""

    start: Start
    result: float
    plies: int
    termination: str


def start_positions(ending: str, count: int, tables: chess.syzygy.Tablebase, seed: int) -> list[Start]:
    """``count`` different random placements of ``ending``'s material that the tables hold as
    its result for klent's side, with no capture for the side to move (see the module)."""
    ours, theirs, goal = ENDINGS[ending]
    wanted = 0 if goal == "draw" else 2
    rng = random.Random(f"{seed}:{ending}")
    starts: list[Start] = []
    while len(starts) < count:
        board = chess.Board(None)
        for square, symbol in zip(rng.sample(chess.SQUARES, len(ours) + len(theirs)), ours + theirs):
            board.set_piece_at(square, chess.Piece.from_symbol(symbol))
        board.turn = rng.random() < 0.5
        klent = 0
        if rng.random() < 0.5:  # klent's side Black
            board, klent = board.mirror(), 1
        if not board.is_valid() or board.is_game_over() or any(map(board.is_capture, board.legal_moves)):
            continue
        wdl = tables.probe_wdl(board)
        start = Start(board.fen(), klent)
        if (wdl if board.turn == (klent == 0) else -wdl) == wanted and start not in starts:
            starts.append(start)
    return starts


def play(start: Start, klent: UciProcess, stockfish: UciProcess, klent_go: str, stockfish_go: str,
         max_plies: int) -> Played:
    """One game from ``start``, judged by our rules with draw claims and the cap."""
    game = ChessGame(max_moves=max_plies, claim_draws=True)
    state = game.from_fen(start.fen)
    moves: list[str] = []
    klent.new_game()
    stockfish.new_game()
    while not state.is_terminal:
        engine, go = (klent, klent_go) if state.to_play == start.klent else (stockfish, stockfish_go)
        position = f"position fen {start.fen}" + (" moves " + " ".join(moves) if moves else "")
        reply = engine.best_move(position, go, timeout=MOVE_TIMEOUT)
        state = state.play(game.text_to_action(state, reply))
        moves.append(reply)
    return Played(start, state.reward_for(start.klent), len(moves), str(state.termination))


def reached(ending: str, game: Played) -> bool:
    """Whether ``game`` reached ``ending``'s goal: the draw kept, or the mate given."""
    return game.result == (0.0 if ENDINGS[ending][2] == "draw" else 1.0)


def summary_row(ending: str, games: list[Played]) -> str:
    """The table's line for ``ending``: games, goals reached and missed, plies to mate, and
    how the games ended."""
    held = [game for game in games if reached(ending, game)]
    goal = ENDINGS[ending][2]
    plies = [game.plies for game in held] if goal == "mate" else []
    mate = f"{sum(plies) / len(plies):6.1f} {max(plies):4d}" if plies else f"{'-':>6} {'-':>4}"
    ended = ", ".join(f"{reason} {count}" for reason, count in Counter(g.termination for g in games).most_common())
    return f"{ending:6} {goal:5} {len(games):5d} {len(held):5d} {len(games) - len(held):6d}  {mate}  {ended}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench endings", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=20, help="games per ending (default 20)")
    parser.add_argument("--endings", nargs="+", choices=list(ENDINGS), default=list(ENDINGS),
                        help="the endings played (default: all)")
    parser.add_argument("--model", help="klent's model (default: `klent uci`'s, weights/chess.onnx)")
    parser.add_argument("--movetime", type=int, default=100, help="klent's milliseconds per move (default 100)")
    parser.add_argument("--stockfish-movetime", type=int, default=50,
                        help="Stockfish's milliseconds per move (default 50)")
    parser.add_argument("--stockfish", default="stockfish", help="the defending engine's command (default: stockfish)")
    parser.add_argument("--syzygy", type=Path, default=DEFAULT_SYZYGY_DIR,
                        help=f"the Syzygy tables klent plays with (default {DEFAULT_SYZYGY_DIR})")
    parser.add_argument("--max-plies", type=int, default=300, help="plies before a draw is adjudicated (default 300)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the start positions (default 0)")
    args = parser.parse_args(argv)
    if not any(args.syzygy.glob("*.rtbw")):
        parser.error(f"no Syzygy tables in {args.syzygy}; run `make setup` (scripts/syzygy-tables.sh)")
    if find_program(args.stockfish.split()[0]) is None:
        parser.error(f"no {args.stockfish!r}: install Stockfish (`make system-deps`)")
    with chess.syzygy.open_tablebase(str(args.syzygy)) as tables:
        starts = {ending: start_positions(ending, args.games, tables, args.seed) for ending in args.endings}
    klent_command = [sys.executable, "-m", "klent", "uci", *(["--model", args.model] if args.model else [])]
    klent_go, stockfish_go = f"go movetime {args.movetime}", f"go movetime {args.stockfish_movetime}"
    print(f"klent uci{f' --model {args.model}' if args.model else ''} {klent_go}, Threads 1, SyzygyPath {args.syzygy}; "
          f"{args.stockfish} {stockfish_go}; seed {args.seed}, cap {args.max_plies} plies")
    print(f"{'ending':6} {'goal':5} {'games':>5} {'held':>5} {'missed':>6}  {'plies to mate (mean max)'}  {'ended by'}")
    began = time.perf_counter()
    missed: list[Played] = []
    with UciProcess(klent_command) as klent, UciProcess(args.stockfish) as stockfish:
        klent.start({"Threads": "1", "SyzygyPath": str(args.syzygy)})
        stockfish.start({"Threads": "1"})
        for ending, positions in starts.items():
            games = [play(start, klent, stockfish, klent_go, stockfish_go, args.max_plies) for start in positions]
            print(summary_row(ending, games), flush=True)
            missed += [game for game in games if not reached(ending, game)]
    for game in missed:
        side = "White" if game.start.klent == 0 else "Black"
        print(f"missed: {game.start.fen} (klent {side}): {game.termination} after {game.plies} plies")
    print(f"{sum(map(len, starts.values()))} games in {time.perf_counter() - began:.0f} s")
    return 1 if missed else 0
