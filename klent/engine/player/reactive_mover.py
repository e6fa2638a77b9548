"""Reactive play (mode "reactive"): the network's one call, no search."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from klent.engine.games.base import State
from klent.engine.network import Evaluator
from klent.engine.player.mover import network
from klent.engine.player.options import PlayOptions
from klent.engine.search.reactive import reactive
from klent.engine.search.result import SearchResult


class ReactiveMover:
    """The policy's argmax, or at ``PlayOptions.temperature`` a move drawn from it."""

    def __init__(self, evaluator: Evaluator | None, rng: np.random.Generator) -> None:
        self.evaluator = evaluator
        self._rng = rng

    def choose(
        self, state: State, actions: Sequence[int], opts: PlayOptions, stop: threading.Event | None
    ) -> SearchResult:
        return reactive(state, network(self.evaluator), temperature=opts.temperature, rng=self._rng)

    def new_game(self) -> None:
        """Nothing to forget: reactive play keeps nothing from move to move."""
