"""Simulated moves per second of TD search on one core, beside the bare rules in the same run.

The goal: the shape features and the TD(lambda) update cost at most 2x the rules
themselves, "side by side with `klent bench rules` (play + legal mask)".  Four measurements
from the same start position, one after another:

- ``rules, legal mask``: a compiled random playout with Go's own kernels as the goal states
  them: the legal mask of every position (legal_points), the eye test of every legal point,
  a uniform choice among the rest and play_stone, i.e. what a simulated move costs with no
  features at all;
- ``rules, default policy``: the same playout by `td_kernels.random_move`, the way TD search's
  default policy draws its moves now (empty points in random order until one is legal and no
  own eye; the same distribution without the mask), so the features' own share shows too;
- ``td``: `TdSearch.choose` from the empty board (features, afterstate values for the first
  T moves, NTD2(lambda) after every move; one search, so its weights keep learning);
- ``GoState API``: `klent bench rules`' legal_mask + play through GoState (Python objects,
  wall clock), for the scale of the numbers the other benchmarks print.

Times are this thread's CPU time (other processes' load on the machine is not counted, though
they still share its caches), and the three compiled measurements alternate for ``--rounds``
rounds, each keeping its fastest, so a burst of load does not land on one side only; the ratios
printed are td / rules in time per move.

    python -m klent.bench.td_speed [--size 9] [--seconds 1] [--rounds 5] [--greedy-moves 6]
                                  [--shapes 1 2 3] [--permanent weights.npz]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit

from klent.bench.rules import measure
from klent.engine.games import go_kernels as gk
from klent.engine.games.go import GoGame
from klent.engine.search import td_kernels as tk
from klent.engine.search.td import ShapeWeights, TdConfig, TdSearch, warm_up


@njit(cache=True)
def random_playouts(
    board0: np.ndarray, color0: int, max_moves: int, nbr: np.ndarray, zob: np.ndarray, diag: np.ndarray,
    games: int, rng: np.ndarray, lazy: bool,
) -> int:
    """Play ``games`` random games from ``board0`` with the rules kernels; returns the moves
    played.  ``lazy``: each move by `td_kernels.random_move` (TD search's default policy),
    else from the full legal mask (`td_kernels.candidate_moves`: legal_points and the eye test
    of every legal point, then play_stone)."""
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
            total += 1
            if lazy:
                action, h = tk.random_move(hist, seen[:known], h, color, nbr, zob, diag, new_hist,
                                           new_seen[: known + 1], moves, rng)
            else:
                count = tk.candidate_moves(hist[0], color, h, seen[:known], nbr, zob, diag, mask, moves)
                action = n
                if count > 0:
                    action = moves[tk._below(rng, count)]
                    _, h = gk.play_stone(hist, seen[:known], h, action, color, nbr, zob, new_hist,
                                         new_seen[: known + 1])
            if action == n:
                passes += 1
                if passes >= 2:
                    break
            else:
                hist, new_hist = new_hist, hist
                seen, new_seen = new_seen, seen
                known += 1
                passes = 0
            color = -color
    return total


def rules_rate(game: GoGame, seconds: float, lazy: bool) -> float:
    """Moves per second of compiled random playouts from the empty board."""
    diag = gk.diagonal_table(game.size)
    board = np.zeros(game.size**2, dtype=np.int8)
    rng = tk.seed_state(1)
    moves, start = 0, time.thread_time()
    while time.thread_time() - start < seconds:
        moves += random_playouts(board, 1, game.max_moves, game._nbr, game._zob, diag, 10, rng, lazy)
    return moves / (time.thread_time() - start)


def td_rate(search: TdSearch, seconds: float) -> tuple[float, float]:
    """(moves per second, simulations per second) of TD search from the empty board."""
    state = search.game.initial_state()
    start = time.thread_time()
    result = search.choose(state, seconds=seconds)
    elapsed = time.thread_time() - start
    return result.moves / elapsed, result.simulations / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m klent.bench.td_speed", description=__doc__.split("\n")[0])
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
    rules_rate(game, 0.1, lazy=False)  # compile / load the playout kernel
    mask, lazy, td, sims = 0.0, 0.0, 0.0, 0.0
    for _ in range(args.rounds):
        mask = max(mask, rules_rate(game, args.seconds, lazy=False))
        lazy = max(lazy, rules_rate(game, args.seconds, lazy=True))
        moves, simulations = td_rate(search, args.seconds)
        if moves > td:
            td, sims = moves, simulations
    api = measure(game.name, 5000) if args.size in (9, 13, 19) else None
    mode = "Dyna-2" if permanent else "TD search"
    print(f"{game.name}, {mode}, shapes {config.shapes}, T = {config.greedy_moves}, one core")
    print(f"rules, legal mask          {mask:>10.0f} moves/s  {1e6 / mask:6.2f} us/move")
    print(f"rules, default policy      {lazy:>10.0f} moves/s  {1e6 / lazy:6.2f} us/move")
    print(f"td search                  {td:>10.0f} moves/s  {1e6 / td:6.2f} us/move  ({sims:.0f} simulations/s)")
    if api is not None:
        per_move = api["legal_mask"] + api["play"]
        print(f"rules (GoState API, wall)  {1e6 / per_move:>10.0f} moves/s  {per_move:6.2f} us/move")
    print(f"ratio td / legal mask      {mask / td:>10.2f}x   (goal: <= 2x)")
    print(f"ratio td / default policy  {lazy / td:>10.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
