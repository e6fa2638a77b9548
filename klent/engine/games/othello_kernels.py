"""Compiled inner loops of the Othello rules (numba), on flat 8x8 boards.

A board is ``int8[64]`` with +1 for Black, -1 for White and 0 for an empty square; square
``p = row * 8 + col`` with row 0 the top rank.  A legal-move mask is ``bool[65]``: the 64
squares, then the pass.

Why numba: a move is legal when a ray from the square crosses a run of opponent discs that
ends in an own disc, so a mask walks up to eight rays from each of the empty squares.  In
Python that is a few hundred microseconds per position, compiled it is about one, which is
what search and self-play need.  ``cache=True`` keeps the compiled code on disk so only the
first import on a machine pays for compilation.
"""

from __future__ import annotations

import numpy as np
from numba import njit

SIZE = 8
SQUARES = SIZE * SIZE
PASS = SQUARES  # the action after the 64 squares

# The eight ray directions (row step, column step).
_DR = np.array([-1, -1, -1, 0, 0, 1, 1, 1], dtype=np.int64)
_DC = np.array([-1, 0, 1, -1, 1, -1, 0, 1], dtype=np.int64)


@njit(cache=True)
def _run(board: np.ndarray, p: int, color: int, d: int) -> int:
    """How many opponent discs a ``color`` disc on ``p`` flips along direction ``d`` (0: none).

    The run of opponent discs counts only when an own disc closes it before the edge or an
    empty square.
    """
    dr = _DR[d]
    dc = _DC[d]
    r = p // SIZE + dr
    c = p % SIZE + dc
    n = 0
    while 0 <= r < SIZE and 0 <= c < SIZE:
        v = board[r * SIZE + c]
        if v == color:
            return n
        if v == 0:
            return 0
        n += 1
        r += dr
        c += dc
    return 0


@njit(cache=True)
def _discs(board: np.ndarray, color: int, mask: np.ndarray) -> bool:
    """Fill ``mask[:64]`` with where ``color`` may place a disc; returns whether anywhere."""
    found = False
    for p in range(SQUARES):
        legal = False
        if board[p] == 0:
            for d in range(8):
                if _run(board, p, color, d) > 0:
                    legal = True
                    break
        mask[p] = legal
        found |= legal
    return found


@njit(cache=True)
def fill_mask(board: np.ndarray, color: int, mask: np.ndarray) -> bool:
    """Fill ``mask`` (``bool[65]``) with the legal actions of ``color`` to move.

    The squares where a disc flips something; failing those, the pass when the opponent has a
    disc to place; failing that too, nothing: the game is over.  Returns whether any action
    is legal (False exactly when the game is over).
    """
    if _discs(board, color, mask):
        mask[PASS] = False
        return True
    opponent_can_move = _discs(board, -color, mask)
    mask[:SQUARES] = False
    mask[PASS] = opponent_can_move
    return opponent_can_move


@njit(cache=True)
def play(board: np.ndarray, action: int, color: int, new_board: np.ndarray, new_mask: np.ndarray) -> bool:
    """Play a legal ``action`` of ``color``; fills the next position and its mover's mask.

    ``new_board`` gets ``board`` with the disc placed and every closed run flipped (unchanged
    for a pass); ``new_mask`` the legal actions of the opponent, who moves next.  Returns
    whether the game goes on (`fill_mask`).  The caller has checked legality.
    """
    new_board[:] = board
    if action != PASS:
        new_board[action] = color
        for d in range(8):
            n = _run(board, action, color, d)
            r = action // SIZE
            c = action % SIZE
            for _ in range(n):
                r += _DR[d]
                c += _DC[d]
                new_board[r * SIZE + c] = color
    return fill_mask(new_board, -color, new_mask)


@njit(cache=True)
def encode_planes(board: np.ndarray, color: int, out: np.ndarray) -> None:
    """``out`` float32[2, 8, 8]: the discs of ``color`` (to move), then the opponent's."""
    for p in range(SQUARES):
        v = board[p]
        r = p // SIZE
        c = p % SIZE
        out[0, r, c] = 1.0 if v == color else 0.0
        out[1, r, c] = 1.0 if v == -color else 0.0
