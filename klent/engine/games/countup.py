"""The count-up game of the KLENT paper's appendix L.

Two players alternately add 1..k to a counter that starts at 0; whoever brings it to N or
beyond wins.  It is small enough that its optimal strategy and its quantal response
equilibrium can be computed exactly by backward induction, which makes it the trainer's
convergence test (appendix L: KLENT converges to the QRE).

Action ``a`` adds ``a + 1``.  The observation is a one-hot of the counter on a 1x1 board.
"""

from __future__ import annotations

import numpy as np

from klent.engine.games.base import Game, GameFormatError, IllegalMoveError, State


class CountUpState(State):
    """Counter value, side to move and the number of moves made."""

    __slots__ = ("_game", "count", "_move_number")

    def __init__(self, game: CountUpGame, count: int, move_number: int) -> None:
        self._game = game
        self.count = count
        self._move_number = move_number

    @property
    def game(self) -> CountUpGame:
        return self._game

    @property
    def to_play(self) -> int:
        return self._move_number % 2

    @property
    def move_number(self) -> int:
        return self._move_number

    @property
    def is_terminal(self) -> bool:
        return self.count >= self._game.target

    def legal_mask(self) -> np.ndarray:
        return np.full(self._game.num_actions, not self.is_terminal, dtype=np.bool_)

    def play(self, action: int) -> CountUpState:
        if self.is_terminal or not 0 <= action < self._game.num_actions:
            raise IllegalMoveError(f"illegal move {action!r} at count {self.count}")
        return CountUpState(self._game, self.count + int(action) + 1, self._move_number + 1)

    def outcome(self) -> float:
        if not self.is_terminal:
            raise ValueError("outcome() of a game that is not over")
        # The player who made the last move reached the target and won.
        winner = (self._move_number - 1) % 2
        return 1.0 if winner == 0 else -1.0

    def __repr__(self) -> str:
        return f"<CountUpState count={self.count} to_play={self.to_play}>"


class CountUpGame(Game):
    """Count-up with target ``target`` (N) and at most ``max_step`` (k) per move."""

    encoder_version = 1

    def __init__(self, target: int = 7, max_step: int = 2) -> None:
        if target < 1 or max_step < 1:
            raise ValueError("count-up needs target >= 1 and max_step >= 1")
        self.target = target
        self.max_step = max_step
        self.name = "countup" if (target, max_step) == (7, 2) else f"countup{target}_{max_step}"
        self.num_actions = max_step
        self.observation_shape = (target, 1, 1)

    def initial_state(self) -> CountUpState:
        return CountUpState(self, 0, 0)

    def encode(self, state: State) -> np.ndarray:
        assert isinstance(state, CountUpState)
        obs = np.zeros(self.observation_shape, dtype=np.float32)
        obs[min(state.count, self.target - 1), 0, 0] = 1.0
        return obs

    def action_to_text(self, state: State, action: int) -> str:
        return f"+{int(action) + 1}"

    def text_to_action(self, state: State, text: str) -> int:
        try:
            step = int(text.strip().lstrip("+"))
        except ValueError:
            raise GameFormatError(f"not a count-up move: {text!r}") from None
        action = step - 1
        if not 0 <= action < self.num_actions or state.is_terminal:
            raise IllegalMoveError(f"illegal move {text!r} at count {getattr(state, 'count', '?')}")
        return action
