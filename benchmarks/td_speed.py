"""Simulated moves per second of TD search on one core, beside the bare rules in the same run.

Issue #19's goal: the shape features and the TD(lambda) update cost at most 2x the rules
themselves.  Three measurements from the same start position, one after another:

- ``rules``: a compiled random playout with Go's own kernels (legal_points + play_stone per
  move, the same eye rule and random choice as TD search's default policy), i.e. what a
  simulated move costs with no features at all;
- ``td``: `TdSearch.choose` from the empty board (features, afterstate values for the first
  T moves, NTD2(lambda) after every move; one search, so its weights keep learning);
- ``GoState API``: `klent bench rules`' legal_mask + play through GoState (Python objects,
  wall clock), for the scale of the numbers the other benchmarks print.

Times are this thread's CPU time (other processes' load on the machine is not counted, though
they still share its caches), and the two compiled measurements alternate for ``--rounds``
rounds, each keeping its fastest, so a burst of load does not land on one side only; the ratio
printed is td / rules in time per move.

    python -m benchmarks.td_speed [--size 9] [--seconds 1] [--rounds 5] [--greedy-moves 6]
                                  [--shapes 1 2 3] [--permanent weights.npz]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit

from benchmarks.rules import measure
from engine.games import go_kernels as gk
from engine.games.go import GoGame
from engine.search import td_kernels as tk
from engine.search.td import ShapeWeights, TdConfig, TdSearch, warm_up


@njit(cache=True)
def random_playouts(
    board0: np.ndarray, color0: int, max_moves: int, nbr: np.ndarray, zob: np.ndarray, diag: np.ndarray,
    games: int, rng: np.ndarray,
) -> int:
    """Play ``games`` random games from ``board0`` with the rules kernels; returns the moves played."""
    n = board0.shape[0]
    total = 0
    mask = np.empty(n + 1, np.bool_)
    moves = np.empty(n, np.int32)
    for _ in range(games):
        hist = np.empty((1, n), np.int8)
        hist[0] = board0
        new_hist = np.empty((1, n), np.int8)
        seen = np.empty(max_moves + 2, np.int64)
        new_seen = np.empty_like(seen)
        h = gk.board_hash(board0, zob)
        seen[0] = h
        known = 1
        color = color0
        passes = 0
        for _move in range(max_moves):
            gk.legal_points(hist[0], color, h, seen[:known], nbr, zob, mask)
            count = 0
            for p in range(n):
                if mask[p] and not tk.own_eye(hist[0], p, color, nbr, diag):
                    moves[count] = p
                    count += 1
            total += 1
            if count == 0:
                passes += 1
                if passes >= 2:
                    break
            else:
                action = moves[tk._below(rng, count)]
                _, h = gk.play_stone(hist, seen[:known], h, action, color, nbr, zob, new_hist, new_seen[: known + 1])
                hist, new_hist = new_hist, hist
                seen, new_seen = new_seen, seen
                known += 1
                passes = 0
            color = -color
    return total


def rules_rate(game: GoGame, seconds: float) -> float:
    """Moves per second of compiled random playouts from the empty board."""
    diag = tk.diagonal_table(game.size)
    board = np.zeros(game.size**2, dtype=np.int8)
    rng = tk.seed_state(1)
    moves, start = 0, time.thread_time()
    while time.thread_time() - start < seconds:
        moves += random_playouts(board, 1, game.max_moves, game._nbr, game._zob, diag, 10, rng)
    return moves / (time.thread_time() - start)


def td_rate(search: TdSearch, seconds: float) -> tuple[float, float]:
    """(moves per second, simulations per second) of TD search from the empty board."""
    state = search.game.initial_state()
    start = time.thread_time()
    result = search.choose(state, seconds=seconds)
    elapsed = time.thread_time() - start
    return result.moves / elapsed, result.simulations / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.td_speed", description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=9)
    parser.add_argument("--seconds", type=float, default=1.0, help="per measurement and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--greedy-moves", type=int, default=TdConfig.greedy_moves, help="T")
    parser.add_argument("--shapes", type=int, nargs="+", default=list(TdConfig.shapes))
    parser.add_argument("--permanent", help="a ShapeWeights file: measure Dyna-2 instead")
    args = parser.parse_args(argv)
    game = GoGame(args.size)
    warm_up()
    config = TdConfig(shapes=tuple(args.shapes), greedy_moves=args.greedy_moves, seed=0)
    permanent = ShapeWeights.load(args.permanent) if args.permanent else None
    search = TdSearch(game, config, permanent)
    rules_rate(game, 0.1)  # compile / load the playout kernel
    rules, td, sims = 0.0, 0.0, 0.0
    for _ in range(args.rounds):
        rules = max(rules, rules_rate(game, args.seconds))
        moves, simulations = td_rate(search, args.seconds)
        if moves > td:
            td, sims = moves, simulations
    api = measure(game.name, 5000) if args.size in (9, 13, 19) else None
    mode = "Dyna-2" if permanent else "TD search"
    print(f"{game.name}, {mode}, shapes {config.shapes}, T = {config.greedy_moves}, one core")
    print(f"rules (compiled playout)   {rules:>10.0f} moves/s  {1e6 / rules:6.2f} us/move")
    print(f"td search                  {td:>10.0f} moves/s  {1e6 / td:6.2f} us/move  ({sims:.0f} simulations/s)")
    if api is not None:
        per_move = api["legal_mask"] + api["play"]
        print(f"rules (GoState API, wall)  {1e6 / per_move:>10.0f} moves/s  {per_move:6.2f} us/move")
    print(f"ratio td / rules           {rules / td:>10.2f}x   (goal: <= 2x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
