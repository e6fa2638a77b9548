"""The one protocol a player chooses its moves through (`Mover`: one per mode of `PlayOptions`),
and the checks the movers and the player share."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from klent.engine.games.base import State
from klent.engine.games.go import GoState
from klent.engine.network import Evaluator
from klent.engine.player.options import PlayOptions
from klent.engine.search.result import SearchResult


class Mover(Protocol):
    """One way of choosing a move: reactive play, the Gumbel search or TD search.  A mover may
    keep what it learnt of a game from move to move (a search tree, a transient memory)."""

    def choose(
        self, state: State, actions: Sequence[int], opts: PlayOptions, stop: threading.Event | None
    ) -> SearchResult:
        """The move in ``state``, reached by ``actions`` from the game's initial state, as
        ``opts`` say; ``stop`` ends a search early with the best move found so far."""
        ...

    def new_game(self) -> None:
        """Forget the game: the next position is of another one."""
        ...


def network(evaluator: Evaluator | None) -> Evaluator:
    """``evaluator``, which a mode that asks the network needs."""
    if evaluator is None:
        raise ValueError("this player has no network: it plays only TD search (modes 'td' and 'dyna2')")
    return evaluator


def go_state(state: State) -> GoState:
    """``state``, which must be Go's: TD search and the judging of dead stones play only Go."""
    if not isinstance(state, GoState):
        raise TypeError(f"only a Go position can be judged, not one of {state.game.name}")
    return state
