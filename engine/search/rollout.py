"""Leaf values that mix the network's value with the result of a played-out game (Go).

AlphaGo (Silver et al. 2016) valued each leaf of its search as (1 - lambda) v(s) + lambda z,
v the value network and z the result of one fast rollout from the leaf, and found the mixture
(lambda = 0.5) stronger than either alone: the value network judged the whole board, the
rollouts the fights that end in captures.  klent's Go networks misjudge exactly those (groups
with one eye counted alive); a rollout plays them out.  `RolloutMixed` is an `Evaluator` that
does this for any search that calls it: the policy and action values are the network's, the
state value is the mixture, from the side to move's view like every klent value.

The rollouts are TD search's default policy (`engine.search.td_kernels.playout`): legal moves
that fill no own eye, uniformly random or, "tactical", captures and rescues of chains in atari
first.  One rollout costs about as much as one network evaluation on a CPU, so a search with
rollouts makes about half as many simulations in the same time.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np

from engine.games.base import Game, State
from engine.games.go import GoGame, GoState
from engine.network import Evaluation, Evaluator, state_values
from engine.search import td_kernels as tk
from engine.search.td import DEFAULT_POLICIES, _position, _tables


class RolloutMixed:
    """An evaluator of Go positions whose state value is (1 - weight) v + weight z."""

    def __init__(self, inner: Evaluator, weight: float, policy: str = "tactical", seed: int | None = None) -> None:
        if not isinstance(inner.game, GoGame):
            raise ValueError(f"rollouts play Go, not {inner.game.name}")
        if not 0.0 < weight <= 1.0:
            raise ValueError(f"the rollout weight must be within (0, 1], not {weight!r}")
        if policy not in DEFAULT_POLICIES:
            raise ValueError(f"the rollout policy must be random or tactical, not {policy!r}")
        self.inner = inner
        self.game: Game = inner.game
        self.weight = weight
        self.tactics = policy == "tactical"
        entropy = np.random.SeedSequence(seed).generate_state(1)[0]
        self._rng = tk.seed_state(int(entropy))

    def evaluate(self, states: Sequence[State]) -> Evaluation:
        """The network's evaluation of ``states`` with each state value mixed with a rollout's
        result (+1 the side to move wins, -1 it loses, 0 a draw)."""
        evaluation = self.inner.evaluate(states)
        results = np.array([self.rollout(state) for state in states], dtype=np.float32)
        mixed = (1.0 - self.weight) * state_values(evaluation) + self.weight * results
        return evaluation._replace(state_value=mixed.astype(np.float32))

    def rollout(self, state: State) -> float:
        """One game played out from ``state``: its result for the side to move."""
        if not isinstance(state, GoState):
            raise TypeError(f"rollouts play Go positions, not {state.game.name}'s")
        return play_out(state, self.tactics, self._rng)


def play_out(state: GoState, tactics: bool, rng: np.ndarray) -> float:
    """The result for the side to move (+1, -1, 0) of one game played out from ``state`` by the
    default policy (``rng``: `td_kernels.seed_state`'s generator state, advanced)."""
    game = state.game  # its komi, which GTP may have changed since the network was loaded
    board, seen, position_hash, passes = _position(state)
    nbr, zob, diag = _tables(game.size)
    color = 1 if state.to_play == 0 else -1
    black = tk.playout(
        board, seen, position_hash, color, passes, state.move_number, game.max_moves, game.komi,
        nbr, zob, diag, tactics, rng,
    )
    return float(color * (2.0 * black - 1.0))


@cache
def warm_up() -> None:
    """Load (or compile) the playout kernel now, outside any time budget: one rollout on 5x5,
    once per process."""
    play_out(GoGame(5).initial_state(), True, tk.seed_state(0))
