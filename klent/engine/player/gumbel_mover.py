"""The Gumbel search (mode "search"), continuing the tree of the previous move (tree reuse)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from klent.engine.games.base import Game, State
from klent.engine.games.go import GoGame
from klent.engine.network import Evaluator
from klent.engine.player.mover import network
from klent.engine.player.options import CHESS_WAVE_SIZE, PLAY_RESCALE_FLOOR, PlayOptions
from klent.engine.search.gumbel import GumbelConfig, search
from klent.engine.search.limits import SearchLimits
from klent.engine.search.qtransforms import RESCALE_EPSILON
from klent.engine.search.result import SearchResult
from klent.engine.search.tree import SearchTree
from klent.engine.tablebase import Tablebase, TablebaseEvaluator


class GumbelMover:
    """Gumbel MCTS on the network (and in chess on the endgame tables of ``tablebase()``, when
    there are any).  It keeps the tree of its last search: a position that extends the one that
    tree was built for is searched on from it, anything else on a fresh tree."""

    def __init__(
        self,
        game: Game,
        evaluator: Evaluator | None,
        rng: np.random.Generator,
        tablebase: Callable[[], Tablebase | None],
    ) -> None:
        self.game = game
        self.evaluator = evaluator
        self._rng = rng
        self._tablebase = tablebase
        self._lock = threading.Lock()
        self.tree: SearchTree | None = None  # the last search's, for the position after `_tree_actions`
        self._tree_actions: list[int] = []

    def choose(
        self, state: State, actions: Sequence[int], opts: PlayOptions, stop: threading.Event | None
    ) -> SearchResult:
        # chess by its name: importing its kernels here would slow every Go engine's start
        game = self.game
        chess = game.name == "chess"
        floor = opts.rescale_floor
        if floor is None:
            floor = PLAY_RESCALE_FLOOR if chess or isinstance(game, GoGame) else RESCALE_EPSILON
        wave = opts.wave_size or (CHESS_WAVE_SIZE if chess else GumbelConfig.wave_size)
        config = GumbelConfig(gumbel_scale=opts.gumbel_scale, rescale_floor=floor, wave_size=wave)
        limits = SearchLimits(simulations=opts.simulations, time=opts.time, stop=stop, memory=opts.memory)
        evaluator = network(self.evaluator)
        tablebase = self._tablebase()
        if tablebase is not None:
            evaluator = TablebaseEvaluator(evaluator, tablebase)
        result = search(state, evaluator, limits, config=config, rng=self._rng, trees=self._take_tree(actions))
        with self._lock:
            self.tree = result.tree
            self._tree_actions = list(actions)
        return result

    def new_game(self) -> None:
        with self._lock:
            self.tree = None

    def reusable(self, actions: Sequence[int]) -> SearchTree | None:
        """The kept tree advanced to the position after ``actions``, if that position extends it."""
        tree, played = self.tree, self._tree_actions
        if tree is None or list(actions[: len(played)]) != played:
            return None
        return tree.advance(actions[len(played):])

    def _take_tree(self, actions: Sequence[int]) -> SearchTree | None:
        """`reusable`, detached (the rest of the tree let go) and forgotten here: the search
        continues in its forest, so that only one tree is ever in memory, and gives back the
        tree to keep."""
        with self._lock:
            tree = self.reusable(actions)
            self.tree = None
        return None if tree is None else tree.detached()
