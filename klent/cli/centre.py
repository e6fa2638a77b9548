"""`klent centre`: a model whose action values are biased for both players, shifted back.

    klent centre weights/chess.onnx -o runs/chess-centred.onnx [--games 64 | --openings FILE] [--plies N]

Measures V(s) + V(s') over the model's games against itself and adds half its mean, negated,
to every action value (`klent.training.centre`, whose docstring tells why).  The moves the
policy prefers do not change; the values a search mixes across depths do.
"""

from __future__ import annotations

import argparse

from klent.cli import CommandError
from klent.engine.network import read_model_info
from klent.matchplay.opening_files import opening_state, read_openings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="klent ONNX model without a value head (V = sum pi Q)")
    parser.add_argument("-o", "--output", required=True, help="the centred ONNX model to write")
    parser.add_argument("--games", type=int, default=64, help="self-play games measured from the initial position "
                        "(default 64)")
    parser.add_argument("--openings", help="a `klent match --openings` file: one game from each opening instead")
    parser.add_argument("--plies", type=int, help="plies measured of each game at most (default: whole games)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the games' moves (default 0)")


def run(args: argparse.Namespace) -> int:
    info = read_model_info(args.model)  # one-line errors for a missing file or a non-klent one
    try:
        from klent.training.centre import centre
    except ImportError as error:  # the onnx package comes with the train extra
        raise CommandError(f"centring needs the train extra (pip install 'klent[train]'): {error}") from None
    try:
        starts = [opening_state(info.game, line) for line in read_openings(args.openings, info.game)] \
            if args.openings else []
        print(f"measuring {args.model} over {len(starts) or args.games} games against itself ...", flush=True)
        result = centre(args.model, args.output, games=args.games, starts=starts, plies=args.plies, seed=args.seed)
    except (OSError, ValueError) as error:
        raise CommandError(str(error)) from None
    print(f"wrote {args.output}: {result.summary()}")
    return 0
