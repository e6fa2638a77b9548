"""`klent` command line: one subcommand per job, each in its own module of this package.

Subcommand modules are imported only when chosen, so `klent gtp` starts without importing
torch or fastapi.  Each module defines ``add_arguments(parser)`` and ``run(args) -> int``.
User mistakes (`CommandError`, bad files, bad values) print one line on stderr and exit 2;
they never print a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import TypeVar

from klent import __version__

# name -> (module, one-line help).  Order is the order `klent --help` lists them in.
COMMANDS: dict[str, tuple[str, str]] = {
    "export": ("klent.cli.export", "convert a training checkpoint to an ONNX model"),
    "quantize": ("klent.cli.quantize", "an int8 model from a float32 one, with its parity report"),
    "centre": ("klent.cli.centre", "a model's action values shifted so that successive positions' values agree"),
    "train": ("klent.cli.train", "train a network by KLENT (or a baseline) self-play"),
    "distill": ("klent.cli.distill", "label positions with a teacher engine's move values"),
    "plot": ("klent.cli.plot", "plot learning curves of one or more training runs"),
    "gtp": ("klent.cli.gtp", "play Go as a GTP engine (GUIs, GNU Go, OGS/KGS bridges)"),
    "analysis": ("klent.cli.analysis", "analyse Go as KataGo's JSON analysis engine (KaTrain, Ogatak, q5Go)"),
    "uci": ("klent.cli.uci", "play chess as a UCI engine (GUIs, lichess-bot)"),
    "bot": ("klent.cli.bot", "play chess as a lichess bot account (`klent bot lichess`)"),
    "match": ("klent.cli.match", "play a match between two GTP (Go) or UCI (chess) engines"),
    "openings": ("klent.cli.openings", "balanced random openings for `klent match --openings`"),
    "serve": ("klent.cli.serve", "HTTP/JSON API and web page to play in the browser"),
    "bench": ("klent.cli.bench", "measure rules, network and search speed"),
}


N = TypeVar("N", int, float)


class CommandError(Exception):
    """A user mistake: printed as one line, exit status 2."""


def add_device(parser: argparse.ArgumentParser) -> None:
    """``--device``, for the commands that run a network (`klent gtp`, `uci`, `serve`): the
    `klent.engine.network.DEVICES` choice, spelt here so that ``--help`` does not load ONNX Runtime."""
    parser.add_argument("--device", choices=("auto", "cpu", "cuda", "tensorrt"), default="auto",
                        help="where the network runs: auto takes the GPU when ONNX Runtime has one "
                        "(the onnxruntime-gpu package); with the shipped 6x64 networks one game's search "
                        "ran about 5x faster on the CPU than on an H100 in a short benchmark (default: auto)")


def check_device(device: str) -> None:
    """A device this ONNX Runtime cannot run, as a `CommandError` before any game starts
    (players load their models lazily, so it would otherwise surface at the first move)."""
    from klent.engine.network import device_providers

    try:
        device_providers(device)
    except ValueError as error:
        raise CommandError(str(error)) from None


def add_search_tuning(parser: argparse.ArgumentParser, floor_default: str, wave_default: str) -> None:
    """``--rescale-floor`` and ``--wave-size``, for the commands that play by Gumbel search
    (`klent gtp`, `klent uci`): ``PlayOptions.rescale_floor`` and ``PlayOptions.wave_size``,
    checked by argparse so that a bad value is a one-line error."""

    def number(text: str, kind: Callable[[str], N]) -> N:
        try:
            return kind(text)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None

    def floor(text: str) -> float:
        value = number(text, float)
        if not 0 < value <= 2:
            raise argparse.ArgumentTypeError(f"{text} is not within (0, 2]")
        return value

    def wave(text: str) -> int:
        value = number(text, int)
        if value < 1:
            raise argparse.ArgumentTypeError(f"{text} is not >= 1")
        return value

    parser.add_argument("--rescale-floor", type=floor, default=None,
                        help="search: the smallest span of a node's values that the search's min-max rescaling "
                        f"divides by, in (0, 2]; 1e-8 is mctx's (default: {floor_default})")
    parser.add_argument("--wave-size", type=wave, default=None,
                        help="search: descents from the root before their leaves are evaluated as one batch; "
                        "larger batches pay on a GPU, smaller waves choose from fresher statistics "
                        f"(default: {wave_default})")


def _top_level_help() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [f"usage: klent <command> [options]   (klent {__version__})", "", "commands:"]
    lines += [f"  {name:<{width}}  {text}" for name, (_, text) in COMMANDS.items()]
    lines += ["", "`klent <command> --help` describes a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `klent` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_top_level_help())
        return 0
    if argv[0] in ("-V", "--version"):
        print(f"klent {__version__}")
        return 0
    name = argv[0]
    if name not in COMMANDS:
        print(f"klent: unknown command {name!r} (see `klent --help`)", file=sys.stderr)
        return 2
    module_name, text = COMMANDS[name]
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog=f"klent {name}", description=text)
    module.add_arguments(parser)
    args = parser.parse_args(argv[1:])
    try:
        return int(module.run(args) or 0)
    except (CommandError, FileNotFoundError, ValueError) as error:
        print(f"klent {name}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"klent {name}: interrupted", file=sys.stderr)
        return 130


def uci_main() -> int:
    """Entry point of the `klent-uci` console script: `klent uci` and its options, for programs
    that start an engine by one path with no arguments (lichess-bot's ``engine.name``,
    cutechess, Arena)."""
    return main(["uci", *sys.argv[1:]])


def gtp_main() -> int:
    """Entry point of the `klent-gtp` console script: `klent gtp` and its options, for Go GUIs
    that start an engine by one path (Sabaki, GoGui)."""
    return main(["gtp", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
