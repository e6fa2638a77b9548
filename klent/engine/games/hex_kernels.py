"""Compiled inner loops of the Hex rules (numba), on flat rhombic boards.

A board is ``int8[size * size]`` with +1 for Black, -1 for White and 0 for an empty cell;
cell ``p = row * size + col``.  The six neighbours of (row, col) are (row, col +- 1),
(row +- 1, col), (row - 1, col + 1) and (row + 1, col - 1), from a precomputed
``int32[n, 6]`` table (-1 off the board).  Black joins row 0 to row ``size - 1``, White
column 0 to column ``size - 1``.

Why numba: only the stone just played can complete a connection, so the win test is a walk
over that stone's chain, checking which edges it touches.  That is up to a hundred cells,
microseconds compiled and a good part of a millisecond in Python.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_STEPS = ((0, -1), (0, 1), (-1, 0), (1, 0), (-1, 1), (1, -1))  # (row step, column step)


def neighbour_table(size: int) -> np.ndarray:
    """``int32[size * size, 6]``: the up to six neighbours of each cell, -1 where off-board."""
    table = np.full((size * size, 6), -1, dtype=np.int32)
    for row in range(size):
        for col in range(size):
            for j, (dr, dc) in enumerate(_STEPS):
                r, c = row + dr, col + dc
                if 0 <= r < size and 0 <= c < size:
                    table[row * size + col, j] = r * size + c
    return table


@njit(cache=True)
def play_stone(board: np.ndarray, p: int, color: int, size: int, nbr: np.ndarray, new_board: np.ndarray) -> bool:
    """Put a ``color`` stone on the empty cell ``p``: fills ``new_board``, returns whether it wins.

    The stone wins when its chain touches both of ``color``'s edges: rows 0 and size - 1 for
    Black (+1), columns 0 and size - 1 for White (-1).
    """
    n = board.shape[0]
    new_board[:] = board
    new_board[p] = color
    mark = np.zeros(n, dtype=np.bool_)
    stack = np.empty(n, dtype=np.int32)
    mark[p] = True
    stack[0] = p
    count = 1
    i = 0
    first = False
    last = False
    while i < count:
        s = stack[i]
        i += 1
        line = s // size if color == 1 else s % size
        first |= line == 0
        last |= line == size - 1
        for j in range(6):
            q = nbr[s, j]
            if q >= 0 and new_board[q] == color and not mark[q]:
                mark[q] = True
                stack[count] = q
                count += 1
    return first and last


@njit(cache=True)
def encode_planes(board: np.ndarray, color: int, can_swap: bool, out: np.ndarray) -> None:
    """``out`` float32[4, size, size]: ``color``'s stones (to move), the opponent's, all ones
    when White is to move, all ones when the swap is legal."""
    size = out.shape[1]
    for p in range(board.shape[0]):
        v = board[p]
        r = p // size
        c = p % size
        out[0, r, c] = 1.0 if v == color else 0.0
        out[1, r, c] = 1.0 if v == -color else 0.0
    out[2] = 1.0 if color == -1 else 0.0
    out[3] = 1.0 if can_swap else 0.0
