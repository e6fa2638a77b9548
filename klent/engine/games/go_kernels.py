"""Compiled inner loops of the Go rules (numba), on flat boards.

A board is ``int8[size * size]`` with +1 for Black, -1 for White and 0 for empty; point
``p = row * size + col``.  Neighbours come from a precomputed ``int32[n, 4]`` table (-1 off
the board), so the kernels work for every board size without padding.  Positions are hashed
with Zobrist keys (``int64[2, n]``, index 0 Black, 1 White, all below 2**63 so hashes stay
plain non-negative int64): the hash of a position after a move is the parent's hash XOR the
new stone XOR the captured stones, which is how the legal-move kernel tests positional
superko for every candidate without building the candidate boards.  ``seen`` is the sorted
array of the hashes of every position of the game so far, searched by bisection.

Why numba: a legal-move mask needs a liberty count for every group and a capture/suicide/
superko verdict for every empty point; in Python that is milliseconds per position, compiled
it is microseconds, which is what search and self-play need.  ``cache=True`` keeps the
compiled code on disk so only the first import on a machine pays for compilation.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from numba import njit

OK = 0
OCCUPIED = 1
SUICIDE = 2
SUPERKO = 3

HISTORY = 8  # positions kept per state for the encoder (current first)


@cache
def board_tables(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Neighbour, Zobrist and diagonal tables of a board size, made once and shared."""
    return neighbour_table(size), zobrist_table(size), diagonal_table(size)


def neighbour_table(size: int) -> np.ndarray:
    """``int32[size * size, 4]``: the up to four neighbours of each point, -1 where off-board."""
    table = np.full((size * size, 4), -1, dtype=np.int32)
    for row in range(size):
        for col in range(size):
            p = row * size + col
            for k, (dr, dc) in enumerate(((-1, 0), (1, 0), (0, -1), (0, 1))):
                r, c = row + dr, col + dc
                if 0 <= r < size and 0 <= c < size:
                    table[p, k] = r * size + c
    return table


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


def zobrist_table(size: int) -> np.ndarray:
    """``int64[2, size * size]`` keys in [1, 2**63), fixed per size so hashes are reproducible."""
    rng = np.random.default_rng(0x5EED0000 + size)
    return rng.integers(1, 2**63 - 1, size=(2, size * size), dtype=np.int64)


@njit(cache=True)
def _contains(sorted_keys: np.ndarray, key: int) -> bool:
    lo, hi = 0, sorted_keys.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if sorted_keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo < sorted_keys.shape[0] and sorted_keys[lo] == key


@njit(cache=True)
def board_hash(board: np.ndarray, zob: np.ndarray) -> int:
    """Zobrist hash of a whole board (used once per set-up position)."""
    h = 0
    for p in range(board.shape[0]):
        if board[p] == 1:
            h ^= zob[0, p]
        elif board[p] == -1:
            h ^= zob[1, p]
    return h


@njit(cache=True)
def _flood(
    board: np.ndarray, nbr: np.ndarray, start: int, mark: np.ndarray, tag: int, stack: np.ndarray
) -> int:
    """Collect the chain of ``start`` (its connected points of value ``board[start]``).

    The points go to ``stack[:size]`` with ``mark`` set to ``tag`` (non-zero); returns
    ``size``.  Only unmarked points (``mark == 0``) are entered, so a caller that floods
    several chains with one ``mark`` visits each point once.  Every kernel needs the same walk
    (a stone group for captures, suicide and liberties, an empty region for area) and then
    looks at the chain's neighbours for its own purpose, so the walk lives here and the look
    in the callers.
    """
    v = board[start]
    mark[start] = tag
    stack[0] = start
    size = 1
    i = 0
    while i < size:
        s = stack[i]
        i += 1
        for k in range(4):
            r = nbr[s, k]
            if r >= 0 and board[r] == v and mark[r] == 0:
                mark[r] = tag
                stack[size] = r
                size += 1
    return size


@njit(cache=True)
def _touches(board: np.ndarray, nbr: np.ndarray, stack: np.ndarray, size: int, value: int) -> bool:
    """Whether a point of ``stack[:size]`` has a neighbour of ``value`` (0: the chain has a liberty).

    The look that follows ``_flood`` when only a yes/no is needed; it stops at the first hit,
    which is what keeps the capture, suicide and area checks cheap.
    """
    for j in range(size):
        s = stack[j]
        for k in range(4):
            r = nbr[s, k]
            if r >= 0 and board[r] == value:
                return True
    return False


@njit(cache=True)
def play_stone(
    hist: np.ndarray,
    seen: np.ndarray,
    h: int,
    p: int,
    color: int,
    nbr: np.ndarray,
    zob: np.ndarray,
    new_hist: np.ndarray,
    new_seen: np.ndarray,
) -> tuple[int, int]:
    """Play ``color`` at ``p`` on ``hist[0]``; returns ``(status, new hash)``.

    On ``OK`` it fills ``new_hist`` (the new board first, then ``hist[:-1]``) and ``new_seen``
    (``seen`` with the new hash inserted in order); on any other status the outputs are
    garbage and must be dropped.
    """
    board = hist[0]
    n = board.shape[0]
    if board[p] != 0:
        return OCCUPIED, h
    new = new_hist[0]
    new[:] = board
    new[p] = color
    own = 0 if color == 1 else 1
    h2 = h ^ zob[own, p]
    # One mark for all floods: a flooded enemy chain is marked whole, so a second neighbour
    # of p in it is skipped, and the own-chain flood only enters stones of ``color``.  A
    # chain with an empty point next to the stone beside p (the usual case) is not flooded.
    mark = np.zeros(n, np.int32)
    stack = np.empty(n, np.int32)
    captured = False
    for k in range(4):
        q = nbr[p, k]
        if q < 0 or new[q] != -color or mark[q] != 0:
            continue
        stack[0] = q
        if _touches(new, nbr, stack, 1, 0):
            continue
        size = _flood(new, nbr, q, mark, 1, stack)
        if not _touches(new, nbr, stack, size, 0):
            captured = True
            for j in range(size):
                new[stack[j]] = 0
                h2 ^= zob[1 - own, stack[j]]
    if not captured:
        # Without captures the new stone's group needs a liberty of its own (again an empty
        # neighbour of p settles it without a flood).
        stack[0] = p
        if not _touches(new, nbr, stack, 1, 0):
            size = _flood(new, nbr, p, mark, 1, stack)
            if not _touches(new, nbr, stack, size, 0):
                return SUICIDE, h
    if _contains(seen, h2):
        return SUPERKO, h
    for t in range(1, hist.shape[0]):
        new_hist[t] = hist[t - 1]
    m = seen.shape[0]
    j = 0
    while j < m and seen[j] < h2:
        new_seen[j] = seen[j]
        j += 1
    new_seen[j] = h2
    new_seen[j + 1 :] = seen[j:]
    return OK, h2


@njit(cache=True)
def count_liberties(board: np.ndarray, nbr: np.ndarray, group: np.ndarray, libs: np.ndarray) -> None:
    """Add to ``libs[g]`` the number of distinct liberties of each chain ``g`` that ``group``
    labels (``group[p]``: the chain of the stone on ``p``, from 1).

    Each empty point is one liberty of each distinct chain beside it; counting from the empty
    side reads each point's neighbours once, where a second look around every flooded stone
    (with a per-chain mark on its liberties) cost about 5% more.
    """
    for p in range(board.shape[0]):
        if board[p] != 0:
            continue
        c0 = 0
        c1 = 0
        c2 = 0
        for k in range(4):
            q = nbr[p, k]
            if q < 0:
                continue
            g = group[q]
            if g != 0 and g != c0 and g != c1 and g != c2:
                libs[g] += 1
                c2 = c1
                c1 = c0
                c0 = g


@njit(cache=True)
def legal_points(
    board: np.ndarray, color: int, h: int, seen: np.ndarray, nbr: np.ndarray, zob: np.ndarray, out: np.ndarray
) -> None:
    """Fill ``out[:n]`` with the legality of ``color`` playing each point, ``out[n]`` (pass) True.

    Floods label the groups with their Zobrist hashes, a pass over the empty points counts
    each group's distinct liberties, and then a point is legal when it is empty, the new stone
    keeps or gains a liberty (an empty neighbour, a friendly group with another liberty, or a
    capture of an enemy group in atari), and the resulting position's hash is not among
    ``seen``.
    """
    n = board.shape[0]
    group = np.zeros(n, np.int32)  # a stone's group number, from 1 (0: not yet flooded)
    libs = np.zeros(n + 1, np.int32)
    ghash = np.empty(n + 1, np.int64)
    stack = np.empty(n, np.int32)
    g = 0
    for p in range(n):
        v = board[p]
        if v == 0 or group[p] != 0:
            continue
        g += 1
        size = _flood(board, nbr, p, group, g, stack)
        key = 0 if v == 1 else 1
        gh = 0
        for j in range(size):
            gh ^= zob[key, stack[j]]
        ghash[g] = gh
    count_liberties(board, nbr, group, libs)
    own = 0 if color == 1 else 1
    for p in range(n):
        if board[p] != 0:
            out[p] = False
            continue
        alive = False
        hp = h ^ zob[own, p]
        c0 = -1
        c1 = -1
        c2 = -1
        for k in range(4):
            q = nbr[p, k]
            if q < 0:
                continue
            w = board[q]
            if w == 0:
                alive = True
                continue
            g = group[q]
            if w == color:
                if libs[g] > 1:
                    alive = True
            elif libs[g] == 1 and g != c0 and g != c1 and g != c2:
                alive = True
                hp ^= ghash[g]
                c2 = c1
                c1 = c0
                c0 = g
        out[p] = alive and not _contains(seen, hp)
    out[n] = True  # pass


@njit(cache=True)
def area(board: np.ndarray, nbr: np.ndarray, owner: np.ndarray) -> tuple[int, int]:
    """Tromp-Taylor area: fills ``owner`` (+1/-1/0 per point), returns (Black, White) area.

    A point counts for a colour if it holds a stone of that colour or is empty and reaches
    only that colour through empty points.
    """
    n = board.shape[0]
    owner[:] = board
    done = np.zeros(n, np.int32)
    stack = np.empty(n, np.int32)
    for p in range(n):
        if board[p] != 0 or done[p] != 0:
            continue
        size = _flood(board, nbr, p, done, 1, stack)
        reach_black = _touches(board, nbr, stack, size, 1)
        reach_white = _touches(board, nbr, stack, size, -1)
        value = 0
        if reach_black and not reach_white:
            value = 1
        elif reach_white and not reach_black:
            value = -1
        for j in range(size):
            owner[stack[j]] = value
    black = 0
    white = 0
    for p in range(n):
        if owner[p] == 1:
            black += 1
        elif owner[p] == -1:
            white += 1
    return black, white


@njit(cache=True)
def encode_planes(hist: np.ndarray, color: int, out: np.ndarray) -> None:
    """AlphaGo Zero planes of one position: ``hist`` int8[8, n], ``color`` +1/-1 to move.

    ``out`` float32[17, size, size]: planes 0-7 the mover's stones in the last 8 positions
    (current first), 8-15 the opponent's, 16 all ones when Black is to move.
    """
    size = out.shape[1]
    for t in range(HISTORY):
        for row in range(size):
            for col in range(size):
                v = hist[t, row * size + col]
                out[t, row, col] = 1.0 if v == color else 0.0
                out[HISTORY + t, row, col] = 1.0 if v == -color else 0.0
    out[2 * HISTORY] = 1.0 if color == 1 else 0.0


LIBERTY_PLANES = 6  # encoder version 2: the mover's chains with 1, 2, 3+ liberties, then the opponent's


@njit(cache=True)
def liberty_planes(board: np.ndarray, nbr: np.ndarray, color: int, out: np.ndarray) -> None:
    """KataGo's liberty features of one board: ``out`` float32[6, size, size] gets, for every
    stone, a one in plane 0/1/2 when its chain (the mover's, ``color``) has 1/2/3+ liberties,
    and in plane 3/4/5 for the opponent's chains.  A chain in atari or with two liberties is
    what a capture race turns on; the plain stone planes leave the network to count them."""
    n = board.shape[0]
    size = out.shape[1]
    out[:] = 0.0
    mark = np.zeros(n, dtype=np.int32)
    seen = np.zeros(n, dtype=np.int32)  # liberty p counted for chain ``tag`` when seen[p] == tag
    stack = np.empty(n, dtype=np.int32)
    tag = 0
    for start in range(n):
        if board[start] == 0 or mark[start] != 0:
            continue
        tag += 1
        count = _flood(board, nbr, start, mark, tag, stack)
        liberties = 0
        for j in range(count):
            for k in range(4):
                r = nbr[stack[j], k]
                if r >= 0 and board[r] == 0 and seen[r] != tag:
                    seen[r] = tag
                    liberties += 1
        plane = min(liberties, 3) - 1 + (0 if board[start] == color else 3)
        for j in range(count):
            p = stack[j]
            out[plane, p // size, p % size] = 1.0


@njit(cache=True)
def own_eye(board: np.ndarray, p: int, color: int, nbr: np.ndarray, diag: np.ndarray) -> bool:
    """Whether ``p`` is an empty single-point eye of ``color``: every neighbour is its stone and
    the opponent holds at most one diagonal point (none on the edge).  Playouts never fill
    those (TD search's simulations, Silver et al. 2012 Sect. 3.2.1: what makes random games
    end), nor does self-play under ``GoGame(fill_own_eyes=False)``."""
    if board[p] != 0:
        return False
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
def clear_own_eyes(board: np.ndarray, color: int, nbr: np.ndarray, diag: np.ndarray, mask: np.ndarray) -> None:
    """Set ``mask[p]`` False for every single-point eye of ``color`` (`own_eye`)."""
    for p in range(board.shape[0]):
        if mask[p] and own_eye(board, p, color, nbr, diag):
            mask[p] = False
