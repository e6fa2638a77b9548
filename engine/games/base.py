"""The game contract every other part of klent is written against.

A `Game` knows the rules, the size of the action space, the observation shape and the move
notation; a `State` is an immutable position (``play`` returns a new state).  Search,
self-play, the protocols and the server only ever talk to games through this module, so a new
game is playable everywhere once it implements these two classes.

Values and outcomes follow one convention throughout klent: player 0 moves first (Black in Go,
White in chess); ``State.outcome()`` is from player 0's view (+1 win, 0 draw, -1 loss).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np


class IllegalMoveError(ValueError):
    """A move that the rules forbid in the given position (the message names the move)."""


class GameFormatError(ValueError):
    """Malformed game text: a FEN, an SGF record or a move string that cannot be parsed."""


class State(ABC):
    """An immutable game position.

    Subclasses keep whatever they need (board, history, hashes); the public surface is the
    handful of members below.  ``play`` never mutates ``self``.
    """

    __slots__ = ()

    @property
    @abstractmethod
    def game(self) -> Game:
        """The game whose rules this position follows."""

    @property
    @abstractmethod
    def to_play(self) -> int:
        """0 if the first player (Black in Go, White in chess) is to move, else 1."""

    @property
    @abstractmethod
    def move_number(self) -> int:
        """Number of moves played since the initial state (passes count)."""

    @abstractmethod
    def legal_mask(self) -> np.ndarray:
        """``np.bool_[game.num_actions]``; all False in a terminal state."""

    def legal_actions(self) -> np.ndarray:
        """Indices of the legal actions, ascending."""
        return np.flatnonzero(self.legal_mask())

    @abstractmethod
    def play(self, action: int) -> State:
        """The position after ``action``; raises `IllegalMoveError` if it is not legal."""

    @property
    @abstractmethod
    def is_terminal(self) -> bool:
        """True once the game is over, by the rules or by the move cap."""

    @property
    def is_truncated(self) -> bool:
        """True when the game ended only because of the move cap.

        The outcome is still defined (Go scores the board, chess calls it a draw), but a learner
        should bootstrap from its value estimate instead of trusting that result.
        """
        return False

    @abstractmethod
    def outcome(self) -> float:
        """Result from player 0's view: +1, 0 or -1.  Raises ValueError if not terminal."""

    def reward_for(self, player: int) -> float:
        """The terminal result from ``player``'s view."""
        result = self.outcome()
        return result if player == 0 else -result


class Game(ABC):
    """Rules, action space, observation encoder and move notation of one game.

    ``name`` identifies the rules and the action/observation layout a model was trained for
    (``"go9"``, ``"chess"``, ``"countup"``); parameters that do not change that layout, such as
    komi, are not part of it.  ``encoder_version`` changes whenever ``encode`` changes, so a
    model trained on an older encoding is refused instead of silently misread -- unless the game
    can still produce that encoding (`with_encoder`: Go keeps version 1 beside version 2).
    """

    name: str
    num_actions: int
    observation_shape: tuple[int, int, int]
    encoder_version: int
    # When actions are laid out point-major over the observation's board (action = point *
    # planes + plane, point = row * width + column), their number of planes: a network may
    # then emit actions as convolution planes (chess: 73).  None: no such layout (Go's pass).
    action_planes: int | None = None

    @abstractmethod
    def initial_state(self) -> State:
        """The position every game starts from."""

    @abstractmethod
    def encode(self, state: State) -> np.ndarray:
        """``np.float32[C, H, W]`` observation of ``state`` from the side to move's view."""

    def encode_batch(self, states: Sequence[State]) -> np.ndarray:
        """``np.float32[B, C, H, W]``; games override this when a batched encoder is faster."""
        out = np.empty((len(states), *self.observation_shape), dtype=np.float32)
        for i, state in enumerate(states):
            out[i] = self.encode(state)
        return out

    def symmetries(self) -> np.ndarray:
        """``int64[S, A]``: row s maps each action to its image under symmetry s.

        Symmetry s maps observations through ``engine.games.symmetry.dihedral(obs, s)``.  Row 0
        is the identity; games whose rules have no board symmetry (chess: castling, pawn
        direction) keep this default of the identity alone.
        """
        return np.arange(self.num_actions, dtype=np.int64)[None]

    @abstractmethod
    def action_to_text(self, state: State, action: int) -> str:
        """Move notation of ``action`` in ``state`` ("D4", "pass", "e2e4", "+1")."""

    @abstractmethod
    def text_to_action(self, state: State, text: str) -> int:
        """Inverse of `action_to_text`; raises `GameFormatError` or `IllegalMoveError`."""

    def with_encoder(self, version: int) -> Game:
        """This game with observations in encoder ``version`` (a model's); ValueError when this
        klent cannot produce that version.  Games with one encoder have only their own."""
        if version != self.encoder_version:
            raise ValueError(f"this klent encodes {self.name} with version {self.encoder_version} only, not {version}")
        return self

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
