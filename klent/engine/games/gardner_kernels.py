"""Compiled inner loops of Gardner chess (numba): move generation, making moves, the encoder.

A board is ``int8[25]``, square ``rank * 5 + file`` with a1 = 0 and e5 = 24; +t for a White
piece of type t, -t for a Black one, 0 for an empty square, with the types numbered as in
python-chess (1 pawn, 2 knight, 3 bishop, 4 rook, 5 queen, 6 king).

Why numba: a legal-move mask is every pseudo-legal move made on the board and tested for
leaving its own king attacked.  That is a few microseconds compiled and a good part of a
millisecond in Python, while search and self-play need the rules to cost far less than a
network evaluation.  ``cache=True`` keeps the compiled code on disk.

The action tables are built here, in plain Python, because the kernels read them as
constants; `klent.engine.games.gardner` describes the action layout they implement.
"""

from __future__ import annotations

import numpy as np
from numba import njit

SIZE = 5
SQUARES = SIZE * SIZE
NUM_PLANES = 49
NUM_ACTIONS = SQUARES * NUM_PLANES
HISTORY = 8
POSITION_BYTES = SQUARES + 1  # a position in the history: the board, then its repetition count
PLANES_PER_POSITION = 14
NUM_CHANNELS = HISTORY * PLANES_PER_POSITION + 3

PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING = 1, 2, 3, 4, 5, 6

# Directions as (rank step, file step) in the side to move's frame, N = towards the opponent.
QUEEN_DIRECTIONS = ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1))
KNIGHT_STEPS = ((2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2), (1, -2), (2, -1))
UNDERPROMOTIONS = (KNIGHT, BISHOP, ROOK)


def frame(square: int, colour: int) -> int:
    """``square`` seen by ``colour`` (0 White, 1 Black): Black's frame flips the ranks."""
    rank, file = divmod(square, SIZE)
    return (SIZE - 1 - rank) * SIZE + file if colour else square


def _plane_steps() -> list[tuple[int, int, int]]:
    """(rank step, file step, underpromotion piece or 0) of each of the 49 planes."""
    steps = [(dr * dist, df * dist, 0) for dr, df in QUEEN_DIRECTIONS for dist in range(1, SIZE)]
    steps += [(dr, df, 0) for dr, df in KNIGHT_STEPS]
    steps += [(1, df, piece) for piece in UNDERPROMOTIONS for df in (-1, 0, 1)]
    assert len(steps) == NUM_PLANES
    return steps


def _build_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per colour: ``move_from``/``move_to``/``move_promotion`` of each action (absolute
    squares, -1 off the board; the underpromotion piece or 0) and, per (from, to) pair,
    ``action_of`` (the queen-like or knight action, -1 if none) and ``under_of`` (the knight
    underpromotion action, bishop +3, rook +6; -1 if the pair is no step to the last rank)."""
    move_from = np.full((2, NUM_ACTIONS), -1, dtype=np.int64)
    move_to = np.full((2, NUM_ACTIONS), -1, dtype=np.int64)
    move_promotion = np.zeros((2, NUM_ACTIONS), dtype=np.int64)
    action_of = np.full((2, SQUARES, SQUARES), -1, dtype=np.int64)
    under_of = np.full((2, SQUARES, SQUARES), -1, dtype=np.int64)
    for colour in range(2):
        for point in range(SQUARES):
            rank, file = divmod(point, SIZE)
            for plane, (dr, df, promotion) in enumerate(_plane_steps()):
                to_rank, to_file = rank + dr, file + df
                if not (0 <= to_rank < SIZE and 0 <= to_file < SIZE):
                    continue
                if promotion and rank != SIZE - 2:
                    continue
                action = point * NUM_PLANES + plane
                frm, to = frame(point, colour), frame(to_rank * SIZE + to_file, colour)
                move_from[colour, action], move_to[colour, action] = frm, to
                move_promotion[colour, action] = promotion
                if not promotion:
                    action_of[colour, frm, to] = action
                elif promotion == KNIGHT:
                    under_of[colour, frm, to] = action
    return move_from, move_to, move_promotion, action_of, under_of


MOVE_FROM, MOVE_TO, MOVE_PROMOTION, ACTION_OF, UNDER_OF = _build_tables()
_KNIGHT = np.array(KNIGHT_STEPS, dtype=np.int64)
_KING = np.array(QUEEN_DIRECTIONS, dtype=np.int64)
_DIAGONAL = _KING[1::2].copy()
_STRAIGHT = _KING[0::2].copy()


@njit(cache=True)
def attacked(board: np.ndarray, square: int, sign: int) -> bool:
    """Whether a piece of the side ``sign`` (+1 White, -1 Black) attacks ``square``."""
    rank, file = square // SIZE, square % SIZE
    pawn_rank = rank - sign  # a pawn attacks one rank forward
    if 0 <= pawn_rank < SIZE:
        if file > 0 and board[pawn_rank * SIZE + file - 1] == sign * PAWN:
            return True
        if file < SIZE - 1 and board[pawn_rank * SIZE + file + 1] == sign * PAWN:
            return True
    for i in range(8):
        r, f = rank + _KNIGHT[i, 0], file + _KNIGHT[i, 1]
        if 0 <= r < SIZE and 0 <= f < SIZE and board[r * SIZE + f] == sign * KNIGHT:
            return True
        r, f = rank + _KING[i, 0], file + _KING[i, 1]
        if 0 <= r < SIZE and 0 <= f < SIZE and board[r * SIZE + f] == sign * KING:
            return True
    for i in range(4):
        for steps, slider in ((_DIAGONAL, BISHOP), (_STRAIGHT, ROOK)):
            dr, df = steps[i, 0], steps[i, 1]
            r, f = rank + dr, file + df
            while 0 <= r < SIZE and 0 <= f < SIZE:
                piece = board[r * SIZE + f]
                if piece != 0:
                    if piece == sign * slider or piece == sign * QUEEN:
                        return True
                    break
                r += dr
                f += df
    return False


@njit(cache=True)
def _try_move(board: np.ndarray, frm: int, to: int, king: int, colour: int, mask: np.ndarray) -> int:
    """Mark the move ``frm``-``to`` in ``mask`` if it leaves its king safe; return how many
    actions that adds (a pawn reaching the last rank adds its three underpromotions too)."""
    sign = 1 - 2 * colour
    moving, target = board[frm], board[to]
    board[to], board[frm] = moving, 0
    safe = not attacked(board, to if frm == king else king, -sign)
    board[frm], board[to] = moving, target
    if not safe:
        return 0
    mask[ACTION_OF[colour, frm, to]] = True
    if moving * sign != PAWN or to // SIZE != (SIZE - 1 if sign == 1 else 0):
        return 1
    under = UNDER_OF[colour, frm, to]
    mask[under] = mask[under + 3] = mask[under + 6] = True
    return 4


@njit(cache=True)
def generate(board: np.ndarray, colour: int, mask: np.ndarray) -> tuple[int, bool]:
    """Fill ``mask`` with the legal actions of ``colour``; return their number and whether
    ``colour`` is in check.  ``board`` is restored before returning."""
    mask[:] = False
    sign = 1 - 2 * colour
    king = 0
    for square in range(SQUARES):
        if board[square] == sign * KING:
            king = square
    count = 0
    for frm in range(SQUARES):
        piece = board[frm] * sign
        if piece <= 0:
            continue
        rank, file = frm // SIZE, frm % SIZE
        if piece == PAWN:  # never on the last rank: it promotes on arrival
            r = rank + sign
            if board[r * SIZE + file] == 0:
                count += _try_move(board, frm, r * SIZE + file, king, colour, mask)
            for f in (file - 1, file + 1):
                if 0 <= f < SIZE and board[r * SIZE + f] * sign < 0:
                    count += _try_move(board, frm, r * SIZE + f, king, colour, mask)
        elif piece == KNIGHT or piece == KING:
            steps = _KNIGHT if piece == KNIGHT else _KING
            for i in range(8):
                r, f = rank + steps[i, 0], file + steps[i, 1]
                if 0 <= r < SIZE and 0 <= f < SIZE and board[r * SIZE + f] * sign <= 0:
                    count += _try_move(board, frm, r * SIZE + f, king, colour, mask)
        else:
            for steps, kind in ((_DIAGONAL, BISHOP), (_STRAIGHT, ROOK)):
                if piece != kind and piece != QUEEN:
                    continue
                for i in range(4):
                    dr, df = steps[i, 0], steps[i, 1]
                    r, f = rank + dr, file + df
                    while 0 <= r < SIZE and 0 <= f < SIZE:
                        target = board[r * SIZE + f] * sign
                        if target > 0:
                            break
                        count += _try_move(board, frm, r * SIZE + f, king, colour, mask)
                        if target < 0:
                            break
                        r += dr
                        f += df
    return count, attacked(board, king, -sign)


@njit(cache=True)
def play(board: np.ndarray, colour: int, action: int, child: np.ndarray, mask: np.ndarray) -> tuple[int, bool, bool]:
    """Make the legal ``action`` of ``colour`` on a copy ``child`` of ``board`` and fill
    ``mask`` with the opponent's legal actions there.

    Returns the opponent's number of legal actions, whether the opponent is in check, and
    whether the move was a capture or a pawn move (it resets the fifty-move count and no
    earlier position can repeat).  A pawn reaching the last rank by a queen-like action
    becomes a queen.
    """
    child[:] = board
    sign = 1 - 2 * colour
    frm, to = MOVE_FROM[colour, action], MOVE_TO[colour, action]
    moving, captured = child[frm], child[to]
    child[frm] = 0
    child[to] = moving
    pawn = moving * sign == PAWN
    if pawn and to // SIZE == (SIZE - 1 if sign == 1 else 0):
        promotion = MOVE_PROMOTION[colour, action]
        child[to] = sign * (promotion if promotion else QUEEN)
    count, in_check = generate(child, 1 - colour, mask)
    return count, in_check, pawn or captured != 0


@njit(cache=True)
def encode(history: np.ndarray, colour: int, move_count: float, no_progress: float, out: np.ndarray) -> None:
    """Fill ``out`` (float32[115, 5, 5]) from the side to move's view; see the module
    docstring of `klent.engine.games.gardner` for the planes.

    ``history`` holds the last 8 positions, newest first, as `POSITION_BYTES` int8 each (the
    board in White's frame, then how often it occurred before, at most 2); all zeros before the
    start.
    """
    out[:] = 0.0
    for i in range(HISTORY):
        base = i * POSITION_BYTES
        for square in range(SQUARES):
            piece = history[base + square]
            if piece == 0:
                continue
            theirs = (piece < 0) != (colour == 1)
            plane = i * PLANES_PER_POSITION + 6 * theirs + abs(piece) - 1
            rank, file = square // SIZE, square % SIZE
            out[plane, SIZE - 1 - rank if colour else rank, file] = 1.0
        repetitions = history[base + SQUARES]
        if repetitions >= 1:
            out[i * PLANES_PER_POSITION + 12] = 1.0
        if repetitions >= 2:
            out[i * PLANES_PER_POSITION + 13] = 1.0
    last = HISTORY * PLANES_PER_POSITION
    out[last] = float(colour)
    out[last + 1] = move_count
    out[last + 2] = no_progress
