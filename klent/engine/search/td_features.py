"""Local shape features of Go: the windows of the board, their codes and the weight-sharing tables (numpy).

Silver, Sutton and Mueller (2012), "Temporal-difference search in computer Go", Sect. 3.1:
a *local shape* is the content (empty, black, white) of a k x k square of the board; one
binary feature per shape and per location, for every square up to 3x3 ("1x1", "2x2",
"3x3").  Exactly one shape matches in each square, so a position activates one feature per
square: 81 + 64 + 49 windows on 9x9.

Encoding.  Windows are numbered size by size (all 1x1 windows, then 2x2, then 3x3, each in
row-major order of their top-left point).  A window's *code* is sum_i digit_i * 3**i over its
cells in row-major order, digit 0 empty, 1 black, 2 white, so one stone changes a code by
digit * 3**i: that is what makes evaluation incremental.  The *raw feature* of window ``w``
is ``base[w] + code``.  Boards are go_kernels' flat ``int8[n]`` (+1 black, -1 white), and
moves, legality and superko are go_kernels' own kernels; the compiled simulations over these
features are `klent.engine.search.td_kernels`.

Weight sharing (Sect. 3.1.3) maps raw features to weights through tables ``index[m, f]`` and
``sign[m, f]`` (one row per sharing "map"; sign 0 means "not a feature"):

- ``"LD"`` location dependent: a shape at a location shares its weight with its images under
  the 8 rotations/reflections of the board and, with the opposite sign, with their colour
  inversions;
- ``"LI"`` location independent: the same, and also across all locations of one square size;
- ``"none"``: every (location, shape) its own weight, as TD search uses them (Sect. 4.4:
  starting from the current position breaks the board's symmetries).

Neutral shapes (a shape whose inversion is one of its own images, e.g. all-empty) would need
theta = -theta = 0 and are removed (sign 0); without sharing only the all-empty shapes are.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from klent.engine.games.symmetry import COUNT as SYMMETRIES
from klent.engine.games.symmetry import point_permutations

SHAPES = (1, 2, 3)  # square sizes of the paper's local shapes
SHARINGS = ("LI", "LD", "none")


# --- geometry and weight-sharing tables (numpy, built once per board size) ---------------


@dataclass(frozen=True)
class Windows:
    """Every k x k square of an N x N board for the square sizes ``shapes``.

    ``base[w]``: first raw feature of window w; ``point_windows[p, j]`` (-1 padded): the windows
    covering point p, ``point_powers[p, j]``: 3**(p's cell in that window); ``features``: the
    number of raw features.
    """

    size: int
    shapes: tuple[int, ...]
    base: np.ndarray
    point_windows: np.ndarray
    point_powers: np.ndarray
    features: int

    @property
    def count(self) -> int:
        return int(self.base.shape[0])


def check_memory(shapes: tuple[int, ...], sharing: tuple[str, ...]) -> None:
    """ValueError unless ``shapes`` is a sorted selection of `SHAPES` and ``sharing`` one of
    distinct names from `SHARINGS` (what a memory's features are made of)."""
    if not shapes or any(k not in SHAPES for k in shapes) or tuple(sorted(set(shapes))) != tuple(shapes):
        raise ValueError(f"shapes must be a sorted selection of {SHAPES}, not {shapes!r}")
    if not sharing or len(set(sharing)) != len(sharing) or any(s not in SHARINGS for s in sharing):
        raise ValueError(f"sharing must be distinct names from {SHARINGS}, not {sharing!r}")


@cache
def windows(size: int, shapes: tuple[int, ...]) -> Windows:
    """The windows of ``shapes`` (sorted, from `SHAPES`) on a ``size`` x ``size`` board."""
    check_memory(shapes, ("none",))
    base: list[int] = []
    covers: list[list[tuple[int, int]]] = [[] for _ in range(size * size)]
    offset = 0
    for k in shapes:
        for row in range(size - k + 1):
            for col in range(size - k + 1):
                w = len(base)
                base.append(offset)
                offset += 3 ** (k * k)
                for i in range(k * k):
                    covers[(row + i // k) * size + col + i % k].append((w, 3**i))
    width = max(len(c) for c in covers)
    point_windows = np.full((size * size, width), -1, dtype=np.int32)
    point_powers = np.zeros((size * size, width), dtype=np.int32)
    for p, cover in enumerate(covers):
        for j, (w, power) in enumerate(cover):
            point_windows[p, j] = w
            point_powers[p, j] = power
    return Windows(size, shapes, np.array(base, dtype=np.int64), point_windows, point_powers, offset)


def _digits(k: int) -> np.ndarray:
    """``int64[3**(k*k), k*k]``: the cell digits of every code of a k x k square."""
    codes = np.arange(3 ** (k * k), dtype=np.int64)
    return (codes[:, None] // 3 ** np.arange(k * k, dtype=np.int64)) % 3


def _square_images(size: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How the 8 board symmetries move the k x k squares of a size x size board.

    Returns ``(location_image int64[8, L], code_image int64[8, S], inverse int64[S])``:
    the square (numbered row-major by top-left point) a square goes to, its shape's code
    there, and each code's colour inversion.  A symmetry turns every square the same way, so
    the code image does not depend on the location (checked here for every square).
    """
    span = size - k + 1
    digits = _digits(k)
    powers = 3 ** np.arange(k * k, dtype=np.int64)
    perms = point_permutations(size)
    cells = np.arange(k * k)
    location_image = np.empty((SYMMETRIES, span * span), dtype=np.int64)
    code_image = np.empty((SYMMETRIES, 3 ** (k * k)), dtype=np.int64)
    for g in range(SYMMETRIES):
        cell_image = None
        for row in range(span):
            for col in range(span):
                points = (row + cells // k) * size + col + cells % k
                image = perms[g, points]
                rows, cols = image // size, image % size
                top, left = rows.min(), cols.min()
                location_image[g, row * span + col] = top * span + left
                moved = (rows - top) * k + (cols - left)
                if cell_image is None:
                    cell_image = moved
                elif not np.array_equal(cell_image, moved):
                    raise AssertionError("a board symmetry turned two squares differently")
        code_image[g] = digits @ powers[cell_image]
    inverse = ((3 - digits) % 3) @ powers
    return location_image, code_image, inverse


def _classes(positive: np.ndarray, negative: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Equivalence classes from the smallest image of each shape and of its inversion.

    A shape's class is the union of its images and its inversion's images, represented by the
    smallest member (the paper's canonical example); the sign is -1 when that member is an
    image of the inversion, and 0 (neutral, removed) when the two orbits are one.  Returns
    (dense class index, sign, number of classes).
    """
    canonical = np.minimum(positive, negative)
    neutral = positive == negative
    sign = np.where(neutral, 0, np.where(positive < negative, 1, -1)).astype(np.int8)
    unique, dense = np.unique(np.where(neutral, -1, canonical), return_inverse=True)
    dense = dense.reshape(canonical.shape) - (1 if unique[0] == -1 else 0)
    index = np.where(neutral, 0, dense).astype(np.int32)
    return index, sign, int(unique.shape[0] - (1 if unique[0] == -1 else 0))


@cache
def square_table(size: int, k: int, sharing: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Weight index and sign of every raw feature of the k x k squares of one board.

    Raw features are numbered ``location * 3**(k*k) + code``; returns (``int32[L * S]``
    weight indices from 0, ``int8[L * S]`` signs, number of weights).
    """
    span = size - k + 1
    shapes = 3 ** (k * k)
    if sharing == "none":
        sign = np.ones((span * span, shapes), dtype=np.int8)
        sign[:, 0] = 0  # the all-empty square (Sect. 4.4, footnote 7)
        return np.arange(span * span * shapes, dtype=np.int32), sign.ravel(), span * span * shapes
    location_image, code_image, inverse = _square_images(size, k)
    if sharing == "LI":
        index, sign, count = _classes(code_image.min(axis=0), code_image[:, inverse].min(axis=0))
        return np.tile(index, span * span), np.tile(sign, span * span), count
    if sharing == "LD":
        codes = np.arange(shapes, dtype=np.int64)
        positive = np.full((span * span, shapes), np.iinfo(np.int64).max)
        negative = positive.copy()
        for g in range(SYMMETRIES):
            where = location_image[g][:, None] * shapes
            np.minimum(positive, where + code_image[g][codes][None, :], out=positive)
            np.minimum(negative, where + code_image[g][inverse][None, :], out=negative)
        index, sign, count = _classes(positive, negative)
        return index.ravel(), sign.ravel(), count
    raise ValueError(f"sharing must be one of {SHARINGS}, not {sharing!r}")


def shape_maps(
    size: int, enumerated: tuple[int, ...], shapes: tuple[int, ...], sharing: tuple[str, ...], offset: int = 0
) -> tuple[np.ndarray, np.ndarray, int]:
    """The maps of one memory: ``(index int32[M, F], sign int8[M, F], weights)``.

    One row per sharing in ``sharing``; the raw features are those of `windows` (size,
    ``enumerated``), of which the squares in ``shapes`` are features of this memory (the others
    get sign 0).  Weights are laid out sharing by sharing, then square size by square size, and
    numbered from ``offset`` (where this memory starts in a stacked weight vector).
    """
    geometry = windows(size, enumerated)
    index = np.zeros((len(sharing), geometry.features), dtype=np.int32)
    sign = np.zeros((len(sharing), geometry.features), dtype=np.int8)
    count = offset
    for m, mode in enumerate(sharing):
        start = 0
        for k in enumerated:
            block = (size - k + 1) ** 2 * 3 ** (k * k)
            if k in shapes:
                square_index, square_sign, weights = square_table(size, k, mode)
                index[m, start : start + block] = square_index + count
                sign[m, start : start + block] = square_sign
                count += weights
            start += block
    return index, sign, count - offset
