"""Cost of the rules layer along random playouts: play + legal_mask + encode per position.

The rules must never be what search or self-play waits on: a 6x64 network costs about 200 us
per position on 9x9 with ONNX Runtime here, so the targets are 25 us (9x9 Go, Othello, 11x11
Hex, Gardner chess, Animal Shogi), 100 us (19x19 Go) and 60 us (chess) per position on one
core (its CPU time, so the figure holds on a loaded machine).

    klent bench rules [--positions 20000] [--games go9 go19 chess othello hex11 gardner animal_shogi]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import klent.engine.games as games

TARGETS_US = {
    "go9": 25.0,
    "go13": 50.0,
    "go19": 100.0,
    "chess": 60.0,
    "countup": 25.0,
    "othello": 25.0,
    "hex11": 25.0,
    "gardner": 25.0,
    "animal_shogi": 25.0,
}


def measure(game_name: str, positions: int, seed: int = 0) -> dict[str, float]:
    """Mean microseconds per position of legal_mask, encode and play over random playouts.

    The playouts are played first, untimed; then each operation runs over all their positions
    in one loop timed by the thread's CPU clock.  So the random move choice is not counted, no
    clock call sits inside the loop (a thread-CPU reading costs microseconds itself), and other
    processes on the machine do not inflate the figure as they inflate wall time."""
    game = games.get(game_name)
    rng = np.random.default_rng(seed)
    states, actions = [], []
    state = game.initial_state()
    for _ in range(positions):
        if state.is_terminal:
            state = game.initial_state()
        legal = np.flatnonzero(state.legal_mask())
        action = int(legal[rng.integers(len(legal))])
        states.append(state)
        actions.append(action)
        state = state.play(action)
    clock = time.thread_time_ns
    t0 = clock()
    for state in states:
        state.legal_mask()
    t1 = clock()
    for state in states:
        game.encode(state)
    t2 = clock()
    for state, action in zip(states, actions):
        state.play(action)
    t3 = clock()
    spent = {"legal_mask": t1 - t0, "encode": t2 - t1, "play": t3 - t2}
    result = {name: ns / positions / 1000.0 for name, ns in spent.items()}
    result["total"] = sum(result.values())
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench rules", description=__doc__.split("\n")[0])
    parser.add_argument("--positions", type=int, default=20000, help="positions per game")
    parser.add_argument(
        "--games", nargs="+", default=["go9", "go19", "chess", "othello", "hex11", "gardner", "animal_shogi"]
    )
    args = parser.parse_args(argv)
    print(f"{'game':<12} {'legal_mask':>10} {'encode':>8} {'play':>8} {'total':>8} {'target':>7}  (us/position)")
    failed = False
    for name in args.games:
        measure(name, min(2000, args.positions))  # warm-up: numba compilation, caches
        r = measure(name, args.positions, seed=1)
        target = TARGETS_US.get(name, float("nan"))
        verdict = "ok" if r["total"] <= target else "SLOW"
        failed |= verdict == "SLOW"
        print(
            f"{name:<12} {r['legal_mask']:>10.1f} {r['encode']:>8.1f} {r['play']:>8.1f} "
            f"{r['total']:>8.1f} {target:>7.0f}  {verdict}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
