"""What the board games' rules have in common, written once for all of them.

Go, Hex and Othello on one side, chess, Gardner chess and Animal Shogi on the other, implement
`klent.engine.games.base`'s contract the same way in several places: a state knows its game, the
side to move and the move number; a game writes its observation into an array it is given, so
that a batch is encoded in place; and the chess-like games (`PieceState`, `PieceGame`) keep the
legal mask and the way the game ended in the state, read positions from FEN and name illegal
moves alike.  Those pieces live here so that a fix to one of them is a fix for every game.
"""

from __future__ import annotations

from abc import abstractmethod
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar, cast

import numpy as np

from klent.engine.games.base import FenGame, Game, GameFormatError, IllegalMoveError, State

G = TypeVar("G", bound=Game)
S = TypeVar("S", bound="PieceState[Any]")
H = TypeVar("H", bound="HistoryState[Any]")


class BoardState(State, Generic[G]):
    """A position that stores its game (``G``, so that `game` has the game's own type), the
    side to move and the number of moves played since the start position of its record."""

    __slots__ = ("_game", "_to_play", "_move_number")
    _game: G
    _to_play: int
    _move_number: int

    @property
    def game(self) -> G:
        return self._game

    @property
    def to_play(self) -> int:
        return self._to_play

    @property
    def move_number(self) -> int:
        return self._move_number

    def __repr__(self) -> str:
        side = "Black" if self._to_play == 0 else "White"
        return f"<{type(self).__name__} {self._game.name} move {self._move_number}, {side} to play>"


def read_only_board(flat: np.ndarray, size: int) -> np.ndarray:
    """A flat board as the read-only ``[size, size]`` view that `State.board` hands out (a
    caller cannot change the position behind the state's back)."""
    view = flat.reshape(size, size)
    view.flags.writeable = False
    return view


def board_point(action: int, size: int, special: int, game: str) -> tuple[int, int] | None:
    """(row, column) of a point of a square board game's action, None for its one action off
    the board (``special``: Go's and Othello's pass, Hex's swap); raises `IllegalMoveError`
    for an action the game does not have, which each game's notation would otherwise misprint."""
    action = int(action)
    if action == special:
        return None
    if not 0 <= action < special:
        raise IllegalMoveError(f"action {action} is not a move of {game} (0..{special})")
    return divmod(action, size)


def setup_board(
    size: int, black: Iterable[int], white: Iterable[int], to_play: int, notation: Callable[[int], str], piece: str
) -> np.ndarray:
    """The flat board of a set-up position of a square board game: +1 on ``black``'s points, -1
    on ``white``'s.  Raises `GameFormatError` for a point off the board or given twice (named
    in the game's ``notation``, the ``piece`` being "stone" or "disc"), and ValueError for a
    side to move other than 0 or 1."""
    board = np.zeros(size * size, dtype=np.int8)
    for points, color in ((black, 1), (white, -1)):
        for point in points:
            point = int(point)
            if not 0 <= point < board.size:
                raise GameFormatError(f"set-up {piece} {point} is off the {size}x{size} board")
            if board[point] != 0:
                raise GameFormatError(f"set-up point {notation(point)} is given twice")
            board[point] = color
    if to_play not in (0, 1):
        raise ValueError(f"to_play must be 0 (Black) or 1 (White), not {to_play!r}")
    return board


class BoardGame(Game):
    """A game whose encoder fills an array it is given (`_encode_into`): `encode` allocates one
    observation, `encode_batch` writes each state straight into its row of the batch."""

    def encode(self, state: State) -> np.ndarray:
        out = np.empty(self.observation_shape, dtype=np.float32)
        self._encode_into(state, out)
        return out

    def encode_batch(self, states: Sequence[State]) -> np.ndarray:
        out = np.empty((len(states), *self.observation_shape), dtype=np.float32)
        for i, state in enumerate(states):
            self._encode_into(state, out[i])
        return out

    @abstractmethod
    def _encode_into(self, state: State, out: np.ndarray) -> None:
        """Write the observation of ``state`` into ``out`` (``float32[observation_shape]``)."""


class PieceState(BoardState[G]):
    """A position of a chess-like game (chess, Gardner chess, Animal Shogi): its legal mask
    is computed once, when the position is made, and kept read-only; the game's ending, if it
    has ended, is a name (`termination`); the position is written in FEN.

    Subclasses set ``_repetitions`` and ``_termination`` and then hand the mask to
    `_keep_mask`.  A checkmate loses for the side to move, every other ending is a draw
    unless the subclass says otherwise (`outcome`).
    """

    __slots__ = ("_repetitions", "_mask", "_termination")
    _repetitions: int
    _mask: np.ndarray
    _termination: str | None

    def _keep_mask(self, mask: np.ndarray) -> None:
        """Keep ``mask`` as the legal mask: emptied when the game is over, and read-only, since
        every caller of `legal_mask` shares it."""
        if self._termination is not None:
            mask[:] = False
        mask.flags.writeable = False
        self._mask = mask

    @property
    def repetitions(self) -> int:
        """How many times this exact position occurred earlier in the part of the record the
        game's repetition rule looks at."""
        return self._repetitions

    @property
    def termination(self) -> str | None:
        """Why the game is over ("checkmate", "stalemate", "move_cap" and the game's own
        draws and wins, which its state class lists); None while it goes on."""
        return self._termination

    @property
    def is_terminal(self) -> bool:
        return self._termination is not None

    @property
    def is_truncated(self) -> bool:
        return self._termination == "move_cap"

    def outcome(self) -> float:
        if self._termination is None:
            raise ValueError("outcome() of a game that is not over")
        if self._termination == "checkmate":
            return -1.0 if self._to_play == 0 else 1.0
        return 0.0

    def legal_mask(self) -> np.ndarray:
        """``np.bool_[game.num_actions]``, read-only (it is shared by every caller); copy it to
        modify it."""
        return self._mask

    @abstractmethod
    def play(self: S, action: int) -> S:
        """The position after ``action``; `IllegalMoveError` (`_illegal_message`) if it is not legal."""

    @abstractmethod
    def fen(self) -> str:
        """The position in FEN, as the game's reference engine writes it."""

    def _over(self) -> str:
        """The end of an illegal-move message: why nothing is legal, when the game is over."""
        return f"; the game is over ({self._termination})" if self._termination else ""

    def _illegal_message(self, action: int) -> str:
        try:
            text = repr(self._game.action_to_text(self, action))
        except IllegalMoveError:
            text = "(no such move)"
        return f"illegal move {text} (action {action}) in {self.fen()}{self._over()}"

    def _illegal_move(self, move: str, why: str = "") -> IllegalMoveError:
        """The error for the move text ``move``, which is not legal here (``why``: the reason,
        when there is one to tell)."""
        return IllegalMoveError(f"illegal move {move!r} in {self.fen()}{why}{self._over()}")

    def after(self: S, moves: Iterable[str]) -> S:
        """The position after the moves, given as text; an illegal or unreadable move raises
        `IllegalMoveError` / `GameFormatError` saying which move of the list it is."""
        state = self
        for number, text in enumerate(moves, start=1):
            try:
                state = cast(S, state.play_in_record(state._game.text_to_action(state, text)))
            except (IllegalMoveError, GameFormatError) as error:
                raise type(error)(f"move {number} of the list: {error}") from None
        return state

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.fen()}>"


class RepetitionTable:
    """Where each position of one game record occurred: for each position key, the indices
    (plies from the record's first position) at which it did, one dict per parity of the
    index, since a position only repeats one with the same side to move.

    A record's positions (`HistoryState.play_in_record`) point into their table, so a
    position counts its earlier occurrences by walking back only to the first record position
    on its way (one step for a move searched from the record's last position) and reading the
    rest from the table: linear time for a record of any length, where walking the whole chain
    at every move is quadratic.  A table is only appended to; two records that share their
    first positions share its entries, and a record that leaves another's line gets a table
    of its own.
    """

    __slots__ = ("keys", "plies")

    def __init__(self) -> None:
        self.keys: list[bytes] = []  # the key of the position at each index
        self.plies: tuple[dict[bytes, list[int]], dict[bytes, list[int]]] = ({}, {})

    def append(self, key: bytes) -> int:
        """Index the next position of the record; returns its index."""
        index = len(self.keys)
        self.keys.append(key)
        self.plies[index % 2].setdefault(key, []).append(index)
        return index

    def occurrences(self, key: bytes, index: int) -> int:
        """How many positions of the record up to ``index`` (included) of its parity have ``key``."""
        return bisect_right(self.plies[index % 2].get(key, ()), index)


class HistoryState(PieceState[G]):
    """A `PieceState` of a game whose rules klent keeps itself (Gardner chess, Animal Shogi):
    the FEN's move counters, the chain of earlier positions a repetition can come from, and
    the observation rows of the last 8 positions as one bytes object.

    A chain node is ``(key, in_check, parent node, node two plies back, table, index)``: a
    position can only repeat one with the same side to move, so counting repetitions walks
    every other position only, back to the first that belongs to a record's
    `RepetitionTable` (``table``, at ``index``; None for a searched position), which counts the
    rest; the game cuts the chain (``parent_keys`` None) where its rules stop looking back.
    A position's observation row is its key followed by its repetition count (at most 2).
    """

    __slots__ = ("_ply", "_halfmove", "_keys", "_history")
    _keys: tuple  # this position's chain node (above)

    def __init__(
        self,
        game: G,
        key: bytes,
        colour: int,
        ply: int,
        move_number: int,
        halfmove: int,
        in_check: bool,
        parent_keys: tuple | None,
        parent_history: bytes,
    ) -> None:
        self._game = game
        self._to_play = colour
        self._ply = ply  # plies since the game's start, as the FEN's move counters say
        self._move_number = move_number  # plies since the start of this record
        self._halfmove = halfmove  # the FEN's half-move clock
        same_side = parent_keys[2] if parent_keys is not None else None
        repetitions = 0
        node = same_side
        while node is not None:
            if node[4] is not None:  # a record's position: its table counts it and those before
                repetitions += node[4].occurrences(key, node[5])
                break
            repetitions += node[0] == key
            node = node[3]
        self._repetitions = repetitions
        self._keys = (key, in_check, parent_keys, same_side, None, 0)
        self._history = key + bytes((min(repetitions, 2),)) + parent_history[: -len(key) - 1]

    def play_in_record(self: H, action: int) -> H:
        """`play`, the new position indexed in its record's `RepetitionTable`: this position's
        table when it is the table's last (or the next is the same position), else a new table
        of the whole chain."""
        child = self.play(action)
        key, in_check, parent, same_side = child._keys[:4]
        table, index = self._keys[4], self._keys[5]
        if parent is None:  # the game cut the chain here: a record starts afresh
            table = RepetitionTable()
        elif table is None or (len(table.keys) > index + 1 and table.keys[index + 1] != key):
            table = RepetitionTable()
            chain = []
            node = parent
            while node is not None:
                chain.append(node[0])
                node = node[2]
            for earlier in reversed(chain):
                table.append(earlier)
        if parent is not None and len(table.keys) > index + 1 and table is self._keys[4]:
            child._keys = (key, in_check, parent, same_side, table, index + 1)
        else:
            child._keys = (key, in_check, parent, same_side, table, table.append(key))
        return child

    def _fen_counters(self) -> str:
        """The FEN's last two fields: the half-move clock and the move number."""
        return f"{self._halfmove} {self._ply // 2 + 1}"


class PieceGame(FenGame, BoardGame):
    """The game of `PieceState` positions: ``max_moves`` caps a game (plies after the start
    position of its record, as a draw with ``is_truncated``; None: no cap)."""

    def __init__(self, max_moves: int | None) -> None:
        if max_moves is not None and max_moves < 1:
            raise ValueError("max_moves must be a positive number of plies or None")
        self.max_moves = max_moves

    def fen(self, state: State) -> str:
        assert isinstance(state, PieceState)
        return state.fen()


def fen_placement(board: np.ndarray, files: int, letters: Sequence[str]) -> str:
    """The board field of a FEN: the ranks from the top, separated by "/", each square a
    piece's letter (``letters[type - 1]``, upper case for the first player's pieces, whose
    types are positive) or a count of empty squares.  ``board`` is rank-major from a1."""
    ranks = []
    for rank in range(len(board) // files - 1, -1, -1):
        text, empty = "", 0
        for piece in board[rank * files : (rank + 1) * files]:
            if piece == 0:
                empty += 1
                continue
            letter = letters[abs(piece) - 1]
            text += (str(empty) if empty else "") + (letter.upper() if piece > 0 else letter)
            empty = 0
        ranks.append(text + (str(empty) if empty else ""))
    return "/".join(ranks)


def step_squares(action: int, colour: int, move_from: np.ndarray, move_to: np.ndarray) -> tuple[int, int]:
    """The squares a piece of ``colour`` moves from and to by ``action``, by the game's tables
    (``[colour, action]``, -1 where the action leads off the board); `IllegalMoveError` when
    the action is no move on the board."""
    if not 0 <= action < move_from.shape[1]:
        raise IllegalMoveError(f"action {action} is outside 0..{move_from.shape[1] - 1}")
    frm, to = int(move_from[colour, action]), int(move_to[colour, action])
    if frm < 0:
        raise IllegalMoveError(f"action {action} leads off the board")
    return frm, to
