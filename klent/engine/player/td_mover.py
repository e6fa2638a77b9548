"""TD search and Dyna-2 (modes "td" and "dyna2", `klent.engine.search.td`): Go played by values
learnt from games simulated during the move, with no network needed."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from klent.engine.games.base import Game, State
from klent.engine.games.go import GoGame
from klent.engine.network import Evaluator, softmax
from klent.engine.player.mover import go_state, network
from klent.engine.player.options import PlayOptions
from klent.engine.search.result import SearchResult
from klent.engine.search.td import ShapeWeights, TdConfig, TdResult, TdSearch


class TdMover:
    """The TD search of one mode: its `TdSearch` is made on first use and kept from move to move
    of a game, so that its transient memory carries over (the paper's condition for its
    strength), while the parameters stay the same.  ``permanent``: Dyna-2's permanent memory;
    ``evaluator``: the network whose policy picks the candidates (``td_root_moves``)."""

    def __init__(
        self,
        mode: str,
        game: Game,
        seed: int | None,
        permanent: ShapeWeights | None,
        evaluator: Evaluator | None,
    ) -> None:
        self.mode = mode
        self.game = game
        self._seed = seed
        self._permanent = permanent
        self._evaluator = evaluator
        self._search: TdSearch | None = None

    def search(self, config: TdConfig) -> TdSearch:
        """The TD search with ``config`` (its seed, when None, the player's), the kept one while
        the parameters stay the same.  Raises ValueError for a game or weights it cannot play."""
        if config.seed is None:
            config = replace(config, seed=self._seed)
        td_search = self._search
        if td_search is None or td_search.config != config:
            if not isinstance(self.game, GoGame):
                raise ValueError(f"TD search plays Go, not {self.game.name}")
            if self.mode == "dyna2" and self._permanent is None:
                raise ValueError("Dyna-2 needs permanent weights (go<N>-td.npz, from `klent train --algo td-learning`)")
            permanent = self._permanent if self.mode == "dyna2" else None
            td_search = self._search = TdSearch(self.game, config, permanent)
        return td_search

    def choose(
        self, state: State, actions: Sequence[int], opts: PlayOptions, stop: threading.Event | None
    ) -> SearchResult:
        """TD search's choice, among the network policy's most probable moves with
        ``td_root_moves`` (its prior then the network's), the simulations' first moves drawn
        from that policy over them with ``td_root_policy``."""
        prior = None
        candidates: list[int] = []
        first_moves = None
        if opts.td_root_moves:
            prior = softmax(network(self._evaluator).evaluate([state]).policy_logits[0])
            candidates = np.argsort(-prior, kind="stable")[: opts.td_root_moves].tolist()
            if opts.td_root_policy:
                first_moves = np.zeros_like(prior)
                first_moves[candidates] = prior[candidates]
        chosen = self.search(opts.td).choose(
            go_state(state), opts.simulations, opts.time, stop, candidates, first_moves)
        return _search_result(chosen, prior)

    def reseed(self, seed: int) -> None:
        """Search with ``seed`` from the next move on (a search of another seed is made anew)."""
        self._seed = seed

    def new_game(self) -> None:
        """Forget the transient memory: the next position is of another game."""
        if self._search is not None:
            self._search.new_game()


def _search_result(chosen: TdResult, prior: np.ndarray | None = None) -> SearchResult:
    """A TD search's choice in the facade's terms.  Its afterstate values are ``q``; it has no
    visits, and its ``prior`` is the network's when one chose the candidates, else uniform over
    the legal moves; it prefers moves by their value, so ``improved_policy`` (which orders the
    listed moves and the choices of Go's move rules) is their winning probability (q + 1) / 2,
    normalised."""
    legal = chosen.legal.astype(np.float64)
    uniform = legal / legal.sum()
    winning = np.where(chosen.legal, (chosen.q.astype(np.float64) + 1.0) / 2.0, 0.0)
    policy = winning / winning.sum() if winning.sum() > 0 else uniform
    return SearchResult(
        action=chosen.action,
        improved_policy=policy.astype(np.float32),
        visits=np.zeros(chosen.q.shape, dtype=np.int32),
        q=chosen.q,
        value=chosen.value,
        pv=[chosen.action],
        simulations=chosen.simulations,
        elapsed=chosen.elapsed,
        prior=(uniform if prior is None else prior).astype(np.float32),
        ownership=chosen.ownership,
    )
