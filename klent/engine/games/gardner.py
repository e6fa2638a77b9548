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

from klent.engine.games import gardner_kernels as k
from klent.engine.games.base import MAX_FEN_COUNTER, GameFormatError, IllegalMoveError, State
from klent.engine.games.board_games import HistoryState, PieceGame, fen_placement, step_squares

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


class GardnerState(HistoryState["GardnerGame"]):
    """A Gardner chess position with what the rules and the observation need from its past.

    Holds the board (``int8[25]``, never written once the state exists), the repetition keys
    since the last capture or pawn move (a linked list shared with the ancestors), the
    observation rows of the last 8 positions, the legal action mask and how the game ended,
    if it did: "checkmate", "stalemate", "fifty_moves", "threefold_repetition" (the last two
    only with ``claim_draws``) or "move_cap".  `repetitions` counts since the last capture or
    pawn move.  Build states with `GardnerGame.initial_state`, `GardnerGame.from_fen` and
    `play`.
    """

    __slots__ = ("_board",)

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
        # The caller cuts the repetition chain (parent_keys None) after a capture or a pawn
        # move: no earlier position can come back.
        key = board.tobytes()
        super().__init__(game, key, colour, ply, move_number, halfmove, in_check, parent_keys, parent_history)
        self._board = board
        self._termination = self._ending(moves, in_check)
        self._keep_mask(mask)

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

    def play(self, action: int) -> GardnerState:
        if not 0 <= action < k.NUM_ACTIONS or not self._mask[action]:
            raise IllegalMoveError(self._illegal_message(action))
        child = np.empty(k.SQUARES, dtype=np.int8)
        mask = np.empty(k.NUM_ACTIONS, dtype=np.bool_)
        moves, in_check, irreversible = k.play(self._board, self._to_play, action, child, mask)
        return GardnerState(
            self._game,
            child,
            1 - self._to_play,
            self._ply + 1,
            self._move_number + 1,
            0 if irreversible else self._halfmove + 1,
            mask,
            moves,
            in_check,
            None if irreversible else self._keys,
            self._history,
        )

    def fen(self) -> str:
        """The position as Fairy-Stockfish writes it ("rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1")."""
        side = "wb"[self._to_play]
        return f"{fen_placement(self._board, k.SIZE, PIECE_LETTERS)} {side} - - {self._fen_counters()}"


class GardnerGame(PieceGame):
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
        super().__init__(max_moves)
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
        return state.after(moves)

    def _encode_into(self, state: State, out: np.ndarray) -> None:
        assert isinstance(state, GardnerState)
        history = np.frombuffer(state._history, dtype=np.int8)
        move_count = min(state._ply / MOVE_COUNT_SCALE, 1.0)
        k.encode(history, state._to_play, move_count, state._halfmove / NO_PROGRESS_SCALE, out)

    def action_to_text(self, state: State, action: int) -> str:
        """UCI text of ``action`` in ``state``, legal or not ("b1c3", "a4a5q", "a4a5n").

        A queen-like step of a pawn of the side to move onto the last rank is a queen
        promotion.  An action outside 0..1224 or leading off the board raises
        `IllegalMoveError`.
        """
        assert isinstance(state, GardnerState)
        colour = state._to_play
        frm, to = step_squares(action, colour, k.MOVE_FROM, k.MOVE_TO)
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
        colour = state._to_play
        if promotion in ("", "q"):
            action = int(k.ACTION_OF[colour, frm, to])
        else:
            under = int(k.UNDER_OF[colour, frm, to])
            action = under + 3 * "nbr".index(promotion) if under >= 0 else -1
        if action < 0 or not state._mask[action] or self.action_to_text(state, action) != word:
            raise state._illegal_move(word)
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
    if max(halfmove, fullmove) > MAX_FEN_COUNTER:
        raise GameFormatError(f"bad FEN: a move counter above {MAX_FEN_COUNTER}")  # not quoted: it may be long
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
