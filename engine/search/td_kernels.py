"""Local shape features of Go and the compiled TD(lambda) simulations over them (numba).

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
moves, legality and superko are go_kernels' own kernels.

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

Value (Sect. 3.2): V(s) = sigmoid(sum_m sum_w sign[m, f_w] * theta[index[m, f_w]]), Black's
winning probability.  The maps of a search are stacked: the first ``learnt`` rows are the
memory being learnt (TD search's transient memory, or the permanent one during offline TD
learning), the others are read only (Dyna-2's permanent memory during the search, Sect. 5.3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit

from engine.games import go_kernels as gk
from engine.games.symmetry import COUNT as SYMMETRIES
from engine.games.symmetry import point_permutations

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


@lru_cache(maxsize=None)
def windows(size: int, shapes: tuple[int, ...]) -> Windows:
    """The windows of ``shapes`` (sorted, from `SHAPES`) on a ``size`` x ``size`` board."""
    if not shapes or any(k not in SHAPES for k in shapes) or tuple(sorted(set(shapes))) != shapes:
        raise ValueError(f"shapes must be a sorted selection of {SHAPES}, not {shapes!r}")
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


@lru_cache(maxsize=None)
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


def diagonal_table(size: int) -> np.ndarray:
    """``int32[size * size, 4]``: the diagonal neighbours of each point, -1 off the board."""
    table = np.full((size * size, 4), -1, dtype=np.int32)
    for row in range(size):
        for col in range(size):
            for k, (dr, dc) in enumerate(((-1, -1), (-1, 1), (1, -1), (1, 1))):
                r, c = row + dr, col + dc
                if 0 <= r < size and 0 <= c < size:
                    table[row * size + col, k] = r * size + c
    return table


def trace_depth(lam: float, cutoff: float, longest: int) -> int:
    """How many earlier same-colour states an eligibility trace keeps.

    The trace of state s_{t-2j} has decayed to lambda**j; terms below ``cutoff`` are dropped
    (an approximation that changes an update by less than that fraction), which keeps the
    update's cost bounded.  lambda = 1 (Monte-Carlo) keeps the whole episode.
    """
    if lam <= 0.0:
        return 0
    if lam >= 1.0:
        return longest
    return min(longest, math.ceil(math.log(cutoff) / math.log(lam)))


# --- compiled kernels ----------------------------------------------------------------------


@njit(cache=True)
def seed_state(seed: int) -> np.ndarray:
    """The state of `_uniform`'s generator (xorshift64*) for a seed; never zero."""
    state = np.empty(1, dtype=np.uint64)
    x = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x2545F4914F6CDD1D)
    state[0] = x if x != np.uint64(0) else np.uint64(1)
    return state


@njit(cache=True)
def _uniform(rng: np.ndarray) -> float:
    """A float in [0, 1) from the search's own generator (reproducible per search)."""
    x = rng[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    rng[0] = x
    return float((x * np.uint64(0x2545F4914F6CDD1D)) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def _below(rng: np.ndarray, count: int) -> int:
    return min(int(_uniform(rng) * count), count - 1)


@njit(cache=True)
def window_codes(board: np.ndarray, point_windows: np.ndarray, point_powers: np.ndarray, codes: np.ndarray) -> None:
    """Fill ``codes`` with the shape code of every window of ``board``."""
    codes[:] = 0
    for p in range(board.shape[0]):
        digit = (board[p] + 3) % 3
        if digit != 0:
            for j in range(point_windows.shape[1]):
                w = point_windows[p, j]
                if w < 0:
                    break
                codes[w] += digit * point_powers[p, j]


@njit(cache=True)
def _shape_value(f: int, index: np.ndarray, sign: np.ndarray, theta: np.ndarray) -> float:
    """Contribution of raw feature ``f`` to the logit, over every map."""
    total = 0.0
    for m in range(index.shape[0]):
        s = sign[m, f]
        if s != 0:
            total += s * theta[index[m, f]]
    return total


@njit(cache=True)
def logit(codes: np.ndarray, base: np.ndarray, index: np.ndarray, sign: np.ndarray, theta: np.ndarray) -> float:
    """sum_w phi_w . theta: the value's logit for a position given by its window codes."""
    total = 0.0
    for w in range(codes.shape[0]):
        total += _shape_value(base[w] + codes[w], index, sign, theta)
    return total


@njit(cache=True)
def _sigmoid(x: float) -> float:
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@njit(cache=True)
def _recode(
    old: np.ndarray, new: np.ndarray, point_windows: np.ndarray, point_powers: np.ndarray, codes: np.ndarray
) -> None:
    """Update ``codes`` from board ``old`` to board ``new`` (the stone played and any captures)."""
    for p in range(old.shape[0]):
        if old[p] != new[p]:
            change = (new[p] + 3) % 3 - (old[p] + 3) % 3
            for j in range(point_windows.shape[1]):
                w = point_windows[p, j]
                if w < 0:
                    break
                codes[w] += change * point_powers[p, j]


@njit(cache=True)
def chain_liberties(board: np.ndarray, nbr: np.ndarray, chain: np.ndarray, libs: np.ndarray) -> None:
    """Label the chains of ``board`` (``chain[p]`` from 1, 0 on empty points) and count the
    distinct liberties of each (``libs[label]``).

    The afterstate of a move needs its captures; go_kernels.legal_points finds the same
    chains but keeps them to itself.
    """
    n = board.shape[0]
    chain[:] = 0
    stack = np.empty(n, np.int32)
    g = 0
    for p in range(n):
        if board[p] != 0 and chain[p] == 0:
            g += 1
            gk._flood(board, nbr, p, chain, g, stack)
            libs[g] = 0
    for p in range(n):
        if board[p] != 0:
            continue
        c0 = 0
        c1 = 0
        c2 = 0
        for k in range(4):
            q = nbr[p, k]
            if q >= 0:
                g = chain[q]
                if g != 0 and g != c0 and g != c1 and g != c2:
                    libs[g] += 1
                    c2 = c1
                    c1 = c0
                    c0 = g


@njit(cache=True)
def own_eye(board: np.ndarray, p: int, color: int, nbr: np.ndarray, diag: np.ndarray) -> bool:
    """Whether empty ``p`` is a single-point eye of ``color``: every neighbour is its stone and
    the opponent holds at most one diagonal point (none on the edge).  Simulated players never
    fill those (Sect. 3.2.1), which is what makes random games end."""
    for k in range(4):
        q = nbr[p, k]
        if q >= 0 and board[q] != color:
            return False
    enemy = 0
    edge = False
    for k in range(4):
        q = diag[p, k]
        if q < 0:
            edge = True
        elif board[q] == -color:
            enemy += 1
    return enemy == 0 if edge else enemy < 2


@njit(cache=True)
def afterstate_logits(
    board: np.ndarray,
    color: int,
    candidates: np.ndarray,
    codes: np.ndarray,
    nbr: np.ndarray,
    base: np.ndarray,
    point_windows: np.ndarray,
    point_powers: np.ndarray,
    index: np.ndarray,
    sign: np.ndarray,
    theta: np.ndarray,
    out: np.ndarray,
) -> None:
    """``out[p]``: the logit of V(s o p), the position after ``color`` plays each candidate point.

    Incremental (Sect. 3.2): a stone changes only the windows that cover its point, so the
    afterstate logit is the current one plus, for each such window, the value of its new shape
    minus that of its old one.  A move that captures changes more points; its afterstate is
    built and evaluated whole (rare, and exactly the moves whose value matters most).
    """
    n = board.shape[0]
    current = np.empty(codes.shape[0])
    total = 0.0
    for w in range(codes.shape[0]):
        current[w] = _shape_value(base[w] + codes[w], index, sign, theta)
        total += current[w]
    chain = np.empty(n, np.int32)
    libs = np.empty(n + 1, np.int32)
    chain_liberties(board, nbr, chain, libs)
    digit = (color + 3) % 3
    scratch = np.empty(n, board.dtype)
    scratch_codes = np.empty_like(codes)
    for p in range(n):
        if not candidates[p]:
            continue
        captures = False
        for k in range(4):
            q = nbr[p, k]
            if q >= 0 and board[q] == -color and libs[chain[q]] == 1:
                captures = True
        if captures:
            scratch[:] = board
            scratch[p] = color
            for k in range(4):
                q = nbr[p, k]
                if q >= 0 and board[q] == -color and libs[chain[q]] == 1:
                    g = chain[q]
                    for r in range(n):
                        if chain[r] == g:
                            scratch[r] = 0
            window_codes(scratch, point_windows, point_powers, scratch_codes)
            out[p] = logit(scratch_codes, base, index, sign, theta)
            continue
        value = total
        for j in range(point_windows.shape[1]):
            w = point_windows[p, j]
            if w < 0:
                break
            value += _shape_value(base[w] + codes[w] + digit * point_powers[p, j], index, sign, theta) - current[w]
        out[p] = value


@njit(cache=True)
def _record(
    codes: np.ndarray,
    base: np.ndarray,
    index: np.ndarray,
    sign: np.ndarray,
    theta: np.ndarray,
    learnt: int,
    slot_index: np.ndarray,
    slot_sign: np.ndarray,
) -> tuple[int, float]:
    """Store phi(s) of the learnt maps (weight index and sign of each active feature) in a
    trace slot; returns (how many, the logit part of the read-only maps)."""
    count = 0
    fixed = 0.0
    for w in range(codes.shape[0]):
        f = base[w] + codes[w]
        for m in range(index.shape[0]):
            s = sign[m, f]
            if s == 0:
                continue
            if m < learnt:
                slot_index[count] = index[m, f]
                slot_sign[count] = s
                count += 1
            else:
                fixed += s * theta[index[m, f]]
    return count, fixed


@njit(cache=True)
def _slot_logit(slot_index: np.ndarray, slot_sign: np.ndarray, count: int, fixed: float, theta: np.ndarray) -> float:
    total = fixed
    for i in range(count):
        total += slot_sign[i] * theta[slot_index[i]]
    return total


@njit(cache=True)
def ntd2_update(
    u: int,
    now: int,
    target: float,
    trace_index: np.ndarray,
    trace_sign: np.ndarray,
    trace_count: np.ndarray,
    trace_fixed: np.ndarray,
    theta: np.ndarray,
    alpha: float,
    lam: float,
    depth: int,
) -> float:
    """Logistic NTD2(lambda) for the state of time ``u`` (Sect. 3.2 and 3.3.4); returns delta.

    The two-ply TD error compares V(s_u) with the next value of the same player's turn,
    ``target`` = V(s_{u+2}), or the reward at the end of the game; theta moves by
    alpha * delta * e_u, where e_u = sum_j lambda**j phi(s_{u-2j}) / |phi(s_{u-2j})|**2 (one
    trace per colour, cut after ``depth`` terms, see `trace_depth`).  Logistic TD descends the
    cross-entropy, so the gradient is phi itself (no sigmoid derivative); normalising by the
    number of active learnt features makes alpha the fraction of the error corrected in one
    step: with alpha = 1 the logit of s_u moves by exactly delta (when no weight appears twice).
    The slots of the trace ring are indexed by time modulo its length; ``now`` is the latest
    time recorded, so older slots than the ring holds are never read.
    """
    ring = trace_count.shape[0]
    slot = u % ring
    delta = target - _sigmoid(_slot_logit(trace_index[slot], trace_sign[slot], trace_count[slot], trace_fixed[slot], theta))
    decay = 1.0
    for j in range(depth + 1):
        v = u - 2 * j
        if v < 0 or now - v >= ring:
            break
        slot = v % ring
        count = trace_count[slot]
        if count > 0:
            step = alpha * delta * decay / count
            for i in range(count):
                theta[trace_index[slot, i]] += step * trace_sign[slot, i]
        decay *= lam
    return delta


@njit(cache=True)
def simulate(
    board0: np.ndarray,
    seen0: np.ndarray,
    hash0: int,
    color0: int,
    passes0: int,
    move0: int,
    max_moves: int,
    komi: float,
    nbr: np.ndarray,
    zob: np.ndarray,
    diag: np.ndarray,
    base: np.ndarray,
    point_windows: np.ndarray,
    point_powers: np.ndarray,
    index: np.ndarray,
    sign: np.ndarray,
    theta: np.ndarray,
    learnt: int,
    epsilon: float,
    alpha: float,
    lam: float,
    depth: int,
    greedy_moves: int,
    rng: np.ndarray,
) -> tuple[float, int]:
    """One simulated game from a position, learning ``theta`` as it goes; returns its reward
    (1 Black wins, 0 White wins, 0.5 a draw) and the number of moves simulated.

    TD search's simulation (Sect. 4.2, 4.4): the players choose epsilon-greedily on the
    current afterstate values (Black maximising, White minimising V, ties broken at random)
    for the first ``greedy_moves`` moves, then by the default policy, uniformly random (Sect.
    4.5.1, the paper's T); both never fill their own single-point eyes and pass only without
    another move (Sect. 3.2.1).  After every move the state two plies back is updated by
    logistic NTD2(lambda) (`ntd2_update`), and at the end the last state of each colour
    learns from the reward, so every simulated state learns, the default policy's too.
    Self-play TD learning (Sect. 3.2.1) is the same game from the empty board with
    ``greedy_moves`` beyond the move cap.
    """
    n = board0.shape[0]
    steps = max(max_moves - move0, 0)
    ring = 2 * depth + 3
    features = index.shape[0] * base.shape[0]
    trace_index = np.empty((ring, features), np.int32)
    trace_sign = np.empty((ring, features), np.int8)
    trace_count = np.zeros(ring, np.int64)
    trace_fixed = np.zeros(ring)
    hist = np.empty((1, n), np.int8)
    hist[0] = board0
    new_hist = np.empty((1, n), np.int8)
    seen = np.empty(seen0.shape[0] + steps + 1, np.int64)
    seen[: seen0.shape[0]] = seen0
    new_seen = np.empty_like(seen)
    known = seen0.shape[0]
    mask = np.empty(n + 1, np.bool_)
    candidates = np.zeros(n + 1, np.bool_)
    moves = np.empty(n, np.int32)
    values = np.empty(n)
    codes = np.empty(base.shape[0], np.int32)
    window_codes(board0, point_windows, point_powers, codes)
    h = hash0
    color = color0
    passes = passes0
    move = move0
    t = 0
    trace_count[0], trace_fixed[0] = _record(codes, base, index, sign, theta, learnt, trace_index[0], trace_sign[0])
    while True:
        board = hist[0]
        gk.legal_points(board, color, h, seen[:known], nbr, zob, mask)
        count = 0
        for p in range(n):
            ok = mask[p] and not own_eye(board, p, color, nbr, diag)
            candidates[p] = ok
            if ok:
                moves[count] = p
                count += 1
        if count == 0:
            action = n
        elif t < greedy_moves and _uniform(rng) >= epsilon:
            afterstate_logits(
                board, color, candidates, codes, nbr, base, point_windows, point_powers, index, sign, theta, values
            )
            action = moves[0]
            best = color * values[action]
            ties = 1
            for i in range(1, count):
                v = color * values[moves[i]]
                if v > best:
                    best = v
                    action = moves[i]
                    ties = 1
                elif v == best:
                    ties += 1
                    if _below(rng, ties) == 0:
                        action = moves[i]
        else:
            action = moves[_below(rng, count)]
        if action == n:
            passes += 1
        else:
            status, h = gk.play_stone(hist, seen[:known], h, action, color, nbr, zob, new_hist, new_seen[: known + 1])
            if status != gk.OK:  # cannot happen for a move legal_points allowed
                raise RuntimeError("TD search simulation played an illegal move")
            _recode(hist[0], new_hist[0], point_windows, point_powers, codes)
            hist, new_hist = new_hist, hist
            seen, new_seen = new_seen, seen
            known += 1
            passes = 0
        color = -color
        move += 1
        t += 1
        if passes >= 2 or move >= max_moves:
            break
        slot = t % ring
        trace_count[slot], trace_fixed[slot] = _record(
            codes, base, index, sign, theta, learnt, trace_index[slot], trace_sign[slot]
        )
        if t >= 2:
            target = _sigmoid(_slot_logit(trace_index[slot], trace_sign[slot], trace_count[slot], trace_fixed[slot], theta))
            ntd2_update(t - 2, t, target, trace_index, trace_sign, trace_count, trace_fixed, theta, alpha, lam, depth)
    owner = np.empty(n, np.int8)
    black, white = gk.area(hist[0], nbr, owner)
    score = black - white - komi
    reward = 1.0 if score > 0 else (0.0 if score < 0 else 0.5)
    for u in (t - 2, t - 1):
        if u >= 0:
            ntd2_update(u, t - 1, reward, trace_index, trace_sign, trace_count, trace_fixed, theta, alpha, lam, depth)
    return reward, t
