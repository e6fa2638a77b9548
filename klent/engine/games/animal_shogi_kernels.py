"""Compiled inner loops of Animal Shogi (numba): move generation, making moves, the encoder.

A position is ``int8[18]``: the 12 squares, square ``rank * 3 + file`` with a1 = 0 and c4 = 11
(the first player, sente, starts on ranks 1-2), +t for a sente piece of type t and -t for a
gote one (1 chick, 2 elephant, 3 giraffe, 4 lion, 5 hen: Pgx's order), then the hands, the
number of chicks, elephants and giraffes sente holds, then gote's.  The position's bytes are
also its identity for repetitions.

Why numba: a legal-move mask tries every step of every piece against the own lion's safety
and a drop on every empty square; a few microseconds compiled, a good part of a millisecond
in Python, while search and self-play need the rules to cost far less than a network
evaluation.  ``cache=True`` keeps the compiled code on disk.

The action tables are built here, in plain Python, because the kernels read them as
constants; `klent.engine.games.animal_shogi` describes the action layout they implement.
"""

from __future__ import annotations

import numpy as np
from numba import njit

FILES, RANKS = 3, 4
SQUARES = FILES * RANKS
HAND = SQUARES  # offset of the hands in a position
POSITION_SIZE = SQUARES + 6
NUM_PLANES = 12
NUM_ACTIONS = SQUARES * NUM_PLANES
DROP_PLANE = 8  # planes 8, 9, 10: drop a chick, an elephant, a giraffe
NO_PROMOTION_PLANE = 11
HISTORY = 8
POSITION_BYTES = POSITION_SIZE + 1  # a position in the history, then its repetition count
PLANES_PER_POSITION = 24
NUM_CHANNELS = HISTORY * PLANES_PER_POSITION + 2

CHICK, ELEPHANT, GIRAFFE, LION, HEN = 1, 2, 3, 4, 5

# Steps as (rank step, file step) in the mover's frame, N = towards the opponent.
DIRECTIONS = ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1))
DIRECTION_NAMES = ("N", "NE", "E", "SE", "S", "SW", "W", "NW")
MOVES = {
    CHICK: "N",
    ELEPHANT: "NE SE SW NW",
    GIRAFFE: "N E S W",
    LION: "N NE E SE S SW W NW",
    HEN: "N NE E S W NW",
}
# Bit d of _STEPS[piece type] is set when the piece steps in direction d.
_STEPS = np.zeros(HEN + 1, dtype=np.int64)
for _piece, _names in MOVES.items():
    for _name in _names.split():
        _STEPS[_piece] |= 1 << DIRECTION_NAMES.index(_name)


@njit(cache=True)
def frame(square: int, colour: int) -> int:
    """``square`` seen by ``colour`` (0 sente, 1 gote): gote's frame is the board turned
    half a turn, as each player sees it from their side."""
    return SQUARES - 1 - square if colour else square


def _build_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per colour: ``move_from``/``move_to`` of each step action (absolute squares; -1 for
    drops and steps off the board) and ``action_of[from, to]`` (the action of the step, -1
    if the squares are not neighbours).  The no-promotion plane exists for steps N from the
    third rank of the mover's frame only."""
    move_from = np.full((2, NUM_ACTIONS), -1, dtype=np.int64)
    move_to = np.full((2, NUM_ACTIONS), -1, dtype=np.int64)
    action_of = np.full((2, SQUARES, SQUARES), -1, dtype=np.int64)
    steps = [*DIRECTIONS, (0, 0), (0, 0), (0, 0), DIRECTIONS[0]]
    for colour in range(2):
        for point in range(SQUARES):
            rank, file = divmod(point, FILES)
            for plane, (dr, df) in enumerate(steps):
                to_rank, to_file = rank + dr, file + df
                if DROP_PLANE <= plane < NO_PROMOTION_PLANE or not (0 <= to_rank < RANKS and 0 <= to_file < FILES):
                    continue
                if plane == NO_PROMOTION_PLANE and to_rank != RANKS - 1:
                    continue
                action = point * NUM_PLANES + plane
                frm, to = frame(point, colour), frame(to_rank * FILES + to_file, colour)
                move_from[colour, action], move_to[colour, action] = frm, to
                if plane < DROP_PLANE:
                    action_of[colour, frm, to] = action
    return move_from, move_to, action_of


MOVE_FROM, MOVE_TO, ACTION_OF = _build_tables()
_DIRECTIONS = np.array(DIRECTIONS, dtype=np.int64)
# Direction index of an absolute step (dr, df), at [(dr + 1) * 3 + df + 1]; -1 for (0, 0).
_DIRECTION_OF = np.full(9, -1, dtype=np.int64)
for _d, (_dr, _df) in enumerate(DIRECTIONS):
    _DIRECTION_OF[(_dr + 1) * 3 + _df + 1] = _d


@njit(cache=True)
def attacked(board: np.ndarray, square: int, sign: int) -> bool:
    """Whether a piece of the side ``sign`` (+1 sente, -1 gote) attacks ``square``.  Every
    piece steps one square, so only the eight neighbours can attack."""
    rank, file = square // FILES, square % FILES
    for i in range(8):
        r, f = rank + _DIRECTIONS[i, 0], file + _DIRECTIONS[i, 1]
        if not (0 <= r < RANKS and 0 <= f < FILES):
            continue
        piece = board[r * FILES + f] * sign
        if piece <= 0:
            continue
        # The step from the attacker to the square, in the attacker's frame.
        d = _DIRECTION_OF[(-_DIRECTIONS[i, 0] * sign + 1) * 3 - _DIRECTIONS[i, 1] * sign + 1]
        if _STEPS[piece] >> d & 1:
            return True
    return False


@njit(cache=True)
def generate(position: np.ndarray, colour: int, mask: np.ndarray) -> tuple[int, bool, bool]:
    """Fill ``mask`` with the legal actions of ``colour`` to move; return their number,
    whether ``colour``'s lion is in check and whether the game is already over because the
    opponent's lion stands on its last rank (a "try": no actions then).  ``position`` is
    restored before returning."""
    mask[:] = False
    sign = 1 - 2 * colour
    their_last_rank = 0 if colour == 0 else RANKS - 1
    lion = 0
    for square in range(SQUARES):
        piece = position[square] * sign
        if piece == -LION and square // FILES == their_last_rank:
            return 0, False, True
        if piece == LION:
            lion = square
    in_check = attacked(position, lion, -sign)
    our_last_rank = RANKS - 1 - their_last_rank
    count = 0
    for frm in range(SQUARES):
        piece = position[frm] * sign
        if piece <= 0:
            continue
        rank, file = frm // FILES, frm % FILES
        for d in range(8):
            if not _STEPS[piece] >> d & 1:
                continue
            r, f = rank + _DIRECTIONS[d, 0] * sign, file + _DIRECTIONS[d, 1] * sign
            if not (0 <= r < RANKS and 0 <= f < FILES):
                continue
            to = r * FILES + f
            target = position[to]
            if target * sign > 0:
                continue
            position[to], position[frm] = position[frm], 0
            safe = not attacked(position, to if frm == lion else lion, -sign)
            position[frm], position[to] = position[to], target
            if not safe:
                continue
            mask[ACTION_OF[colour, frm, to]] = True
            count += 1
            if piece == CHICK and r == our_last_rank:  # it may also stay a chick
                mask[frame(frm, colour) * NUM_PLANES + NO_PROMOTION_PLANE] = True
                count += 1
    # A drop cannot capture, and with step movers only it cannot block a check either: drops
    # are legal exactly when the lion is not in check, on any empty square (a chick on the
    # last rank included, where it can never move).
    if not in_check:
        for kind in range(3):
            if position[HAND + 3 * colour + kind] == 0:
                continue
            for square in range(SQUARES):
                if position[square] == 0:
                    mask[frame(square, colour) * NUM_PLANES + DROP_PLANE + kind] = True
                    count += 1
    return count, in_check, False


@njit(cache=True)
def play(
    position: np.ndarray, colour: int, action: int, child: np.ndarray, mask: np.ndarray
) -> tuple[int, bool, bool, bool]:
    """Make the legal ``action`` of ``colour`` on a copy ``child`` of ``position`` and fill
    ``mask`` with the opponent's legal actions there.

    Returns `generate`'s three answers for the opponent and whether the move captured.  A captured
    hen goes to the hand as a chick; a chick reaching the last rank becomes a hen unless the
    action is the no-promotion one.
    """
    child[:] = position
    sign = 1 - 2 * colour
    plane = action % NUM_PLANES
    captured = 0
    if DROP_PLANE <= plane < NO_PROMOTION_PLANE:
        kind = plane - DROP_PLANE
        child[frame(action // NUM_PLANES, colour)] = sign * (kind + CHICK)
        child[HAND + 3 * colour + kind] -= 1
    else:
        frm, to = MOVE_FROM[colour, action], MOVE_TO[colour, action]
        moving, captured = child[frm], child[to]
        if captured != 0:
            kind = abs(captured)
            child[HAND + 3 * colour + (CHICK if kind == HEN else kind) - 1] += 1
        child[to], child[frm] = moving, 0
        last_rank = RANKS - 1 if colour == 0 else 0
        if moving * sign == CHICK and to // FILES == last_rank and plane != NO_PROMOTION_PLANE:
            child[to] = sign * HEN
    count, in_check, tried = generate(child, 1 - colour, mask)
    return count, in_check, tried, captured != 0


@njit(cache=True)
def encode(history: np.ndarray, colour: int, move_count: float, out: np.ndarray) -> None:
    """Fill ``out`` (float32[194, 4, 3]) from the side to move's view; see the module
    docstring of `klent.engine.games.animal_shogi` for the planes.

    ``history`` holds the last 8 positions, newest first, as `POSITION_BYTES` int8 each (the
    position, then how often it occurred before, at most 2); all zeros before the start.
    """
    out[:] = 0.0
    for i in range(HISTORY):
        base = i * POSITION_BYTES
        first = i * PLANES_PER_POSITION
        for square in range(SQUARES):
            piece = history[base + square]
            if piece == 0:
                continue
            theirs = (piece < 0) != (colour == 1)
            seen = frame(square, colour)
            out[first + 5 * theirs + abs(piece) - 1, seen // FILES, seen % FILES] = 1.0
        for side in range(2):  # 0: the side to move's hand, 1: the opponent's
            for kind in range(3):
                held = history[base + HAND + 3 * (colour ^ side) + kind]
                plane = first + 10 + 6 * side + 2 * kind
                if held >= 1:
                    out[plane] = 1.0
                if held >= 2:
                    out[plane + 1] = 1.0
        repetitions = history[base + POSITION_SIZE]
        if repetitions >= 1:
            out[first + 22] = 1.0
        if repetitions >= 2:
            out[first + 23] = 1.0
    last = HISTORY * PLANES_PER_POSITION
    out[last] = float(colour)
    out[last + 1] = move_count
