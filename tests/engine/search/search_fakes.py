"""Tiny games and scripted evaluators for the search tests (not a test module itself).

`TreeGame` plays an explicit game tree; `WideGame` has every action legal down to a fixed depth
(enough legal actions for Sequential Halving with m = 16); `ScriptedEvaluator` answers from
Python functions of the state and records what it was asked.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from klent.engine.games.base import Game, IllegalMoveError, State
from klent.engine.network import Evaluation, apply_legal_mask


class PathState(State):
    """A position identified by the actions that led to it; players alternate."""

    __slots__ = ("_game", "path")

    def __init__(self, game: PathGame, path: tuple[int, ...]) -> None:
        self._game = game
        self.path = path

    @property
    def game(self) -> PathGame:
        return self._game

    @property
    def to_play(self) -> int:
        return len(self.path) % 2

    @property
    def move_number(self) -> int:
        return len(self.path)

    @property
    def is_terminal(self) -> bool:
        return self._game.num_legal(self.path) == 0

    def legal_mask(self) -> np.ndarray:
        mask = np.zeros(self._game.num_actions, dtype=np.bool_)
        mask[: self._game.num_legal(self.path)] = True
        return mask

    def play(self, action: int) -> PathState:
        if not 0 <= action < self._game.num_legal(self.path):
            raise IllegalMoveError(f"illegal move {action} at {self.path}")
        return PathState(self._game, (*self.path, int(action)))

    def outcome(self) -> float:
        if not self.is_terminal:
            raise ValueError("outcome() of a game that is not over")
        return self._game.outcome(self.path)

    def __repr__(self) -> str:
        return f"<PathState {self.path}>"


class PathGame(Game):
    """A game whose positions are action paths; subclasses say what is legal and who won."""

    encoder_version = 1
    observation_shape = (1, 1, 1)

    def num_legal(self, path: tuple[int, ...]) -> int:
        raise NotImplementedError

    def outcome(self, path: tuple[int, ...]) -> float:
        raise NotImplementedError

    def initial_state(self) -> PathState:
        return PathState(self, ())

    def encode(self, state: State) -> np.ndarray:
        assert isinstance(state, PathState)
        return np.full(self.observation_shape, hash(state.path) % 1000, dtype=np.float32)

    def action_to_text(self, state: State, action: int) -> str:
        return str(action)

    def text_to_action(self, state: State, text: str) -> int:
        return int(text)


class TreeGame(PathGame):
    """An explicit tree: ``legal[path]`` = number of actions at an inner node, ``outcomes[path]``
    = result (player 0's view) at a leaf."""

    name = "tree"

    def __init__(self, legal: dict[tuple[int, ...], int], outcomes: dict[tuple[int, ...], float]) -> None:
        self.legal = legal
        self.outcomes = outcomes
        self.num_actions = max(legal.values())

    def num_legal(self, path: tuple[int, ...]) -> int:
        return self.legal.get(path, 0)

    def outcome(self, path: tuple[int, ...]) -> float:
        return self.outcomes[path]


class WideGame(PathGame):
    """Every one of ``num_actions`` actions is legal until ``depth`` moves; then a draw."""

    name = "wide"

    def __init__(self, num_actions: int = 20, depth: int = 8) -> None:
        self.num_actions = num_actions
        self.depth = depth

    def num_legal(self, path: tuple[int, ...]) -> int:
        return self.num_actions if len(path) < self.depth else 0

    def outcome(self, path: tuple[int, ...]) -> float:
        return 0.0


class ScriptedEvaluator:
    """Evaluator from functions of a state: logits, action values and optionally a value.

    Records every batch (``batches``: list of batch sizes, ``seen``: evaluated states) and
    optionally sleeps ``delay`` seconds per batch to stand in for a network.
    """

    def __init__(
        self,
        game: Game,
        logits: Callable[[State], np.ndarray] | None = None,
        action_values: Callable[[State], np.ndarray] | None = None,
        value: Callable[[State], float] | None = None,
        delay: float = 0.0,
    ) -> None:
        self.game = game
        zeros = np.zeros(game.num_actions, dtype=np.float32)
        self.logits = logits or (lambda state: zeros)
        self.action_values = action_values or (lambda state: zeros)
        self.value = value
        self.delay = delay
        self.batches: list[int] = []
        self.seen: list[State] = []

    def evaluate(self, states: Sequence[State]) -> Evaluation:
        if self.delay:
            time.sleep(self.delay)
        assert not any(s.is_terminal for s in states), "the search asked to evaluate a terminal state"
        self.batches.append(len(states))
        self.seen.extend(states)
        masks = np.stack([s.legal_mask() for s in states])
        logits = np.stack([np.asarray(self.logits(s), dtype=np.float32) for s in states])
        q = np.stack([np.asarray(self.action_values(s), dtype=np.float32) for s in states])
        logits, q = apply_legal_mask(logits, q, masks)
        value = None if self.value is None else np.array([self.value(s) for s in states], dtype=np.float32)
        return Evaluation(logits, q, value)
