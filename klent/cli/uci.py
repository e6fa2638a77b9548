"""`klent uci [--model PATH] [--precision float32|int8] [--rescale-floor F] [--wave-size W]`: a UCI
engine on stdin/stdout (GUIs, lichess-bot, `klent match`): chess, and Gardner chess and Animal Shogi
through the ``UCI_Variant`` option."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from klent import __version__
from klent.cli import CommandError, add_device, add_search_tuning, check_device


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        help="ONNX model, kept whatever UCI_Variant says (default: weights/<game>.onnx of the variant, "
        "chess to begin with; the ModelFile option changes it)",
    )
    parser.add_argument("--precision", choices=("float32", "int8"), default="float32",  # engine.network.PRECISIONS
                        help="int8 plays the model's quantized sibling <stem>.int8.onnx (`klent quantize MODEL` "
                        "makes it); the Precision option changes it (default: float32)")
    add_device(parser)
    add_search_tuning(parser, "2 for chess, measured stronger; 1e-8 for the variants",
                      "4 for chess, measured stronger on a CPU; 32 for the variants")


def run(args: argparse.Namespace) -> int:
    # Imported here, so that `klent uci --help` answers without loading onnxruntime and numba.
    from klent.engine.player import PlayOptions
    from klent.protocols.uci import UciEngine

    if args.model is not None and not Path(args.model).is_file():
        raise CommandError(f"no model file {args.model!r}")
    check_device(args.device)
    engine = UciEngine(sys.stdout, model=args.model, name=f"klent {__version__}", precision=args.precision,
                       tuning=PlayOptions(rescale_floor=args.rescale_floor, wave_size=args.wave_size),
                       device=args.device)
    return engine.run(sys.stdin.buffer)
