"""The game contract every other part of klent is written against.

A `Game` knows the rules, the size of the action space, the observation shape and the move
notation; a `State` is an immutable position (``play`` returns a new state).  Search,
self-play, the protocols and the server only ever talk to games through this module, so a new
game is playable everywhere once it implements these two classes.  That includes how positions
are written: a game starts a record from the notations it reads (`Setup`: FEN, SGF, komi;
`start_state`) and names its players, results and board (`player_names`, `result_text`,
`board_rows`, `fen`), so that the server and the protocols need no per-game code.

Values and outcomes follow one convention throughout klent: player 0 moves first (Black in Go,
White in chess); ``State.outcome()`` is from player 0's view (+1 win, 0 draw, -1 loss).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

# The largest FEN move counter read (half-move clock, move number): a signed 64-bit integer, as
# C engines read them.  A larger one passed the FEN readers and overflowed the encoder's floats.
MAX_FEN_COUNTER = 2**63 - 1


class IllegalMoveError(ValueError):
    """A move that the rules forbid in the given position (the message names the move)."""


class GameFormatError(ValueError):
    """Malformed game text: a FEN, an SGF record or a move string that cannot be parsed."""


class SetupError(GameFormatError):
    """A `Setup` a game cannot start from; ``field`` names the part at fault ("fen", "sgf", "komi")."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Setup:
    """Where a record starts, in the notations klent reads: a FEN (chess and its relatives), an
    SGF record and a komi (Go); None where not given, and all None for the initial position.

    Clients (the HTTP API) pass what they received and `Game.start_state` decides what its
    game can read, so nothing outside a game needs to know which game takes which notation.
    """

    fen: str | None = None
    sgf: str | None = None
    komi: float | None = None


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

    def play_in_record(self, action: int) -> State:
        """`play` for a move of a game's record (the moves a protocol is given), not of a
        search: the same position.  A game that counts repetitions over a whole record
        (`klent.engine.games.board_games.HistoryState`) also indexes the record's positions,
        so that playing a long record takes linear time rather than quadratic."""
        return self.play(action)

    @property
    @abstractmethod
    def is_terminal(self) -> bool:
        """True once the game is over, by the rules or by the move cap."""

    @property
    def is_claimable_draw(self) -> bool:
        """True where a player may claim a draw but the game, whose rules leave claims to an
        arbiter, goes on (chess without ``claim_draws``: threefold repetition, fifty moves).
        The record plays on; a search values such a position it reaches as a draw."""
        return False

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
    # The `Setup` fields `start_state` reads; any other one given is refused (`SetupError`).
    setup_fields: tuple[str, ...] = ()
    # What the players are called, player 0 (who moves first) first.
    player_names: tuple[str, str] = ("black", "white")
    # `result_text` of a finished game that player 0 won, drew, lost.
    result_names: tuple[str, str, str] = ("first player wins", "draw", "second player wins")
    # When actions are laid out point-major over the observation's board (action = point *
    # planes + plane, point = row * width + column), their number of planes: a network may
    # then emit actions as convolution planes (chess: 73).  None: no such layout (Go's pass).
    action_planes: int | None = None

    @abstractmethod
    def initial_state(self) -> State:
        """The position every game starts from."""

    def start_state(self, setup: Setup) -> State:
        """The position ``setup`` describes (the initial one when it gives nothing).

        Raises `SetupError` naming the field at fault: one this game does not read, or one it
        cannot parse (the message says why).
        """
        for field in fields(setup):
            if getattr(setup, field.name) is not None and field.name not in self.setup_fields:
                takes = " / ".join((*self.setup_fields, "moves"))
                raise SetupError(field.name, f"{self.name} positions take {takes} only, not {field.name}")
        return self._start_state(setup)

    def _start_state(self, setup: Setup) -> State:
        """`start_state` once ``setup`` is known to hold only fields of `setup_fields`; games
        that have any override this."""
        return self.initial_state()

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

        Symmetry s maps observations through ``klent.engine.games.symmetry.dihedral(obs, s)``.  Row 0
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

    def result_text(self, state: State) -> str | None:
        """The result of a finished game in the game's usual notation; None while it goes on."""
        if not state.is_terminal:
            return None
        outcome = state.outcome()
        return self.result_names[0 if outcome > 0 else 2 if outcome < 0 else 1]

    def board_rows(self, state: State) -> list[str]:
        """The board as text rows from the top, one character per point, for clients that draw
        it; empty for games that have no such picture."""
        return []

    def fen(self, state: State) -> str | None:
        """``state`` in FEN; None for games that have no FEN (see `FenGame`)."""
        return None

    def with_encoder(self, version: int) -> Game:
        """This game with observations in encoder ``version`` (a model's); ValueError when this
        klent cannot produce that version.  Games with one encoder have only their own."""
        if version != self.encoder_version:
            raise ValueError(f"this klent encodes {self.name} with version {self.encoder_version} only, not {version}")
        return self

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class FenGame(Game):
    """A game whose positions are written in FEN (chess, Gardner chess, Animal Shogi).

    A record may start from a FEN, every position is described by one, and the FEN's colours
    name the players (White moves first) and its results (PGN's "1-0", "0-1", "1/2-1/2").
    """

    setup_fields = ("fen",)
    player_names = ("white", "black")
    result_names = ("1-0", "1/2-1/2", "0-1")

    @abstractmethod
    def from_fen(self, fen: str) -> State:
        """The position of ``fen``; `GameFormatError` says why a FEN cannot be read."""

    @abstractmethod
    def fen(self, state: State) -> str:
        """``state`` in FEN."""

    def _start_state(self, setup: Setup) -> State:
        if setup.fen is None:
            return self.initial_state()
        try:
            return self.from_fen(setup.fen)
        except GameFormatError as error:
            raise SetupError("fen", str(error)) from None
