"""`klent train`: train a network by KLENT self-play (or the Gumbel AlphaZero baseline), or
distil a teacher's labelled positions into one (`--algo distill`), and start any run from a
trained checkpoint (`--init`); or learn Dyna-2's permanent memory for Go by TD self-play
(`--algo td-learning`: numpy/numba only, no torch, no config).

    klent train --game go9 --config klent/training/configs/go9_cpu.toml --out runs/go9
    klent train --config klent/training/configs/gardner_klent_cpu.toml --seed 1 --out runs/eff/gardner-klent-s1
    klent train --out runs/go9 --resume --minutes 60
    klent train --config klent/training/configs/animal_shogi_gumbel_az_cpu.toml --evaluations 1e7 --out runs/a
    klent train --config klent/training/configs/chess_distill_cpu.toml --data data/chess --out runs/chess-d
    klent train --config klent/training/configs/go9_distill_cpu.toml --set distill.score_scale=10 --out runs/arm
    klent train --config klent/training/configs/chess_cpu.toml --init runs/chess-d/checkpoint.pt --out runs/c
    torchrun --nproc_per_node=2 -m klent train --config klent/training/configs/go9_gpu.toml --out runs/g
    klent train --algo td-learning --game go9 --out runs/go9-td --games 200000 [--resume]

The config (TOML, see klent/training/configs/) defines the run; --game, --algo, --preset and --seed
override it for a new run (one config, several seeds: benchmarks/efficiency.sh), and --set changes
any setting by its TOML path (an A/B arm without a copy of the file).  A resumed run
keeps the configuration stored in its checkpoint, unless --config gives one that changes only
how the run goes on (the [optim] and [eval] sections, export_every, keep_every, iterations, the
self-play evaluator and resignation settings); the checkpoint records such changes.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from klent.cli import CommandError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="TOML training config (klent/training/configs/*.toml)")
    parser.add_argument("--out", required=True, help="run folder (checkpoints, ONNX, metrics)")
    parser.add_argument("--game", help="game id (go9, chess, countup, ...); overrides the config")
    parser.add_argument("--algo", choices=("klent", "gumbel-az", "distill", "td-learning"),
                        help="overrides the config; td-learning learns Dyna-2's permanent memory for Go "
                        "(DIR/<game>-td.npz, no config, no torch)")
    parser.add_argument("--games", type=int, default=100_000,
                        help="td-learning: self-play games in all, those of a resumed run included (default: 100000)")
    parser.add_argument(
        "--data", metavar="FOLDER[,FOLDER...]",
        help="labelled set(s) for --algo distill (`klent distill label --out`); several are fitted as one; "
             "in a KLENT run, a teacher whose action values are fitted beside the games",
    )
    parser.add_argument("--init", help="start a new run from this checkpoint.pt (e.g. a distilled net); "
                        "td-learning: from this weights .npz")
    parser.add_argument(
        "--preset",
        choices=("klent", "kl-only", "ent-only", "one-step", "monte-carlo"),
        help="KLENT ablation preset (paper table 2); overrides the config",
    )
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="settings",
                        help="change one setting of the config, e.g. distill.score_scale=10 or optim.lr=3e-4 "
                        "(TOML values; repeatable)")
    parser.add_argument("--seed", type=int, help="the run's random seed; overrides the config (new runs only)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out")
    parser.add_argument("--iterations", type=int, help="stop after this many iterations in total")
    parser.add_argument("--minutes", type=float, help="stop after this much wall-clock time")
    parser.add_argument("--evaluations", type=float,
                        help="stop once this many simulator evaluations in total are spent (e.g. 1e7: "
                        "equal budgets for algorithms whose iterations cost different numbers)")
    parser.add_argument("--device", help="cpu, cuda, cuda:1, mps (default: the best available)")
    parser.add_argument("--threads", type=int, help="CPU threads per process (default: all cores)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    if args.algo == "td-learning":  # not a network: none of the torch trainer's machinery
        return _td_learning(args)
    # torch is imported only when training
    from klent.training.checkpoint import resume_config
    from klent.training.config import config_changes, load_config, with_settings
    from klent.training.fitting import TrainingDiverged
    from klent.training.trainer import Trainer

    if args.iterations is not None and args.iterations < 1:
        raise CommandError("--iterations must be at least 1")
    if args.minutes is not None and args.minutes <= 0:
        raise CommandError("--minutes must be positive")
    if args.evaluations is not None and args.evaluations < 1:
        raise CommandError("--evaluations must be at least 1")
    chosen = {"game": args.game, "algo": args.algo, "preset": args.preset, "init": args.init, "seed": args.seed}
    overrides = {k: v for k, v in chosen.items() if v is not None}
    if args.resume:
        saved = resume_config(args.out)
        config = with_settings(saved if args.config is None else load_config(args.config), args.settings)
        if any(getattr(config, k) != v for k, v in overrides.items()):
            raise CommandError("--game, --algo, --preset, --init and --seed cannot change a run being resumed")
        # A preset names no labelled set: the run keeps its own unless --data gives another.
        config = _with_data(config, args.data or config.distill.data or saved.distill.data)
        for change in config_changes(saved, config):
            print(f"changed on resumption: {change}")
    else:
        if args.config is None:
            raise CommandError("a new run needs --config (see klent/training/configs/)")
        config = with_settings(load_config(args.config), args.settings)
        config = _with_data(config.replace(**overrides), args.data or config.distill.data)
    run_ = Trainer(
        config, args.out, resume=args.resume, device=args.device, threads=args.threads,
        progress=not args.no_progress,
    )
    try:
        evaluations = None if args.evaluations is None else int(args.evaluations)
        done = run_.run(args.iterations, args.minutes, progress=not args.no_progress, evaluations=evaluations)
    except TrainingDiverged as error:  # a setting to change, not a bug: one line
        raise CommandError(str(error)) from None
    finally:
        run_.close()
    if run_.dist.is_main:
        print(f"{done} iterations, {run_.simulator_evaluations} simulator evaluations -> {args.out}")
    return 0


def _td_learning(args: argparse.Namespace) -> int:
    """Dyna-2's permanent memory: ``--games`` TD self-play games into DIR/<game>-td.npz, one
    metrics line per thousand games in DIR/metrics.jsonl; ``--resume`` continues DIR's file up to
    ``--games`` in all, ``--init`` starts from another weights file."""
    from klent.engine.search.td import ShapeWeights
    from klent.training.td_learning import train

    unused = [name for name in ("config", "preset", "data", "seed", "iterations", "minutes", "evaluations",
                                "device", "threads")
              if getattr(args, name) is not None]
    if unused:
        raise CommandError(f"--algo td-learning takes no --{unused[0]}")
    if args.games < 1:
        raise CommandError("--games must be at least 1")
    game = args.game or "go9"
    out = Path(args.out)
    weights = out / f"{game}-td.npz"
    init = args.init
    if args.resume:
        if init is not None:
            raise CommandError("--resume continues the run's own weights: no --init")
        if not weights.is_file():
            raise CommandError(f"nothing to resume: {weights} does not exist")
        init = str(weights)
    played = int(ShapeWeights.load(init).info.get("games", 0)) if args.resume else 0
    if played >= args.games:
        print(f"{weights} already has {played} games")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    result = train(game, args.games - played, weights, init=init, metrics_path=out / "metrics.jsonl",
                   progress=not args.no_progress)
    print(f"{result.info['games']} games -> {weights}")
    return 0


def _with_data(config: Any, data: str) -> Any:
    """``config`` with ``data`` as its distillation's labelled set."""
    return config.replace(distill=dataclasses.replace(config.distill, data=data))
