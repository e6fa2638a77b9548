"""Chess's action tables and its compiled move generator (numba), under `klent.engine.games.chess`.

The tables map between the 4672 actions of AlphaZero's encoding (`klent.engine.games.chess`
describes the layout) and python-chess moves, per side to move; `generate` marks a
position's legal actions in a mask.  Why numba: the legal-move mask is needed once per position
in search and self-play, and python-chess's ``generate_legal_moves`` (with its ``Move`` objects)
costs more than the network evaluation it would feed; compiled, it is a few microseconds.
``cache=True`` keeps the compiled code on disk.

The tables are built here, in plain Python, at import: the kernels read them as constants.
"""

from __future__ import annotations

import chess  # python-chess: imports are absolute, so this is never klent.engine.games.chess
import numpy as np
from numba import njit, types

NUM_PLANES = 73
NUM_ACTIONS = 64 * NUM_PLANES

# Directions as (rank step, file step) in the side to move's frame.
_QUEEN_DIRECTIONS = ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1))
_KNIGHT_STEPS = ((2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2), (1, -2), (2, -1))
_UNDERPROMOTIONS = (chess.KNIGHT, chess.BISHOP, chess.ROOK)


def _frame(square: int, colour: int) -> int:
    """``square`` in the frame of the side ``colour`` (0 White, 1 Black): Black flips ranks."""
    return square ^ (56 * colour)


_MoveTable = list[list["chess.Move | None"]]


def _build_tables() -> tuple[list[list[int]], list[list[int]], _MoveTable, _MoveTable]:
    """Lookup tables between (from, to) square pairs and action indices, per colour.

    Returns ``action_of[c][from * 64 + to]`` (the queen-like or knight action, -1 if the pair
    is neither), ``under_of[c][from * 64 + to]`` (the knight underpromotion action; bishop and
    rook are +3 and +6; -1 if the pair is not a pawn step to the last rank), ``moves[c][a]``
    (the move of action ``a`` without queen promotion, None off the board) and
    ``queen_promotions[c][a]`` (the same move promoting to a queen, for actions that a pawn on
    the seventh rank could play, else None).  Squares are absolute (a1=0) outside the frame.
    """
    action_of = [[-1] * 4096 for _ in range(2)]
    under_of = [[-1] * 4096 for _ in range(2)]
    moves: _MoveTable = [[None] * NUM_ACTIONS for _ in range(2)]
    queen_promotions: _MoveTable = [[None] * NUM_ACTIONS for _ in range(2)]
    steps: list[tuple[int, int, int | None]] = []  # (rank step, file step, promotion) per plane
    for dr, df in _QUEEN_DIRECTIONS:
        steps += [(dr * dist, df * dist, None) for dist in range(1, 8)]
    steps += [(dr, df, None) for dr, df in _KNIGHT_STEPS]
    steps += [(1, df, piece) for piece in _UNDERPROMOTIONS for df in (-1, 0, 1)]
    assert len(steps) == NUM_PLANES
    for colour in range(2):
        for frm in range(64):
            rank, file = divmod(frm, 8)
            for plane, (dr, df, promotion) in enumerate(steps):
                to_rank, to_file = rank + dr, file + df
                if not (0 <= to_rank < 8 and 0 <= to_file < 8):
                    continue
                if promotion is not None and rank != 6:
                    continue
                action = frm * NUM_PLANES + plane
                a_from = _frame(frm, colour)
                a_to = _frame(to_rank * 8 + to_file, colour)
                moves[colour][action] = chess.Move(a_from, a_to, promotion)
                if promotion is None:
                    action_of[colour][a_from * 64 + a_to] = action
                    if rank == 6 and dr == 1 and abs(df) <= 1:
                        queen_promotions[colour][action] = chess.Move(a_from, a_to, chess.QUEEN)
                elif promotion == chess.KNIGHT:
                    under_of[colour][a_from * 64 + a_to] = action
    return action_of, under_of, moves, queen_promotions


_ACTION_OF, _UNDER_OF, MOVES, QUEEN_PROMOTIONS = _build_tables()


def action_of_move(colour: int, move: chess.Move) -> int:
    """Action index of ``move`` by its geometry alone, or -1 if no action has that shape."""
    pair = move.from_square * 64 + move.to_square
    if move.promotion is None or move.promotion == chess.QUEEN:
        return _ACTION_OF[colour][pair]
    base = _UNDER_OF[colour][pair]
    if base < 0 or move.promotion not in _UNDERPROMOTIONS:
        return -1
    return base + 3 * _UNDERPROMOTIONS.index(move.promotion)


# Move generation runs compiled (numba) on a 64-square mailbox: +t / -t for a White / Black
# piece of python-chess type t (1 pawn .. 6 king), 0 for an empty square.  A pseudo-legal move
# is legal when, made on the mailbox, it leaves its own king unattacked; moves of a piece that
# shares no line with its king (and is not the king, not capturing en passant, not out of
# check) cannot expose the king and skip that test.
_STEPS_KNIGHT = np.array(_KNIGHT_STEPS, dtype=np.int64)
_STEPS_KING = np.array(_QUEEN_DIRECTIONS, dtype=np.int64)
_STEPS_DIAGONAL = _STEPS_KING[1::2].copy()
_STEPS_STRAIGHT = _STEPS_KING[0::2].copy()
_ACTION_TABLE = np.array(_ACTION_OF, dtype=np.int64).reshape(2, 64, 64)
_UNDER_TABLE = np.array(_UNDER_OF, dtype=np.int64).reshape(2, 64, 64)


# Explicit signatures: numba would otherwise compile a variant per literal argument pattern.
_BOARD = types.Array(types.int8, 1, "C")
_MASK = types.Array(types.boolean, 1, "C")
_INT = types.int64


@njit(types.boolean(_BOARD, _INT, _INT), cache=True)
def _attacked(board: np.ndarray, square: int, sign: int) -> bool:
    """Whether a piece of the side ``sign`` (+1 White, -1 Black) attacks ``square``."""
    rank, file = square >> 3, square & 7
    pawn_rank = rank - sign  # a pawn attacks one rank forward
    if 0 <= pawn_rank < 8:
        if file > 0 and board[pawn_rank * 8 + file - 1] == sign * chess.PAWN:
            return True
        if file < 7 and board[pawn_rank * 8 + file + 1] == sign * chess.PAWN:
            return True
    for i in range(8):
        r, f = rank + _STEPS_KNIGHT[i, 0], file + _STEPS_KNIGHT[i, 1]
        if 0 <= r < 8 and 0 <= f < 8 and board[r * 8 + f] == sign * chess.KNIGHT:
            return True
        r, f = rank + _STEPS_KING[i, 0], file + _STEPS_KING[i, 1]
        if 0 <= r < 8 and 0 <= f < 8 and board[r * 8 + f] == sign * chess.KING:
            return True
    for i in range(4):
        for steps, slider in ((_STEPS_DIAGONAL, chess.BISHOP), (_STEPS_STRAIGHT, chess.ROOK)):
            dr, df = steps[i, 0], steps[i, 1]
            r, f = rank + dr, file + df
            while 0 <= r < 8 and 0 <= f < 8:
                piece = board[r * 8 + f]
                if piece != 0:
                    if piece == sign * slider or piece == sign * chess.QUEEN:
                        return True
                    break
                r += dr
                f += df
    return False


@njit(_INT(_BOARD, _INT, _INT, _INT, _INT, _INT, types.boolean, types.boolean, _INT, _MASK), cache=True)
def _try_move(
    board: np.ndarray,
    frm: int,
    to: int,
    captured: int,
    king: int,
    sign: int,
    check_needed: bool,
    promotion: bool,
    colour: int,
    mask: np.ndarray,
) -> int:
    """Mark the move ``frm``-``to`` in ``mask`` if legal; return how many actions it adds.

    ``captured`` is the square of a pawn taken en passant, else -1.
    """
    if check_needed:
        moving, target = board[frm], board[to]
        board[to], board[frm] = moving, 0
        taken = 0
        if captured >= 0:
            taken, board[captured] = board[captured], 0
        safe = not _attacked(board, to if frm == king else king, -sign)
        board[frm], board[to] = moving, target
        if captured >= 0:
            board[captured] = taken
        if not safe:
            return 0
    mask[_ACTION_TABLE[colour, frm, to]] = True
    if not promotion:
        return 1
    under = _UNDER_TABLE[colour, frm, to]
    mask[under] = mask[under + 3] = mask[under + 6] = True
    return 4


@njit(cache=True)
def _may_castle(board: np.ndarray, rights: np.uint64, king: int, step: int, sign: int) -> bool:
    """Whether the king on ``king`` (on its home square and not in check) may castle towards
    ``step`` (+1 kingside, -1 queenside): the right is kept, the squares between king and
    rook are empty, and neither square the king crosses or lands on is attacked.  Clean rights
    mean king and rook stand on their home squares."""
    rook = king + 3 if step > 0 else king - 4
    if not rights >> np.uint64(rook) & np.uint64(1):
        return False
    for square in range(king + step, rook, step):
        if board[square] != 0:
            return False
    return not _attacked(board, king + step, -sign) and not _attacked(board, king + 2 * step, -sign)


@njit(cache=True)
def generate(
    bitboards: np.ndarray, colour: int, ep_square: int, mask: np.ndarray
) -> tuple[int, bool, bool]:
    """Mark the legal actions in ``mask`` (all False on entry).

    ``bitboards`` = python-chess's pawns, knights, bishops, rooks, queens, kings, White's and
    Black's pieces and the (clean) castling rights; ``ep_square`` is -1 when there is none.
    Returns the number of legal actions, whether the side to move is in check and whether an
    en passant capture is legal (it is part of the position's identity for repetitions).
    """
    board = np.zeros(64, dtype=np.int8)
    one = np.uint64(1)
    for square in range(64):
        bit = one << np.uint64(square)
        for piece in range(6):
            if bitboards[piece] & bit:
                board[square] = piece + 1 if bitboards[6] & bit else -(piece + 1)
                break
    sign = 1 if colour == 0 else -1
    king = 0
    for square in range(64):
        if board[square] == sign * chess.KING:
            king = square
    king_rank, king_file = king >> 3, king & 7
    in_check = _attacked(board, king, -sign)
    last_rank = 7 if sign == 1 else 0
    count = 0
    legal_ep = False
    for frm in range(64):
        piece = board[frm] * sign
        if piece <= 0:
            continue
        rank, file = frm >> 3, frm & 7
        check = (
            in_check
            or frm == king
            or rank == king_rank
            or file == king_file
            or rank - file == king_rank - king_file
            or rank + file == king_rank + king_file
        )
        if piece == chess.PAWN:
            r = rank + sign
            promotion = r == last_rank
            to = r * 8 + file
            if board[to] == 0:
                count += _try_move(board, frm, to, -1, king, sign, check, promotion, colour, mask)
                double = to + 8 * sign
                if rank == (1 if sign == 1 else 6) and board[double] == 0:
                    count += _try_move(board, frm, double, -1, king, sign, check, False, colour, mask)
            for df in (-1, 1):
                if not 0 <= file + df < 8:
                    continue
                to = r * 8 + file + df
                if board[to] * sign < 0:
                    count += _try_move(board, frm, to, -1, king, sign, check, promotion, colour, mask)
                elif to == ep_square:
                    taken = to - 8 * sign
                    added = _try_move(board, frm, to, taken, king, sign, True, False, colour, mask)
                    legal_ep |= added > 0
                    count += added
        elif piece == chess.KNIGHT or piece == chess.KING:
            steps = _STEPS_KNIGHT if piece == chess.KNIGHT else _STEPS_KING
            for i in range(8):
                r, f = rank + steps[i, 0], file + steps[i, 1]
                if 0 <= r < 8 and 0 <= f < 8 and board[r * 8 + f] * sign <= 0:
                    to = r * 8 + f
                    count += _try_move(board, frm, to, -1, king, sign, check, False, colour, mask)
        else:
            for steps, kind in ((_STEPS_DIAGONAL, chess.BISHOP), (_STEPS_STRAIGHT, chess.ROOK)):
                if piece != kind and piece != chess.QUEEN:
                    continue
                for i in range(4):
                    dr, df = steps[i, 0], steps[i, 1]
                    r, f = rank + dr, file + df
                    while 0 <= r < 8 and 0 <= f < 8:
                        to = r * 8 + f
                        target = board[to] * sign
                        if target > 0:
                            break
                        count += _try_move(board, frm, to, -1, king, sign, check, False, colour, mask)
                        if target < 0:
                            break
                        r += dr
                        f += df
    # Castling: clean rights mean king and rook stand on their home squares; the king may not
    # be in check, pass through or land on an attacked square.
    home = 0 if sign == 1 else 56
    if not in_check and king == home + 4:
        for step in (1, -1):  # kingside, queenside
            if _may_castle(board, bitboards[8], king, step, sign):
                mask[_ACTION_TABLE[colour, king, king + 2 * step]] = True
                count += 1
    return count, in_check, legal_ep
