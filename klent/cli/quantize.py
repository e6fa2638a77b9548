"""`klent quantize`: a float32 klent model -> an int8 one, with a parity report.

    klent quantize weights/go9.onnx [-o weights/go9.int8.onnx] [--positions 1024] [--games 32]

ONNX Runtime static quantization calibrated on the model's own self-play (`klent.training.quantize`).
The parity against float32 on positions from other games is printed and written as JSON
beside the output (``weights/go9.int8.parity.json``).  The engine plays the result like any
model; by default it is written where ``--precision int8`` (`klent gtp`, `klent serve`) looks
for it, beside the float32 model (`klent.engine.network.precision_path`).
"""

from __future__ import annotations

import argparse

from klent.cli import CommandError
from klent.engine.network import precision_path, read_model_info

DEFAULT_POSITIONS = 1024
DEFAULT_GAMES = 32


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="float32 klent ONNX model to quantize")
    parser.add_argument(
        "-o",
        "--output",
        help="int8 ONNX file to write (default: MODEL's sibling <stem>.int8.onnx, which --precision int8 plays)",
    )
    add_calibration_arguments(parser)


def add_calibration_arguments(parser: argparse.ArgumentParser) -> None:
    """The calibration options, shared with `klent export --quantize`."""
    parser.add_argument(
        "--positions",
        type=int,
        default=DEFAULT_POSITIONS,
        help=f"calibration positions, and as many held-out ones for the parity (default {DEFAULT_POSITIONS})",
    )
    parser.add_argument(
        "--games",
        type=int,
        default=DEFAULT_GAMES,
        help=f"self-play games they come from, each set from its own games (default {DEFAULT_GAMES})",
    )


def run(args: argparse.Namespace) -> int:
    info = read_model_info(args.model)  # one-line errors for a missing file or a non-klent one
    if info.quantization:
        raise CommandError(f"{args.model} is already quantized ({info.quantization.get('scheme', '?')})")
    quantize_with_report(args.model, args.output or precision_path(args.model, "int8"), args)
    return 0


def quantize_with_report(source: str, target: str, args: argparse.Namespace) -> None:
    """Quantize ``source`` into ``target`` with the calibration options of ``args`` and print
    the parity report."""
    try:
        from klent.training.quantize import check_arguments, parity_path, quantize
    except ImportError as error:  # onnxruntime.quantization needs the onnx package
        raise CommandError(f"quantization needs the train extra (pip install 'klent[train]'): {error}") from None
    check_arguments(source, target, args.positions, args.games)
    print(f"calibrating on {args.positions} positions from {args.games} self-play games ...", flush=True)
    parity = quantize(source, target, positions=args.positions, games=args.games)
    print(f"wrote {target}: int8, parity against float32: {parity.summary()}")
    print(f"parity report: {parity_path(target)}")
