"""Board facts behind Go's move rules: chains, own eyes, self-atari, cleanup points, dead stones.

The rules of the game (legality, captures, superko, area score) are `klent.engine.games.go`'s
business; what is here is what a Go *program* reads off a board to judge a move
(`klent.engine.go_rules`): a move into its own single-point eye is a waste when passing is as good;
when dead stones must be removed (``kgs-genmove_cleanup``, or passing would lose) the useful
points are the liberties of enemy chains that are not self-atari; and a referee removes the
stones a network's ownership map calls dead.

Plain Python over small boards: the rules read a board once per move, far from the search's
hot loops, so numba would not pay here.  Boards are flat ``GoState.board().ravel()`` arrays:
+1 Black, -1 White, 0 empty, so a point index is the move's action (``row * size + col``, row
0 at the top).  A colour is the stone value, +1 or -1.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from klent.engine.games import go_kernels


@cache
def neighbours(size: int) -> tuple[tuple[int, ...], ...]:
    """Orthogonal neighbours of every point."""
    return _around(size, ((-1, 0), (1, 0), (0, -1), (0, 1)))


def _around(size: int, steps: tuple[tuple[int, int], ...]) -> tuple[tuple[int, ...], ...]:
    out = []
    for point in range(size * size):
        row, col = divmod(point, size)
        out.append(tuple(
            (row + dr) * size + col + dc for dr, dc in steps if 0 <= row + dr < size and 0 <= col + dc < size
        ))
    return tuple(out)


def chain_at(board: np.ndarray, size: int, point: int) -> tuple[set[int], set[int]]:
    """The stones of the chain through ``point`` and its liberties."""
    colour = board[point]
    adjacent = neighbours(size)
    stones, liberties, frontier = {point}, set(), [point]
    while frontier:
        p = frontier.pop()
        for q in adjacent[p]:
            if board[q] == 0:
                liberties.add(q)
            elif board[q] == colour and q not in stones:
                stones.add(q)
                frontier.append(q)
    return stones, liberties


def chains(board: np.ndarray, size: int, colour: int) -> list[tuple[set[int], set[int]]]:
    """Every chain of ``colour`` with its liberties, in board order of their first stone."""
    seen: set[int] = set()
    out = []
    for p in np.flatnonzero(board == colour).tolist():
        if p not in seen:
            stones, liberties = chain_at(board, size, p)
            seen |= stones
            out.append((stones, liberties))
    return out


def is_own_eye(board: np.ndarray, size: int, point: int, colour: int) -> bool:
    """True for a single-point eye of ``colour`` at ``point`` that is not a false eye.

    The usual playout rule: every orthogonal neighbour is ``colour``, and of the diagonal
    points at most one (none on the edge) holds an enemy stone.
    """
    nbr, _, diag = go_kernels.board_tables(size)
    return bool(go_kernels.own_eye(board, point, colour, nbr, diag))


def is_self_atari(board: np.ndarray, size: int, point: int, colour: int) -> bool:
    """True if ``colour`` at ``point`` captures nothing and leaves its chain one liberty or none."""
    if board[point] != 0:
        return False
    after = board.copy()
    after[point] = colour
    for q in neighbours(size)[point]:
        if after[q] == -colour and not chain_at(after, size, q)[1]:
            return False  # a capture gains liberties
    return len(chain_at(after, size, point)[1]) <= 1


def cleanup_points(board: np.ndarray, size: int, colour: int) -> list[int]:
    """Points where ``colour`` can still work to remove the opponent's stones, ascending.

    Liberties of enemy chains where ``colour`` does not put itself in atari (an own eye is
    never among them: all its neighbours are ``colour``'s).  When none is left, every enemy
    stone stands on its own eyes or in mutual life, so passing leaves no dead stone standing
    through our neglect.
    """
    points: set[int] = set()
    for _, liberties in chains(board, size, -colour):
        points |= liberties
    return sorted(p for p in points if not is_self_atari(board, size, p, colour))


def dead_stones(board: np.ndarray, size: int, owner: np.ndarray) -> set[int]:
    """The stones a referee would remove, judged by a predicted ownership map ``owner`` (flat,
    +1 = Black's, as ``board``): every chain whose mean predicted ownership is its opponent's.

    A chain is judged as a whole (KataGo's way of reading its ownership output), so one stone
    of a living group that the network is unsure about is not cut out of it.
    """
    dead: set[int] = set()
    for colour in (1, -1):
        for stones, _ in chains(board, size, colour):
            if float(np.mean(owner[sorted(stones)])) * colour < 0:
                dead |= stones
    return dead
