"""Board symmetries: the eight rotations and reflections of a square board.

Go's rules do not change when the board is rotated or mirrored, so a position and its seven
images are equally good training samples (AlphaGo Zero trained on random images; KataGo
still does).  Symmetry ``index`` acts on observation planes through `dihedral` and on actions
through the permutation `Game.symmetries` returns for that index, and the two agree: the image
of the move on point (row, col) is the point where `dihedral` puts (row, col).
"""

from __future__ import annotations

import numpy as np

COUNT = 8  # rotations by 0, 90, 180, 270 degrees, each with and without a mirror


def dihedral(planes: np.ndarray, index: int) -> np.ndarray:
    """Image of ``planes`` [..., H, W] under symmetry ``index`` (0 is the identity).

    ``index % 4`` quarter turns counter-clockwise, then a left-right mirror when ``index >= 4``.
    Returns a new contiguous array.
    """
    if not 0 <= index < COUNT:
        raise ValueError(f"symmetry index must be 0..{COUNT - 1}, not {index}")
    image = np.rot90(planes, index % 4, axes=(-2, -1))
    if index >= 4:
        image = np.flip(image, axis=-1)
    return np.ascontiguousarray(image)


def point_permutations(size: int, extra_actions: int = 0) -> np.ndarray:
    """``int64[8, size*size + extra_actions]``: where each action goes under each symmetry.

    Points are numbered row-major (``row * size + col``); the ``extra_actions`` after them
    (Go's pass) are fixed by every symmetry.
    """
    points = size * size
    grid = np.arange(points).reshape(size, size)
    table = np.empty((COUNT, points + extra_actions), dtype=np.int64)
    for index in range(COUNT):
        image = dihedral(grid, index).ravel()  # image[new point] = old point
        table[index, image] = np.arange(points)
        table[index, points:] = np.arange(points, points + extra_actions)
    return table
