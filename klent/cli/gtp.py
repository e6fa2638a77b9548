"""`klent gtp [--model PATH] [--mode reactive|search|td|dyna2] [--simulations N] [--time S] [--memory MB]`: Go over GTP.

Speaks GTP 2 plus the KGS and Leela Zero / KataGo analysis extensions on stdin/stdout (GUIs
such as Sabaki, Lizzie and GoGui, gtp2ogs, kgsGtp, GNU Go as an opponent).  Startup imports
neither torch nor fastapi.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from klent import __version__
from klent.cli import CommandError, add_device, add_search_tuning, check_device

if TYPE_CHECKING:
    from klent.engine.search.td import TdConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="Go ONNX model; its board size is then the only one accepted "
                        "(default: weights/go<N>.onnx for each board size N)")
    parser.add_argument("--weights-dir", default=None, help="folder of go<N>.onnx models (default: weights/)")
    parser.add_argument("--precision", choices=("float32", "int8"), default="float32",  # engine.network.PRECISIONS
                        help="int8 plays the quantized sibling <stem>.int8.onnx of --model, by default of "
                        "the 9x9 model go9.onnx (the board size is then the only one accepted); "
                        "`klent quantize MODEL` makes it (default: float32)")
    parser.add_argument("--mode", choices=("reactive", "search", "td", "dyna2"), default="search",
                        help="one network call per move, Gumbel MCTS, TD search or Dyna-2 (TD search on "
                        "permanent weights; both without a network) (default: search)")
    parser.add_argument("--simulations", type=int, default=None,
                        help="simulations per move (simulated games in modes td and dyna2); caps timed "
                        "searches too (default: 200, none with --time)")
    parser.add_argument("--td-weights", default=None,
                        help="Dyna-2's permanent weights; their board size is then the only one accepted "
                        "(default: weights/go<N>-td.npz for each board size N)")
    add_search_tuning(parser, "2, measured stronger on 9x9", "32; 4 was not shown stronger on 9x9")
    parser.add_argument("--td-root-moves", type=int, default=0,
                        help="modes td and dyna2: choose among the network policy's this many most probable moves, "
                        "by the simulated games' values (0: no network, every move; default: 0)")
    parser.add_argument("--td-root-policy", action="store_true",
                        help="with --td-root-moves: draw each simulated game's first move from the network's "
                        "policy over those moves, instead of epsilon-greedily on the learnt values")
    td = parser.add_argument_group("TD search parameters",
                                   "modes td and dyna2; the defaults are the paper's where it gives them")
    td.add_argument("--td-epsilon", type=float, default=None,
                    help="exploration rate of the simulated players (default: 0.1)")
    td.add_argument("--td-alpha", type=float, default=None, help="normalised step size (default: 0.1)")
    td.add_argument("--td-lambda", type=float, default=None,
                    help="lambda of NTD2(lambda) (default: 0.4, ours: the paper does not print it)")
    td.add_argument("--td-shapes", default=None,
                    help="square sizes of the learnt shape features, comma-separated, e.g. 1,2,3 (default: 1,2)")
    td.add_argument("--td-sharing", default=None,
                    help="their weight sharing, comma-separated from none, LI, LD (default: none)")
    td.add_argument("--td-greedy-moves", type=int, default=None,
                    help="T: simulated moves chosen epsilon-greedily before the random default policy (default: 6)")
    parser.add_argument("--time", type=float, default=None,
                        help="seconds per move at most (a clock from time_settings can lower it)")
    parser.add_argument("--memory", type=int, default=None,
                        help="MB the search tree may take, in moves and in lz-analyze/kata-analyze, which "
                        "then stop growing it (default: 768, as UCI's Hash)")
    parser.add_argument("--gumbel-scale", type=float, default=0.0,
                        help="root Gumbel noise of the search (0: the strongest, deterministic choice; "
                        "1: as varied as self-play), so that games against a deterministic opponent "
                        "differ (default: 0)")
    parser.add_argument("--all-stones-alive", action="store_true",
                        help="count every stone alive at the end even with a model that has an ownership "
                        "head (the engine's judgement before that head; for comparisons)")
    parser.add_argument("--resign-threshold", type=float, default=0.05,
                        help="resign at or below this win rate ... (0 never resigns; default: 0.05)")
    parser.add_argument("--resign-moves", type=int, default=3,
                        help="... for this many consecutive own moves (default: 3)")
    parser.add_argument("--time-margin", type=float, default=0.2,
                        help="seconds of lag kept per move when on a clock (default: 0.2)")
    parser.add_argument("--threads", type=int, default=None,
                        help="ONNX Runtime threads, 1 to 64 (default: cores, at most 4)")
    add_device(parser)
    parser.add_argument("--seed", type=int, default=None, help="random seed (reproducible games)")
    parser.add_argument("--name", default="klent", help="what `name` answers (default: klent)")


DEFAULT_SIMULATIONS = 200


def _simulations(asked: int | None, seconds: float | None) -> int | None:
    """--simulations, or by default 200 -- but no cap with --time: asking for seconds a move
    means as many simulations as fit in them."""
    if asked is not None:
        return asked
    return None if seconds is not None else DEFAULT_SIMULATIONS


def _td_config(args: argparse.Namespace) -> TdConfig:
    """The TD search parameters given on the command line over the paper's defaults; a bad one
    is a one-line error."""
    from klent.engine.search.td import TdConfig

    given = {"epsilon": args.td_epsilon, "alpha": args.td_alpha, "lam": args.td_lambda,
             "greedy_moves": args.td_greedy_moves}
    try:
        if args.td_shapes is not None:
            given["shapes"] = tuple(int(k) for k in args.td_shapes.split(","))
    except ValueError:
        raise CommandError(f"--td-shapes takes square sizes such as 1,2,3, not {args.td_shapes!r}") from None
    if args.td_sharing is not None:
        given["sharing"] = tuple(args.td_sharing.split(","))
    chosen = {name: value for name, value in given.items() if value is not None}
    if chosen and args.mode not in ("td", "dyna2"):
        raise CommandError("the --td-* parameters are for --mode td or dyna2")
    try:
        return TdConfig(**chosen)
    except ValueError as error:
        raise CommandError(f"TD search parameters: {error}") from None


def run(args: argparse.Namespace) -> int:
    # Imported here so that `klent gtp --help` answers without loading onnxruntime and numba.
    from klent.engine.games.go import GoGame
    from klent.engine.network import MAX_THREADS, model_at_precision
    from klent.engine.player import DEFAULT_MEMORY_MB, DEFAULT_WEIGHTS_DIR, PlayOptions, model_path_for
    from klent.protocols.gtp import GtpConfig, GtpEngine

    if args.model is not None and not Path(args.model).is_file():
        raise CommandError(f"no model file {args.model!r}")
    if args.td_root_moves < 0:
        raise CommandError("--td-root-moves must be >= 0")
    if args.td_root_moves and args.mode not in ("td", "dyna2"):
        raise CommandError("--td-root-moves is for --mode td or dyna2")
    if args.td_root_policy and not args.td_root_moves:
        raise CommandError("--td-root-policy draws among the network's candidates: it needs --td-root-moves")
    networked = args.model is not None or args.precision != "float32"
    if args.mode in ("td", "dyna2") and not args.td_root_moves and networked:
        raise CommandError(f"--mode {args.mode} uses a network only with --td-root-moves: no --model or --precision")
    if args.td_weights is not None and args.mode != "dyna2":
        raise CommandError("--td-weights are Dyna-2's: they need --mode dyna2")
    if args.td_weights is not None and not Path(args.td_weights).is_file():
        raise CommandError(f"no Dyna-2 weights file {args.td_weights!r}")
    if args.simulations is not None and args.simulations < 1:
        raise CommandError("--simulations must be >= 1")
    if args.memory is not None and args.memory < 1:
        raise CommandError("--memory must be >= 1 MB")
    if args.time is not None and args.time <= 0:
        raise CommandError("--time must be > 0 seconds")
    if not 0 <= args.gumbel_scale <= 10:
        raise CommandError("--gumbel-scale must be in [0, 10]")
    if not 0 <= args.resign_threshold < 0.5 or args.resign_moves < 1:
        raise CommandError("--resign-threshold must be in [0, 0.5) and --resign-moves >= 1")
    if args.time_margin < 0:
        raise CommandError("--time-margin must be >= 0")
    if args.threads is not None and not 1 <= args.threads <= MAX_THREADS:
        raise CommandError(f"--threads must be between 1 and {MAX_THREADS}, got {args.threads}")
    check_device(args.device)
    td = _td_config(args)
    weights_dir = Path(args.weights_dir) if args.weights_dir else DEFAULT_WEIGHTS_DIR
    model = args.model
    if args.precision != "float32":  # one model: the per-size lookup in weights_dir knows float32 files only
        model = model_at_precision(model or model_path_for(GoGame(9), weights_dir), args.precision)
    config = GtpConfig(
        model=None if model is None else Path(model),
        weights_dir=weights_dir,
        options=PlayOptions(mode=args.mode, simulations=_simulations(args.simulations, args.time), time=args.time,
                            gumbel_scale=args.gumbel_scale, memory=(args.memory or DEFAULT_MEMORY_MB) * 2**20,
                            td_root_moves=args.td_root_moves, td_root_policy=args.td_root_policy, td=td,
                            rescale_floor=args.rescale_floor,
                            wave_size=args.wave_size),
        resign_threshold=args.resign_threshold,
        resign_moves=args.resign_moves,
        time_margin=args.time_margin,
        threads=args.threads,
        device=args.device,
        seed=args.seed,
        judge_dead_stones=not args.all_stones_alive,
        td_weights=None if args.td_weights is None else Path(args.td_weights),
        name=args.name,
        version=__version__,
    )
    engine = GtpEngine(config, out=sys.stdout)
    status = engine.run(sys.stdin.buffer)
    if engine.controller_gone:
        # The input thread may still be blocked reading stdin, holding its lock, which aborts
        # the interpreter's exit (SIGABRT); there is nothing left to write to a closed pipe.
        sys.stderr.flush()
        os._exit(status)
    return status
