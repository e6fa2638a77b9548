"""The games `klent uci` plays, by the UCI_Variant names Fairy-Stockfish gives them."""

from __future__ import annotations

from collections.abc import Callable

from klent.engine.games.animal_shogi import AnimalShogiGame
from klent.engine.games.base import FenGame
from klent.engine.games.chess import ChessGame
from klent.engine.games.gardner import GardnerGame

# Each game is made without the rules a GUI applies itself (move cap, draw claims, repetition):
# the GUI ends games, the engine only has to know the moves.
UCI_VARIANTS: dict[str, Callable[[], FenGame]] = {
    "chess": lambda: ChessGame(max_moves=None, claim_draws=False),
    "gardner": lambda: GardnerGame(max_moves=None, claim_draws=False),
    "dobutsu": lambda: AnimalShogiGame(max_moves=None, repetition_rule=False),
}


def uci_variant(game_id: str) -> str | None:
    """The UCI_Variant name of the klent game ``game_id``; None for a game UCI does not play."""
    return next((variant for variant, make in UCI_VARIANTS.items() if make().name == game_id), None)
