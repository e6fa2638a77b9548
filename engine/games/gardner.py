"""Gardner chess: 5x5 minichess, with Pgx's AlphaZero-style actions and observation.

Rules (Fairy-Stockfish's variant ``gardner``, which the tests play against move by move):

* the start position is ``rnbqk/ppppp/5/PPPPP/RNBQK w``: White's king on e1, queen on d1,
  Black's king on e5, queen on d5; White (player 0) moves first;
* the pieces move as in chess; there is no castling and no double pawn step, hence no en
  passant; a pawn reaching the last rank promotes to a queen, rook, bishop or knight;
* checkmate loses, stalemate is a draw;
* the game is drawn at the third occurrence of a position (same board and side to move)
  since the last capture or pawn move, and after 100 plies without capture or pawn move
  unless that last move mated.  Fairy-Stockfish counts both exactly so (``nFoldRule = 3``,
  ``nMoveRule = 50``) but leaves them to the arbiter, as claims; with ``claim_draws``
  (default True, for self-play) klent ends the game at once, without it (what a UCI engine
  wants) never.  Like Fairy-Stockfish, klent has no insufficient-material rule (Pgx has);
* ``max_moves`` (default 256 plies, Pgx's cap; None for none) ends the game as a draw with
  ``is_truncated`` set.

Actions (``num_actions`` = 1225 = 25 x 49, Pgx's layout), seen from the side to move:
squares are numbered a1 = 0 .. e5 = 24 in the side to move's frame, which is the board for
White and the board flipped vertically (ranks reversed) for Black, so both sides' pawns move
"up".  ``action = from_square_in_frame * 49 + plane`` with

* planes 0..31, queen-like moves: ``plane = 4 * direction + (distance - 1)``, directions
  0..7 = N, NE, E, SE, S, SW, W, NW (N towards the opponent), distance 1..4; king moves and
  promotions to a queen use these;
* planes 32..39, knight moves: ``plane = 32 + k`` for the (rank, file) steps (+2,+1), (+1,+2),
  (-1,+2), (-2,+1), (-2,-1), (-1,-2), (+1,-2), (+2,-1);
* planes 40..48, underpromotions: ``plane = 40 + 3 * piece + direction`` with piece 0..2 =
  knight, bishop, rook and direction 0..2 = capture towards the a-file, straight ahead,
  capture towards the e-file.

Move text is UCI as Fairy-Stockfish writes it: "b1c3", "a4a5q", "a4a5n".

Observation (encoder version 1, Pgx's Gardner observation laid out channels-first, shape
(115, 5, 5)), from the side to move's view: ``obs[p, rank, file]`` with rank 0 the side to
move's own back rank.  Planes ``14 * i .. 14 * i + 13`` describe the position ``i`` plies ago
(i = 0..7; zeros before the first position of the record): the side to move's pawns,
knights, bishops, rooks, queens and king, the opponent's six, then two repetition planes
(ones when that position had occurred at least once / twice before).  Plane 112 is ones when
Black is to move, 113 the plies since the start of the game (as the FEN's move number tells)
/ 256, capped at 1, and 114 the plies without capture or pawn move / 100.

Symmetries: none.  Pawns fix the vertical direction, and the left-right mirror, although it
commutes with the moves (no castling, no en passant), puts the kings on the a-file: mirrored
games start from a position Gardner chess never reaches, so `symmetries` keeps the identity.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from engine.games import gardner_kernels as k
from engine.games.base import FenGame, GameFormatError, IllegalMoveError, State

START_FEN = "rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1"
FILES = "abcde"
PIECE_LETTERS = "pnbrqk"  # index + 1 = piece type
MOVE_COUNT_SCALE = 256.0
NO_PROGRESS_SCALE = 100.0
_EMPTY_HISTORY = bytes(k.HISTORY * k.POSITION_BYTES)  # the observation rows before a record starts
_MOVE_TEXT = re.compile(r"([a-e][1-5])([a-e][1-5])([nbrq]?)")


def square_name(square: int) -> str:
    """"a1" .. "e5" for squares 0 .. 24."""
    return FILES[square % k.SIZE] + str(square // k.SIZE + 1)


class GardnerState(State):
    """A Gardner chess position with what the rules and the observation need from its past.

    Holds the board (``int8[25]``, never written once the state exists), the repetition keys
    since the last capture or pawn move (a linked list shared with the ancestors), the
    observation rows of the last 8 positions, the legal action mask and how the game ended,
    if it did.  Build states with `GardnerGame.initial_state`, `GardnerGame.from_fen` and
    `play`.
    """

    __slots__ = (
        "_game",
        "_board",
        "_colour",
        "_ply",
        "_move_number",
        "_halfmove",
        "_keys",
        "_repetitions",
        "_history",
        "_mask",
        "_termination",
    )

    def __init__(
        self,
        game: GardnerGame,
        board: np.ndarray,
        colour: int,
        ply: int,
        move_number: int,
        halfmove: int,
        mask: np.ndarray,
        moves: int,
        in_check: bool,
        parent_keys: tuple | None,
        parent_history: bytes,
    ) -> None:
        self._game = game
        self._board = board
        self._colour = colour
        self._ply = ply  # plies since the game's start, as the FEN's move counters say
        self._move_number = move_number  # plies since the start of this record
        self._halfmove = halfmove  # plies since the last capture or pawn move
        key = board.tobytes()
        # A position can only repeat one played an even number of plies earlier (same side to
        # move) since the last irreversible move; the caller passes None after one.  Each node
        # links to the one two plies back.
        same_side = parent_keys[1] if parent_keys is not None else None
        repetitions = 0
        node = same_side
        while node is not None:
            repetitions += node[0] == key
            node = node[2]
        self._keys = (key, parent_keys, same_side)
        self._repetitions = repetitions
        self._history = key + bytes((min(repetitions, 2),)) + parent_history[: -k.POSITION_BYTES]
        self._termination = self._ending(moves, in_check)
        if self._termination is not None:
            mask[:] = False
        mask.flags.writeable = False
        self._mask = mask

    def _ending(self, moves: int, in_check: bool) -> str | None:
        """How the game ended in this position, or None.  Checkmate takes precedence."""
        if moves == 0:
            return "checkmate" if in_check else "stalemate"
        if self._game.claim_draws and self._halfmove >= 2 * 50:
            return "fifty_moves"
        if self._game.claim_draws and self._repetitions >= 2:
            return "threefold_repetition"
        if self._game.max_moves is not None and self._move_number >= self._game.max_moves:
            return "move_cap"
        return None

    @property
    def game(self) -> GardnerGame:
        return self._game

    @property
    def to_play(self) -> int:
        """0 when White is to move, 1 when Black is."""
        return self._colour

    @property
    def move_number(self) -> int:
        """Plies played since the start position of this record (the FEN, or the initial position)."""
        return self._move_number

    @property
    def repetitions(self) -> int:
        """How many times this exact position occurred earlier since the last capture or pawn move."""
        return self._repetitions

    @property
    def termination(self) -> str | None:
        """Why the game is over: "checkmate", "stalemate", "fifty_moves",
        "threefold_repetition" (the last two only with ``claim_draws``) or "move_cap"; None
        while it goes on."""
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
            return -1.0 if self._colour == 0 else 1.0
        return 0.0

    def legal_mask(self) -> np.ndarray:
        """``np.bool_[1225]``, read-only (it is shared by every caller); copy it to modify it."""
        return self._mask

    def play(self, action: int) -> GardnerState:
        if not 0 <= action < k.NUM_ACTIONS or not self._mask[action]:
            raise IllegalMoveError(self._illegal_message(action))
        child = np.empty(k.SQUARES, dtype=np.int8)
        mask = np.empty(k.NUM_ACTIONS, dtype=np.bool_)
        moves, in_check, irreversible = k.play(self._board, self._colour, action, child, mask)
        return GardnerState(
            self._game,
            child,
            1 - self._colour,
            self._ply + 1,
            self._move_number + 1,
            0 if irreversible else self._halfmove + 1,
            mask,
            moves,
            in_check,
            None if irreversible else self._keys,
            self._history,
        )

    def _illegal_message(self, action: int) -> str:
        try:
            text = repr(self._game.action_to_text(self, action))
        except IllegalMoveError:
            text = "(no such move)"
        over = f"; the game is over ({self._termination})" if self._termination else ""
        return f"illegal move {text} (action {action}) in {self.fen()}{over}"

    def fen(self) -> str:
        """The position as Fairy-Stockfish writes it ("rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1")."""
        ranks = []
        for rank in range(k.SIZE - 1, -1, -1):
            text, empty = "", 0
            for piece in self._board[rank * k.SIZE : (rank + 1) * k.SIZE]:
                if piece == 0:
                    empty += 1
                    continue
                letter = PIECE_LETTERS[abs(piece) - 1]
                text += (str(empty) if empty else "") + (letter.upper() if piece > 0 else letter)
                empty = 0
            ranks.append(text + (str(empty) if empty else ""))
        side = "wb"[self._colour]
        return f"{'/'.join(ranks)} {side} - - {self._halfmove} {self._ply // 2 + 1}"

    def __repr__(self) -> str:
        return f"<GardnerState {self.fen()}>"


class GardnerGame(FenGame):
    """Gardner chess with Pgx's encoding (see the module docstring).

    ``max_moves`` caps the game (plies after the start position of the record; None: no
    cap); ``claim_draws`` ends it at threefold repetition and at the fifty-move mark.
    """

    name = "gardner"
    num_actions = k.NUM_ACTIONS
    observation_shape = (k.NUM_CHANNELS, k.SIZE, k.SIZE)
    encoder_version = 1
    action_planes = k.NUM_PLANES  # action = from_square_in_frame * 49 + plane, squares as obs[:, rank, file]

    def __init__(self, max_moves: int | None = 256, claim_draws: bool = True) -> None:
        if max_moves is not None and max_moves < 1:
            raise ValueError("max_moves must be a positive number of plies or None")
        self.max_moves = max_moves
        self.claim_draws = claim_draws

    def initial_state(self) -> GardnerState:
        return self.from_fen(START_FEN)

    def from_fen(self, fen: str, moves: Sequence[str] = ()) -> GardnerState:
        """The position of ``fen`` (Fairy-Stockfish's form, castling and en passant "-";
        the two move counters may be left out) after the UCI ``moves``.

        A malformed FEN or an impossible position raises `GameFormatError`; an illegal or
        unreadable move raises `IllegalMoveError` / `GameFormatError` naming it.  History
        (repetitions, the observation's past positions) starts at ``fen``.
        """
        board, colour, halfmove, fullmove = _parse_fen(fen)
        mask = np.empty(k.NUM_ACTIONS, dtype=np.bool_)
        count, in_check = k.generate(board, colour, mask)
        ply = 2 * (fullmove - 1) + colour
        state = GardnerState(self, board, colour, ply, 0, halfmove, mask, count, in_check, None, _EMPTY_HISTORY)
        for number, text in enumerate(moves, start=1):
            try:
                state = state.play(self.text_to_action(state, text))
            except (IllegalMoveError, GameFormatError) as error:
                raise type(error)(f"move {number} of the list: {error}") from None
        return state

    def fen(self, state: State) -> str:
        assert isinstance(state, GardnerState)
        return state.fen()

    def encode(self, state: State) -> np.ndarray:
        out = np.empty(self.observation_shape, dtype=np.float32)
        self._encode_into(state, out)
        return out

    def encode_batch(self, states: Sequence[State]) -> np.ndarray:
        out = np.empty((len(states), *self.observation_shape), dtype=np.float32)
        for i, state in enumerate(states):
            self._encode_into(state, out[i])
        return out

    def _encode_into(self, state: State, out: np.ndarray) -> None:
        assert isinstance(state, GardnerState)
        history = np.frombuffer(state._history, dtype=np.int8)
        move_count = min(state._ply / MOVE_COUNT_SCALE, 1.0)
        k.encode(history, state._colour, move_count, state._halfmove / NO_PROGRESS_SCALE, out)

    def action_to_text(self, state: State, action: int) -> str:
        """UCI text of ``action`` in ``state``, legal or not ("b1c3", "a4a5q", "a4a5n").

        A queen-like step of a pawn of the side to move onto the last rank is a queen
        promotion.  An action outside 0..1224 or leading off the board raises
        `IllegalMoveError`.
        """
        assert isinstance(state, GardnerState)
        if not 0 <= action < k.NUM_ACTIONS:
            raise IllegalMoveError(f"action {action} is outside 0..{k.NUM_ACTIONS - 1}")
        colour = state._colour
        frm, to = int(k.MOVE_FROM[colour, action]), int(k.MOVE_TO[colour, action])
        if frm < 0:
            raise IllegalMoveError(f"action {action} leads off the board")
        text = square_name(frm) + square_name(to)
        promotion = int(k.MOVE_PROMOTION[colour, action])
        last_rank = k.SIZE - 1 if colour == 0 else 0
        if promotion:
            text += PIECE_LETTERS[promotion - 1]
        elif state._board[frm] == (1 - 2 * colour) * k.PAWN and to // k.SIZE == last_rank:
            text += "q"
        return text

    def text_to_action(self, state: State, text: str) -> int:
        """The action of a legal move in UCI text ("b1c3", "a4a5q"); `GameFormatError` when
        the text is no such move, `IllegalMoveError` when the move is not legal here."""
        assert isinstance(state, GardnerState)
        word = text.strip().lower()
        match = _MOVE_TEXT.fullmatch(word)
        if match is None:
            raise GameFormatError(f"not a Gardner chess move in UCI notation: {text!r}")
        frm, to = (FILES.index(s[0]) + k.SIZE * (int(s[1]) - 1) for s in match.group(1, 2))
        promotion = match.group(3)
        colour = state._colour
        if promotion in ("", "q"):
            action = int(k.ACTION_OF[colour, frm, to])
        else:
            under = int(k.UNDER_OF[colour, frm, to])
            action = under + 3 * "nbr".index(promotion) if under >= 0 else -1
        if action < 0 or not state._mask[action] or self.action_to_text(state, action) != word:
            over = f"; the game is over ({state._termination})" if state._termination else ""
            raise IllegalMoveError(f"illegal move {word!r} in {state.fen()}{over}")
        return action


def _parse_fen(fen: str) -> tuple[np.ndarray, int, int, int]:
    """Board, colour, half-move clock and full-move number of a Gardner FEN; `GameFormatError`
    naming the problem when it is malformed or the position impossible."""

    def bad(reason: str) -> GameFormatError:
        return GameFormatError(f"bad FEN {fen!r}: {reason}")

    if not isinstance(fen, str):
        raise GameFormatError(f"a FEN must be text, not {type(fen).__name__}")
    fields = fen.split()
    if len(fields) not in (4, 6):
        raise bad("expected board, side, castling, en passant and optionally the two move counters")
    placement, side, castling, en_passant = fields[:4]
    if castling != "-" or en_passant != "-":
        raise bad("Gardner chess has no castling and no en passant; both fields must be '-'")
    if side not in ("w", "b"):
        raise bad(f"side to move must be 'w' or 'b', not {side!r}")
    try:
        halfmove, fullmove = (int(field) for field in fields[4:]) if len(fields) == 6 else (0, 1)
    except ValueError:
        raise bad("the move counters must be numbers") from None
    if halfmove < 0 or fullmove < 1:
        raise bad("the half-move clock must be >= 0 and the move number >= 1")
    ranks = placement.split("/")
    if len(ranks) != k.SIZE:
        raise bad(f"expected {k.SIZE} ranks, got {len(ranks)}")
    board = np.zeros(k.SQUARES, dtype=np.int8)
    for row, text in enumerate(ranks):
        rank, file = k.SIZE - 1 - row, 0
        for char in text:
            if char.isdigit():
                file += int(char)
                continue
            if char.lower() not in PIECE_LETTERS or file >= k.SIZE:
                raise bad(f"rank {rank + 1} is malformed: {text!r}")
            piece = PIECE_LETTERS.index(char.lower()) + 1
            if piece == k.PAWN and rank in (0, k.SIZE - 1):
                raise bad(f"a pawn on rank {rank + 1}")
            board[rank * k.SIZE + file] = piece if char.isupper() else -piece
            file += 1
        if file != k.SIZE:
            raise bad(f"rank {rank + 1} does not have {k.SIZE} squares: {text!r}")
    for sign, name in ((1, "White"), (-1, "Black")):
        if np.count_nonzero(board == sign * k.KING) != 1:
            raise bad(f"{name} must have exactly one king")
    colour = "wb".index(side)
    mover = 1 - 2 * colour  # the side to move must not be able to take the other king
    if k.attacked(board, int(np.flatnonzero(board == -mover * k.KING)[0]), mover):
        raise bad("the side not to move is in check")
    return board, colour, halfmove, fullmove
