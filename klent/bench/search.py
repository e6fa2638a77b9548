"""Search speed next to raw network speed (`klent bench search`).

Prints, in one run and on the same model (best of ``--rounds`` interleaved rounds): (a) ONNX
Runtime positions/s at batch 1, 16, 64 and 256 on pre-encoded observations; (b) simulations/s of
one game's Gumbel search at n = 200; (c) simulations/s of 64 games searched together.  The
targets are b >= 50% of a at batch 16 and c >= 85% of a at batch 64: the search may
cost at most 15% on top of the network when it can batch.

``--compare A.onnx B.onnx`` measures two models of one game side by side in one run (float32
against int8): the same positions, rounds alternating between them, and B/A for
every figure.  ``--devices cpu cuda`` does the same for one model on two devices (ONNX
Runtime execution providers: the GPU against the CPU on one machine); the header line says
which providers each session really runs on, since a GPU provider that cannot start falls
back.  Without ``--model`` or ``--compare`` a randomly initialised 6 x 64 network for ``--game``
(default go9) is built and exported to a temporary file; that needs the training extra
(torch).  Usage:

    python -m klent.bench.search [--model PATH | --compare A B] [--games 64] [--simulations 200]
                                [--devices cpu cuda]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

import klent.engine.games
from klent.engine.games.base import Game, State
from klent.engine.network import DEVICE_CHOICES, OnnxEvaluator
from klent.engine.search import GumbelConfig, SearchLimits, search

RAW_BATCHES = (1, 16, 64, 256)
CONFIG = GumbelConfig(gumbel_scale=1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench search", description=__doc__.split("\n\n")[0])
    models = parser.add_mutually_exclusive_group()
    models.add_argument("--model", help="ONNX model (default: a random 6x64 net for --game)")
    models.add_argument(
        "--compare", nargs=2, metavar=("A", "B"), help="two models of one game side by side (e.g. float32 and int8)"
    )
    parser.add_argument("--game", default="go9", help="game of the random net (default go9)")
    parser.add_argument("--games", type=int, default=64, help="games searched together in (c)")
    parser.add_argument("--simulations", type=int, default=200, help="n per search (default 200)")
    parser.add_argument("--moves", type=int, default=5, help="single-game searches timed in (b)")
    parser.add_argument("--threads", type=int, default=None, help="ONNX Runtime intra-op threads")
    parser.add_argument(
        "--devices",
        nargs="+",
        choices=DEVICE_CHOICES,
        default=["auto"],
        help="execution providers (as the players' --device): one, or two to measure one model on both "
        "(default auto)",
    )
    parser.add_argument("--seconds", type=float, default=1.0, help="time per raw batch size and round")
    parser.add_argument("--rounds", type=int, default=3, help="measure everything this often, keep the best")
    args = parser.parse_args(argv)
    if min(args.games, args.simulations, args.moves, args.rounds) < 1:
        parser.error("--games, --simulations, --moves and --rounds must be >= 1")
    if len(args.devices) > 2 or (len(args.devices) == 2 and args.compare):
        parser.error("--devices takes one name, or two for one model (not with --compare)")

    with tempfile.TemporaryDirectory() as folder:
        paths = args.compare or [args.model] * len(args.devices)
        if paths[0] is None:
            paths = [os.path.join(folder, f"random-{args.game}.onnx")] * len(args.devices)
            try:
                _export_random_net(args.game, paths[0])
            except ImportError:
                print("error: building a random network needs torch (the train extra); pass --model", file=sys.stderr)
                return 2
        try:
            devices = args.devices * (len(paths) // len(args.devices))
            evaluators = [
                OnnxEvaluator(path, device=device, threads=args.threads) for path, device in zip(paths, devices)
            ]
        except (OSError, ValueError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        game = evaluators[0].game
        if any(evaluator.game.name != game.name for evaluator in evaluators):
            print(f"error: {' and '.join(paths)} are models of different games", file=sys.stderr)
            return 2
        positions = _random_positions(game, max(args.games, args.moves, max(RAW_BATCHES)), np.random.default_rng(0))
        for name, path, evaluator in zip("AB", paths, evaluators):
            print(f"{name}: model {path} ({_describe(evaluator)}, {game.name}) on {', '.join(evaluator.providers)}")
            # Warm-up: (b) and (c) once, untimed.  A GPU provider meets each new batch shape
            # once at a cost, and a search's waves come in many sizes.
            search(positions[0], evaluator, SearchLimits(simulations=args.simulations), config=CONFIG)
            search(positions[: args.games], evaluator, SearchLimits(simulations=args.simulations), config=CONFIG)
        # Best of several rounds: other load on the machine only ever slows a round down.  Within
        # a round (a), (b) and (c) are interleaved, and with two models each round measures both,
        # in the order A B, then B A, so that both see the same conditions.
        best = [dict.fromkeys(_labels(args), 0.0) for _ in evaluators]
        for round_number in range(args.rounds):
            order = list(range(len(evaluators)))
            for i in order if round_number % 2 == 0 else order[::-1]:
                rates = _measure(evaluators[i], positions, args, np.random.default_rng(round_number))
                best[i] = {label: max(best[i][label], rate) for label, rate in rates.items()}

    _report(args, best)
    return 0


def _labels(args: argparse.Namespace) -> list[str]:
    """The measurements' labels, in the order `_measure` returns them."""
    return [
        *(f"(a) ONNX Runtime, batch {batch}" for batch in RAW_BATCHES),
        f"(b) search, 1 game, n = {args.simulations}",
        f"(c) search, {args.games} games, n = {args.simulations}",
    ]


def _measure(
    evaluator: OnnxEvaluator, positions: list[State], args: argparse.Namespace, rng: np.random.Generator
) -> dict[str, float]:
    """One round of every measurement on ``evaluator``: positions/s for (a), simulations/s
    for (b) and (c), keyed by `_labels`."""
    limits = SearchLimits(simulations=args.simulations)
    raw = [_raw_speed(evaluator, positions[:batch], args.seconds) for batch in RAW_BATCHES]
    single = _timed(lambda: [search(p, evaluator, limits, config=CONFIG, rng=rng) for p in positions[: args.moves]])
    batched = _timed(lambda: search(positions[: args.games], evaluator, limits, config=CONFIG, rng=rng))
    rates = [*raw, args.moves * args.simulations / single, args.games * args.simulations / batched]
    return dict(zip(_labels(args), rates))


def _report(args: argparse.Namespace, best: list[dict[str, float]]) -> None:
    """The table: one column per model, and B/A when there are two; then (b) and (c) as
    shares of (a), against the targets."""
    names = "AB"[: len(best)]
    print()
    header = "".join(f"{name:>10}" for name in names) + ("       B/A" if len(best) == 2 else "")
    print(f"{'':<34}{header}")
    for label in _labels(args):
        unit = "positions/s" if label.startswith("(a)") else "simulations/s"
        ratio = f"{best[1][label] / best[0][label]:>9.2f}x" if len(best) == 2 else ""
        print(f"{label:<34}{''.join(f'{rates[label]:>10.0f}' for rates in best)}{ratio}  {unit}")
    labels = _labels(args)
    a16, a64 = labels[RAW_BATCHES.index(16)], labels[RAW_BATCHES.index(64)]
    b, c = labels[len(RAW_BATCHES) :]  # one game, many games
    for name, rates in zip(names, best):
        print(
            f"{name}: (b) = {rates[b] / rates[a16]:.0%} of (a) at batch 16 (target >= 50%), "
            f"(c) = {rates[c] / rates[a64]:.0%} of (a) at batch 64 (target >= 85%)"
        )


def _describe(evaluator: OnnxEvaluator) -> str:
    """The model's architecture and, for a quantized one, its scheme."""
    scheme = evaluator.info.quantization.get("scheme")
    return evaluator.info.arch if scheme is None else f"{evaluator.info.arch}, {scheme}"


def _export_random_net(game_name: str, path: str) -> None:
    """A freshly initialised 6 x 64 KLENT network (policy + action values) as ONNX."""
    import torch

    from klent.training.export import export_onnx
    from klent.training.nets import NetConfig, build_net

    torch.manual_seed(0)
    game = klent.engine.games.get(game_name)
    export_onnx(build_net(game, NetConfig(blocks=6, channels=64)), game, path, {"algorithm": "untrained"})


def _random_positions(game: Game, count: int, rng: np.random.Generator) -> list[State]:
    """Mid-game positions: 10 to 40 random legal moves from the start (never terminal)."""
    positions: list[State] = []
    while len(positions) < count:
        state = game.initial_state()
        for _ in range(int(rng.integers(10, 41))):
            following = state.play(int(rng.choice(state.legal_actions())))
            if following.is_terminal:
                break
            state = following
        positions.append(state)
    return positions


def _raw_speed(evaluator: OnnxEvaluator, states: list[State], seconds: float) -> float:
    """Positions/s of `OnnxEvaluator.evaluate_encoded` alone, on one batch of ``states``."""
    obs = evaluator.game.encode_batch(states)
    masks = np.stack([s.legal_mask() for s in states])
    evaluator.evaluate_encoded(obs, masks)  # warm-up
    calls = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        evaluator.evaluate_encoded(obs, masks)
        calls += 1
    return calls * len(states) / (time.perf_counter() - start)


def _timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.exit(main())
