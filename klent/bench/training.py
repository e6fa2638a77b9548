"""KLENT training throughput against the bound set by the network alone.

KLENT makes one network call per sample in self-play (no search), then one training step per
sample, so on a given machine its throughput cannot beat

    bound = 1 / (forward time per state at the self-play batch size
                 + training time per sample at the training batch size)

simulator evaluations per second.  The rest -- the game rules, encoding, the targets, the
per-iteration checkpoint and ONNX export -- is overhead; the target is >= 60% of the bound.
The full trainer (`klent.training.trainer.Trainer`) is timed over a few iterations after a warm-up
one (the defaults are those of klent/training/configs/go9_cpu.toml), once with self-play through ONNX
Runtime (latest.onnx exported every iteration) and once through torch (an export every
``--export-every`` iterations, amortised), so the measurement also says which is faster here.

    klent bench training [--game go9] [--blocks 6 --channels 64] [--games 64 --steps 64]
                         [--precision float32|bfloat16]

The training step per sample is also timed in both precisions of ``[optim] precision``, side by
side, whatever ``--precision`` the trainer is timed with.

A distillation run (`--algo distill`) plays no games: its bound is the training step alone, and
its overhead is reading the labelled positions into samples (`klent.training.distill.to_samples`),
the checkpoint and the amortised export.  It is timed with a run's own config and a labelled
set (its loading, once per run, is reported apart):

    klent bench training --config klent/training/configs/chess_distill_cpu.toml --data data/chess-cp
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from collections.abc import Callable

import numpy as np
import torch

import klent.engine.games as games
from klent.engine.games.base import Game
from klent.engine.network import OnnxEvaluator, default_threads
from klent.training.config import PRECISIONS, EvalConfig, OptimConfig, TrainConfig, load_config
from klent.training.distill import distill_loss
from klent.training.export import export_onnx
from klent.training.fitting import Loss, fit
from klent.training.klent_rl import batch_loss as klent_batch_loss
from klent.training.nets import NetConfig, build_net
from klent.training.selfplay import Samples, SelfPlayConfig
from klent.training.torch_evaluator import TorchEvaluator
from klent.training.trainer import Trainer


def network_bound(config: TrainConfig, repeats: int, threads: int) -> dict[str, float]:
    """Seconds per state of a forward pass (ONNX Runtime and torch) at the self-play batch
    size, and of a training step at the training batch size, on random positions."""
    torch.set_num_threads(threads)
    game = games.get(config.game, **config.game_options)
    model = build_net(game, config.net_config())
    rng = np.random.default_rng(0)
    batch = config.selfplay.games
    obs = rng.integers(0, 2, size=(batch, *game.observation_shape)).astype(np.float32)
    masks = np.ones((batch, game.num_actions), dtype=bool)
    result: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        export_onnx(model, game, f"{folder}/net.onnx")
        evaluators = {
            "onnx": OnnxEvaluator(f"{folder}/net.onnx", game, threads=threads),
            "torch": TorchEvaluator(model, game, "cpu"),
        }
        for name, evaluator in evaluators.items():
            evaluator.evaluate_encoded(obs, masks)  # warm-up
            start = time.perf_counter()
            for _ in range(repeats):
                evaluator.evaluate_encoded(obs, masks)
            result[f"forward_{name}"] = (time.perf_counter() - start) / (repeats * batch)
    result.update(train_seconds(config, model, random_samples(game, config.optim.batch_size * repeats, rng),
                                klent_batch_loss))
    return result


def train_seconds(
    config: TrainConfig, model: torch.nn.Module, samples: Samples, loss: Callable[..., Loss]
) -> dict[str, float]:
    """Seconds per sample of a training step over ``samples`` in each precision (side by side:
    a ratio in one run), and ``train``: in the config's own."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    batch_size = config.optim.batch_size
    result = {}
    for precision, dtype in PRECISIONS.items():
        fit(model, optimizer, samples, loss, batch_size, 1, torch.device("cpu"), autocast=dtype)  # warm-up
        start = time.perf_counter()
        fit(model, optimizer, samples, loss, batch_size, 1, torch.device("cpu"), autocast=dtype)
        result[f"train_{precision}"] = (time.perf_counter() - start) / len(samples)
    result["train"] = result[f"train_{config.optim.precision}"]
    return result


def random_samples(game: Game, count: int, rng: np.random.Generator) -> Samples:
    """``count`` training samples of random 0/1 planes, all moves legal, random policy targets
    and returns: what a fitting step costs does not depend on the data."""
    return Samples(
        obs=rng.integers(0, 2, size=(count, *game.observation_shape)).astype(np.float32),
        masks=np.ones((count, game.num_actions), dtype=bool),
        actions=rng.integers(0, game.num_actions, count),
        policy=rng.dirichlet(np.ones(game.num_actions), count).astype(np.float32),
        returns=rng.uniform(-1, 1, count).astype(np.float32),
        value_weight=np.ones(count, dtype=np.float32),
        simulator_evaluations=0,
    )


def distill_throughput(config: TrainConfig, iterations: int, threads: int) -> dict[str, float]:
    """Samples per second of a distillation run's iterations after a warm-up one (collecting
    the positions' samples, fitting, checkpoint; the export of one iteration in
    ``export_every`` amortised), the bound of the training step alone on samples shaped like
    the run's (every move given a value), and where the run's time goes."""
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        # no export inside the timed iterations: one is timed apart and amortised below
        timed = config.replace(export_every=1_000_000)
        trainer = Trainer(timed, folder, device="cpu", threads=threads, progress=False)
        load_seconds = time.perf_counter() - start
        trainer.step()
        records = []
        start = time.perf_counter()
        for _ in range(iterations):
            records.append(trainer.step())
        seconds = time.perf_counter() - start
        trainer.close()
        start = time.perf_counter()
        export_onnx(trainer.model, trainer.game, f"{folder}/export.onnx")
        export_seconds = time.perf_counter() - start
        positions = sum(len(s) for s in trainer.algorithm.sets)  # type: ignore[attr-defined]
        rng = np.random.default_rng(0)
        samples = random_samples(trainer.game, config.distill.positions, rng)  # as many as an iteration fits
        samples = dataclasses.replace(samples, q_targets=rng.uniform(-1, 1, samples.policy.shape).astype(np.float32))
        bound = train_seconds(config, trainer.model, samples, distill_loss)
    seconds_per_iteration = seconds / iterations + export_seconds / config.export_every
    return {
        **bound,
        "samples_per_second": config.distill.positions / seconds_per_iteration,
        "seconds_per_iteration": seconds_per_iteration,
        "collect_seconds": sum(r["selfplay_seconds"] for r in records) / iterations,
        "fit_seconds": sum(r["train_seconds"] for r in records) / iterations,
        "export_seconds": export_seconds,
        "load_seconds": load_seconds,
        "positions": positions,
    }


def trainer_throughput(config: TrainConfig, iterations: int, threads: int) -> dict[str, float]:
    """Simulator evaluations per second of the trainer's iterations (self-play, fitting,
    checkpoint, and with ONNX self-play the export of latest.onnx) after a warm-up one, plus
    the seconds of one export (which torch self-play pays every ``export_every`` iterations)."""
    with tempfile.TemporaryDirectory() as folder:
        trainer = Trainer(config, folder, device="cpu", threads=threads)
        trainer.step()
        evaluations = trainer.simulator_evaluations
        start = time.perf_counter()
        for _ in range(iterations):
            trainer.step()
        seconds = time.perf_counter() - start
        start = time.perf_counter()
        export_onnx(trainer.model, trainer.game, f"{folder}/export.onnx")
        export_seconds = time.perf_counter() - start
    return {
        "evaluations": (trainer.simulator_evaluations - evaluations) / iterations,
        "seconds_per_iteration": seconds / iterations,
        "export_seconds": export_seconds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="klent bench training", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--game", default="go9")
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--games", type=int, default=64, help="parallel self-play games")
    parser.add_argument("--steps", type=int, default=64, help="transitions per game and iteration")
    parser.add_argument("--export-every", type=int, default=10,
                        help="iterations between exports with torch self-play")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--precision", choices=list(PRECISIONS), default="float32",
                        help="[optim] precision of the timed trainer")
    parser.add_argument("--iterations", type=int, default=3, help="timed trainer iterations")
    parser.add_argument("--threads", type=int, default=default_threads())
    parser.add_argument("--evaluators", nargs="+", default=["onnx", "torch"],
                        choices=["onnx", "torch"])
    parser.add_argument("--config", help="a distillation run's config (klent/training/configs/*_distill_*.toml) to "
                        "time instead of KLENT self-play")
    parser.add_argument("--data", help="with --config: the labelled set ([distill] data)")
    args = parser.parse_args(argv)
    if args.iterations < 1:
        parser.error("--iterations must be at least 1")
    if args.config:
        try:
            config = load_config(args.config)
            if args.data:
                config = config.replace(distill=dataclasses.replace(config.distill, data=args.data))
            config = config.replace(eval=EvalConfig(every=0), keep_every=0)
        except (OSError, ValueError) as error:
            parser.error(str(error))
        if config.algo != "distill":
            parser.error(f"{args.config} is a {config.algo} run: --config times distillation runs "
                         "(KLENT self-play is timed from the flags)")
        return report_distill(config, args.iterations, args.threads, parser)
    base = TrainConfig(
        game=args.game,
        blocks=args.blocks,
        channels=args.channels,
        export_every=1_000_000,  # torch self-play: export once, at the end of the run
        selfplay=SelfPlayConfig(games=args.games, steps=args.steps, evaluator="torch"),
        optim=OptimConfig(batch_size=args.batch_size, precision=args.precision),
        eval=EvalConfig(every=0),
    )
    print(f"{args.game}, {NetConfig(args.blocks, args.channels).arch}, {args.games} games x "
          f"{args.steps} steps per iteration, batch {args.batch_size}, {args.threads} threads, "
          f"fitting in {args.precision}")
    bound = network_bound(base, repeats=10, threads=args.threads)
    best_forward = min(bound["forward_onnx"], bound["forward_torch"])
    limit = 1.0 / (best_forward + bound["train"])
    print(f"  forward per state: onnx {bound['forward_onnx'] * 1e6:.0f} us, "
          f"torch {bound['forward_torch'] * 1e6:.0f} us; train step per sample "
          f"{bound['train_float32'] * 1e6:.0f} us in float32, {bound['train_bfloat16'] * 1e6:.0f} us "
          f"in bfloat16 ({bound['train_float32'] / bound['train_bfloat16']:.2f}x)")
    print(f"  network bound: {limit:.0f} simulator evaluations/s")
    ok = True
    for name in args.evaluators:
        config = dataclasses.replace(
            base, selfplay=dataclasses.replace(base.selfplay, evaluator=name)
        )
        measured = trainer_throughput(config, args.iterations, args.threads)
        seconds = measured["seconds_per_iteration"]
        if name == "torch":  # latest.onnx every export_every iterations, as go9_cpu.toml does
            seconds += measured["export_seconds"] / args.export_every
        rate = measured["evaluations"] / seconds
        share = rate / limit
        ok = ok and share >= 0.6
        print(f"  trainer, {name} self-play: {rate:.0f} simulator evaluations/s = "
              f"{100 * share:.0f}% of the bound ({seconds:.1f} s per iteration; one export "
              f"{measured['export_seconds']:.1f} s)")
    print("target >= 60% of the bound:", "met" if ok else "NOT met")
    return 0 if ok else 1


def report_distill(config: TrainConfig, iterations: int, threads: int, parser: argparse.ArgumentParser) -> int:
    """Print a distillation run's throughput against its training step (see the docstring)."""
    try:
        measured = distill_throughput(config, iterations, threads)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    share = measured["samples_per_second"] * measured["train"]
    print(f"{config.game}, {config.net_config().arch}, distillation: {config.distill.positions} positions per "
          f"iteration, batch {config.optim.batch_size}, {threads} threads, fitting in {config.optim.precision}")
    print(f"  labelled set: {measured['positions']:.0f} positions read and encoded in {measured['load_seconds']:.1f} s "
          "(once per run)")
    print(f"  train step per sample: {measured['train_float32'] * 1e6:.0f} us in float32, "
          f"{measured['train_bfloat16'] * 1e6:.0f} us in bfloat16; bound {1 / measured['train']:.0f} samples/s")
    print(f"  trainer: {measured['samples_per_second']:.0f} samples/s = {100 * share:.0f}% of the bound "
          f"({measured['seconds_per_iteration']:.2f} s per iteration: samples {measured['collect_seconds']:.2f} s, "
          f"fitting {measured['fit_seconds']:.2f} s, one export {measured['export_seconds']:.1f} s "
          f"every {config.export_every})")
    ok = share >= 0.6
    print("target >= 60% of the bound:", "met" if ok else "NOT met")
    return 0 if ok else 1
