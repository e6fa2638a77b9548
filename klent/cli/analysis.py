"""`klent analysis [--model PATH] [--max-visits N] [--analysis-threads N]`: KataGo's JSON analysis engine.

Speaks KataGo's analysis protocol on stdin/stdout (one JSON query a line, one JSON answer a
line), the protocol of KaTrain, Ogatak, q5Go and analyze-sgf: `klent.protocols.katago_analysis`.
Only JSON goes to stdout: anything else printed while the engine runs goes to stderr.  A
failure never exits with status 1, which KaTrain reads as a deliberate quit.  Startup imports
neither torch nor fastapi.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from klent import __version__
from klent.cli import CommandError, add_device, add_search_tuning, check_device

CRASH_STATUS = 3  # an internal error: not 1 (KaTrain's "deliberate quit"), not 2 (a user mistake)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="Go ONNX model; its board sizes are then the only ones accepted "
                        "(default: weights/go<N>.onnx for each board size N)")
    parser.add_argument("--weights-dir", default=None, help="folder of go<N>.onnx models (default: weights/)")
    parser.add_argument("--precision", choices=("float32", "int8"), default="float32",
                        help="int8 analyses with each model's quantized sibling <stem>.int8.onnx (default: float32)")
    parser.add_argument("--max-visits", type=int, default=500,
                        help="visits of a query that gives no maxVisits (default: 500)")
    parser.add_argument("--analysis-threads", type=int, default=2,
                        help="positions analysed at once; queries beyond wait by priority (default: 2)")
    parser.add_argument("--memory", type=int, default=None,
                        help="MB each position's search tree may take; a search that fills it ends (default: 768)")
    add_search_tuning(parser, "2, measured stronger on 9x9", "32")
    parser.add_argument("--threads", type=int, default=None, help="ONNX Runtime threads (default: cores, at most 4)")
    add_device(parser)
    parser.add_argument("--seed", type=int, default=None, help="random seed (reproducible analyses)")
    parser.add_argument("--quit-without-waiting", action="store_true",
                        help="at the end of the input, stop the queries in flight instead of finishing them")


def run(args: argparse.Namespace) -> int:
    # Imported here so that `klent analysis --help` answers without loading onnxruntime and numba.
    from klent.engine.player import DEFAULT_MEMORY_MB, DEFAULT_WEIGHTS_DIR, PlayOptions
    from klent.protocols.katago_analysis import AnalysisConfig, AnalysisEngine

    if args.model is not None and not Path(args.model).is_file():
        raise CommandError(f"no model file {args.model!r}")
    if args.max_visits < 1:
        raise CommandError("--max-visits must be >= 1")
    if args.analysis_threads < 1:
        raise CommandError("--analysis-threads must be >= 1")
    if args.memory is not None and args.memory < 1:
        raise CommandError("--memory must be >= 1 MB")
    if args.threads is not None and args.threads < 1:
        raise CommandError("--threads must be >= 1")
    check_device(args.device)
    config = AnalysisConfig(
        model=None if args.model is None else Path(args.model),
        weights_dir=Path(args.weights_dir) if args.weights_dir else DEFAULT_WEIGHTS_DIR,
        options=PlayOptions(memory=(args.memory or DEFAULT_MEMORY_MB) * 2**20, rescale_floor=args.rescale_floor,
                            wave_size=args.wave_size),
        analysis_threads=args.analysis_threads,
        max_visits=args.max_visits,
        threads=args.threads,
        device=args.device,
        precision=args.precision,
        seed=args.seed,
        version=__version__,
        quit_without_waiting=args.quit_without_waiting,
    )
    # The answers go to the real stdout; any other print (a library's) to stderr.
    out, sys.stdout = sys.stdout, sys.stderr
    try:
        engine = AnalysisEngine(config, out=out)
        if not engine.sizes:
            raise CommandError(f"no Go model in {config.weights_dir}")
        return engine.run(sys.stdin.buffer)
    except (CommandError, FileNotFoundError, ValueError, KeyboardInterrupt):
        raise
    except Exception:  # a crash: its traceback on stderr, and a status that is not 1
        traceback.print_exc()
        return CRASH_STATUS
    finally:
        sys.stdout = out
