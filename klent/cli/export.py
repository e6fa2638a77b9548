"""`klent export`: a training checkpoint (or an untrained network) -> an ONNX model file (or float16 weights).

    klent export runs/go9/checkpoint.pt -o weights/go9.onnx
    klent export runs/chess/checkpoint.pt -o weights/training/chess/checkpoint.pt
    klent export --random --game go9 --blocks 6 --channels 64 -o /tmp/go9-untrained.onnx
    klent export runs/gardner-gateau/checkpoint.pt --game chess -o /tmp/gateau-chess.onnx

``--game`` with a checkpoint exports its weights for another board: an AlphaGateau network
learnt on Gardner chess plays 8x8 chess unchanged (the paper's zero-shot transfer); the model's
training facts then say which board it learnt on (``trained_on``).

An output ending in ``.pt`` is a checkpoint instead: the network alone, in float16, with its
training facts and no optimiser state, which a later run starts from with ``--init``.  It is about
a sixth of the trainer's ``checkpoint.pt`` (Adam keeps two float32 moments a weight),
small enough to commit for a network that would not fit the repository otherwise.

``--random`` exports a freshly initialised (seeded) network: a stand-in model for tests and
speed measurements, with no learned knowledge at all.  ``--quantize int8`` writes the int8
version instead, calibrated and checked as `klent quantize` does (the float32 model is exported
to a temporary file first).
"""

from __future__ import annotations

import argparse
import os
import tempfile

import torch

import klent.engine.games
from klent.cli import CommandError
from klent.cli.quantize import add_calibration_arguments, quantize_with_report
from klent.engine.games.base import Game
from klent.training.checkpoint import transfers_between_boards
from klent.training.export import export_onnx
from klent.training.nets import KlentNet, NetConfig, build_net, count_parameters, load_checkpoint, save_checkpoint


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", nargs="?", help="training checkpoint (.pt) to export")
    parser.add_argument("-o", "--output", required=True,
                        help="ONNX file to write, or a .pt file: the float16 weights alone, a start for --init")
    quantized = parser.add_argument_group("int8 model (`klent quantize`)")
    quantized.add_argument("--quantize", choices=["int8"], help="write the int8 model, with its parity report")
    add_calibration_arguments(quantized)
    parser.add_argument("--game", help="game id, e.g. go9, chess, countup: the untrained network's game, or the "
                        "board to export an AlphaGateau checkpoint for (gardner <-> chess)")
    random = parser.add_argument_group("untrained stand-in model (instead of a checkpoint)")
    random.add_argument("--random", action="store_true", help="export an untrained network")
    random.add_argument("--blocks", type=int, help=f"residual blocks (default {NetConfig.blocks})")
    random.add_argument("--channels", type=int, help=f"channels (default {NetConfig.channels})")
    random.add_argument(
        "--value-head", action="store_true", help="add a state-value head (Gumbel AlphaZero)"
    )
    random.add_argument(
        "--no-action-values", action="store_true", help="leave out the action-value head"
    )
    random.add_argument("--seed", type=int, help="initialisation seed (default 0)")


def run(args: argparse.Namespace) -> int:
    if args.random == (args.checkpoint is not None):
        raise CommandError("give either a CHECKPOINT or --random (with --game), not both")
    if args.quantize is not None and args.output.endswith(".pt"):
        raise CommandError("--quantize writes an ONNX model; give an output ending in .onnx")
    game, model, config, info = _untrained(args) if args.random else _from_checkpoint(args)
    if args.output.endswith(".pt"):
        parameters = count_parameters(model)
        save_checkpoint(args.output, model.half(), game, config, training_info=info)
        print(f"wrote {args.output}: {game.name}, {config.arch}, {parameters:,} float16 weights, a start for --init")
        return 0
    if args.quantize is None:
        export_onnx(model, game, args.output, info)
    else:
        with tempfile.TemporaryDirectory() as folder:
            float_model = os.path.join(folder, "float32.onnx")
            export_onnx(model, game, float_model, info)
            quantize_with_report(float_model, args.output, args)
    print(f"wrote {args.output}: {game.name}, {config.arch}, {count_parameters(model):,} parameters")
    return 0


def _untrained(args: argparse.Namespace) -> tuple[Game, KlentNet, NetConfig, dict[str, str]]:
    """A seeded, freshly initialised network for ``--random``."""
    if not args.game:
        raise CommandError("--random needs --game (e.g. --game go9)")
    game = klent.engine.games.get(args.game)
    config = NetConfig(
        blocks=NetConfig.blocks if args.blocks is None else args.blocks,
        channels=NetConfig.channels if args.channels is None else args.channels,
        value_head=args.value_head,
        action_value_head=not args.no_action_values,
    )
    seed = 0 if args.seed is None else args.seed
    torch.manual_seed(seed)
    info = {
        "algorithm": "none (untrained, random initialisation)",
        "simulator_evaluations": "0",
        "seed": str(seed),
    }
    return game, build_net(game, config), config, info


def _from_checkpoint(args: argparse.Namespace) -> tuple[Game, KlentNet, NetConfig, dict[str, str]]:
    """The network of a training checkpoint and the training facts the trainer stored in it."""
    random_only = {
        "--blocks": args.blocks is not None,
        "--channels": args.channels is not None,
        "--value-head": args.value_head,
        "--no-action-values": args.no_action_values,
        "--seed": args.seed is not None,
    }
    given = [option for option, present in random_only.items() if present]
    if given:
        raise CommandError(f"{', '.join(given)} only apply with --random")
    checkpoint = load_checkpoint(args.checkpoint)
    raw_info = checkpoint.extra.get("training_info", {})
    if not isinstance(raw_info, dict):
        raise CommandError(f"{args.checkpoint}: 'training_info' is not a dictionary")
    info = {str(k): str(v) for k, v in raw_info.items()}
    if args.game is None or args.game == checkpoint.game.name:
        return checkpoint.game, checkpoint.model, checkpoint.config, info
    game = klent.engine.games.get(args.game)
    if not transfers_between_boards(checkpoint.game, game, checkpoint.config):
        raise CommandError(f"{args.checkpoint} is a {checkpoint.config.arch} network for {checkpoint.game.name}: "
                           "only an AlphaGateau network moves to another board (gardner <-> chess)")
    model = build_net(game, checkpoint.config)
    model.load_state_dict(checkpoint.model.state_dict())
    info["trained_on"] = checkpoint.game.name
    return game, model, checkpoint.config, info
