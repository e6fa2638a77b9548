"""`klent distill label`: positions from a teacher engine's games, labelled with move values.

    klent distill label --game chess --teacher stockfish --out data/chess --positions 200000 --jobs 2
    klent distill label --game go9 --out data/go9 --positions 50000 --jobs 2     (GNU Go level 10)
    klent distill label --game go9 --out data/go9-student --student weights/go9.onnx --jobs 2

Chess: every legal move of every stored position gets the teacher's value, from its centipawn
score (--value cp, tanh(cp / 543): the scale Ruoss et al. used) or its WDL as W - L (--value wdl).
Go: the teacher's top moves with its move values (GNU Go; Pachi, which lists none: its move alone),
its move, the final result and ownership.
With --student, a network plays the first plies after the opening of each game, so that the
set holds the positions that network reaches (DAgger), labelled by the teacher.
The set then trains a network with `klent train --algo distill --data data/chess`.  The run is
resumable: run the same command again after an interruption (a larger --positions extends a
finished set).  See klent/training/teacher.py and the modules it names for how positions are chosen and stored.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import time
from pathlib import Path

from klent.cli import CommandError
from klent.matchplay.engine_process import EngineError, find_program


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="label")
    label = sub.add_parser("label", help="label positions from teacher self-play (resumable)",
                           description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    label.add_argument("--game", default="chess", help="game id (default chess)")
    label.add_argument("--teacher", help="teacher command line: a UCI engine for chess (default stockfish), "
                       "a GTP engine for Go (default 'gnugo --mode gtp --level 10 --chinese-rules')")
    label.add_argument("--out", required=True, help="folder of the labelled set")
    label.add_argument("--positions", type=int, default=10_000, help="distinct positions to store")
    limit = label.add_mutually_exclusive_group()
    limit.add_argument("--depth", type=int, help="chess teacher's search depth per position (default 6)")
    limit.add_argument("--nodes", type=int, help="teacher nodes per position instead of a depth")
    label.add_argument("--jobs", type=int, default=1, help="teacher processes at once (default 1)")
    label.add_argument("--seed", type=int, default=0, help="seed of the games (default 0)")
    label.add_argument("--opening-plies", type=int, default=6, help="varied opening plies (default 6)")
    label.add_argument("--student", metavar="MODEL",
                       help="an ONNX model (the one being trained) that plays the first plies after the opening "
                       "of each game, so that the teacher labels the positions its mistakes lead to")
    label.add_argument("--student-plies", type=int, metavar="N",
                       help="with --student: its plies in a game, uniform in 0..N (default 40)")
    label.add_argument("--value", choices=("cp", "wdl"),
                       help="chess values from the teacher's centipawns or its WDL (default: cp for a new "
                       "set, the set's own when extending one)")
    label.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from klent.training import teacher

    if args.jobs < 1:
        raise CommandError("--jobs must be at least 1")
    chess_game = args.game == "chess"
    if args.teacher is None:
        args.teacher = "stockfish" if chess_game else "gnugo --mode gtp --level 10 --chinese-rules"
    if not chess_game and (args.depth or args.nodes):
        raise CommandError("--depth and --nodes limit a chess teacher; a Go teacher plays at its own level")
    words = shlex.split(args.teacher)
    if not words:
        raise CommandError("--teacher is empty")
    found = find_program(words[0])
    if found is None:
        raise CommandError(f"teacher {words[0]!r} not found (on Debian: apt install stockfish)")
    if shutil.which(words[0]) is None:  # found in /usr/games only: name it by its path
        args.teacher = shlex.join([found, *words[1:]])
    if args.student_plies is not None and (args.student is None or args.student_plies < 1):
        raise CommandError("--student-plies needs --student and must be at least 1")
    if args.student is not None and not Path(args.student).is_file():
        raise CommandError(f"no student model {args.student!r}")
    before = teacher.Manifest.read(Path(args.out))
    if args.value is None:
        args.value = "cp" if before is None else before.config.get("value", "wdl")
    config = teacher.LabelConfig(
        game=args.game, teacher=args.teacher, positions=args.positions,
        depth=None if args.nodes or not chess_game else (args.depth or 6), nodes=args.nodes, seed=args.seed,
        opening_plies=args.opening_plies, student=args.student,
        student_plies=0 if args.student is None else (args.student_plies or 40), value=args.value,
    )
    started = time.monotonic()
    bar = tqdm(total=config.positions, unit="pos", dynamic_ncols=True, disable=args.no_progress)

    def progress(manifest: teacher.Manifest) -> None:
        bar.n = min(manifest.positions, config.positions)
        per_second = (manifest.positions - bar_start) / max(time.monotonic() - started, 1e-9)
        bar.set_postfix(games=manifest.games, labels=manifest.labels, dup=manifest.duplicates,
                        nps=f"{manifest.teacher_nodes / max(manifest.teacher_seconds, 1e-9):,.0f}")
        bar.refresh()
        if args.no_progress:
            print(f"{manifest.positions} positions, {manifest.games} games, {manifest.labels} labels, "
                  f"{per_second:.1f} positions/s this run", flush=True)

    bar_start = 0 if before is None else before.positions
    bar.n = min(bar_start, config.positions)
    bar.refresh()  # a resumed set shows its count before the first new shard, minutes later
    try:
        manifest = teacher.label(config, args.out, jobs=args.jobs, progress=progress)
    except EngineError as error:  # a teacher that crashed, hung (`shards.TEACHER_TIMEOUT`) or broke the protocol
        raise CommandError(f"the teacher failed: {error}") from None
    finally:
        bar.close()
    print(f"{manifest.positions} positions ({manifest.train_positions} train, "
          f"{manifest.validation_positions} validation) from {manifest.games} games, "
          f"{manifest.labels} labelled moves -> {args.out}")
    return 0
