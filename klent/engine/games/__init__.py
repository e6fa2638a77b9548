"""Game registry: ``klent.engine.games.get("go9")`` returns the rules object for a game id.

Ids: ``go5`` .. ``go19`` (``go9``, ``go13``, ``go19`` are the usual ones), ``chess``,
``countup`` (N=7, k=2) and ``countup{N}_{k}``, ``othello``, ``hex2`` .. ``hex19`` (``hex11`` is
the usual one), ``gardner`` (5x5 chess) and ``animal_shogi``.  Keyword arguments are passed to
the game's constructor (``get("go9", komi=6.5)``, ``get("hex11", swap=True)``).
"""

from __future__ import annotations

import re
from typing import Any

from klent.engine.games.base import Game, GameFormatError, IllegalMoveError, State

__all__ = ["Game", "GameFormatError", "IllegalMoveError", "State", "get", "GAME_IDS"]

GAME_IDS = ("go9", "go13", "go19", "chess", "countup", "othello", "hex11", "gardner", "animal_shogi")


def get(name: str, **kwargs: Any) -> Game:
    """The game called ``name``; raises ValueError naming the known ids otherwise."""
    key = name.strip().lower()
    if match := re.fullmatch(r"go(\d+)", key):
        from klent.engine.games.go import GoGame

        return GoGame(int(match.group(1)), **kwargs)
    if key == "chess":
        from klent.engine.games.chess import ChessGame

        return ChessGame(**kwargs)
    if match := re.fullmatch(r"countup(?:(\d+)_(\d+))?", key):
        from klent.engine.games.countup import CountUpGame

        if match.group(1):
            return CountUpGame(int(match.group(1)), int(match.group(2)), **kwargs)
        return CountUpGame(**kwargs)
    if key == "othello":
        from klent.engine.games.othello import OthelloGame

        return OthelloGame(**kwargs)
    if match := re.fullmatch(r"hex(\d+)", key):
        from klent.engine.games.hex import HexGame

        return HexGame(int(match.group(1)), **kwargs)
    if key == "gardner":
        from klent.engine.games.gardner import GardnerGame

        return GardnerGame(**kwargs)
    if key == "animal_shogi":
        from klent.engine.games.animal_shogi import AnimalShogiGame

        return AnimalShogiGame(**kwargs)
    raise ValueError(f"unknown game {name!r}; known: {', '.join(GAME_IDS)} (or go5..go19, hex2..hex19)")
