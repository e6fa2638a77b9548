"""`klent bot lichess --config bot.toml`: run a chess engine as a lichess bot account.

The token is read from the LICHESS_BOT_TOKEN environment variable only (never from the command
line, where it would show in `ps` and shell history).  The first SIGINT/SIGTERM stops taking
challenges and finishes or resigns the games in progress as the config says; a second one
resigns them at once.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path
from types import FrameType

from klent.cli import CommandError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("platform", choices=("lichess",), help="the server to play on")
    parser.add_argument("--config", required=True, help="TOML file of the bot's policy (see bot.example.toml)")
    parser.add_argument("--verbose", action="store_true", help="log every HTTP request too")


def run(args: argparse.Namespace) -> int:
    from klent.protocols.lichess import Bot
    from klent.protocols.lichess_client import LichessError
    from klent.protocols.lichess_config import TOKEN_VARIABLE, load_config

    config = load_config(args.config)  # a missing or wrong file is one line (klent.cli)
    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    if not token:
        raise CommandError(f"set the {TOKEN_VARIABLE} environment variable to the bot account's API token")
    if config.engine.model is not None and not Path(config.engine.model).is_file():
        raise CommandError(f"no model file {config.engine.model!r}")
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    # httpx logs each request at INFO (URLs only, never headers); keep that for --verbose.
    logging.getLogger("httpx").setLevel(logging.INFO if args.verbose else logging.WARNING)
    bot = Bot(config, token)
    signals = 0

    def on_signal(number: int, frame: FrameType | None) -> None:
        nonlocal signals
        signals += 1
        bot.stop(resign=signals > 1)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        bot.run()
    except LichessError as error:  # already redacted
        raise CommandError(str(error)) from None
    return 0
