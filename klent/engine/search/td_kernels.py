"""The compiled TD(lambda) simulations of TD search over Go's local shape features (numba).

The features, their codes and the weight-sharing tables ``index``/``sign`` are
`klent.engine.search.td_features`.

Value (Sect. 3.2): V(s) = sigmoid(sum_m sum_w sign[m, f_w] * theta[index[m, f_w]]), Black's
winning probability.  The kernels take the memory being learnt as maps and weights (TD
search's transient memory, or the permanent one during offline TD learning), and a memory that
is only read (Dyna-2's permanent memory during the search, Sect. 5.3) as ``fixed[f]``, its
whole contribution per raw feature, summed over its maps once per search (`fixed_values`):
one lookup per window instead of one per map, and nothing to look up without it (empty array).
The eligibility traces and the NTD2(lambda) update the simulations learn by are
`klent.engine.search.td_traces`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from klent.engine.games import go_kernels as gk
from klent.engine.search.td_traces import ntd2_update, sigmoid, slot_logit, trace_add, trace_clear

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
def candidate_moves(
    board: np.ndarray,
    color: int,
    h: int,
    seen: np.ndarray,
    nbr: np.ndarray,
    zob: np.ndarray,
    diag: np.ndarray,
    mask: np.ndarray,
    moves: np.ndarray,
) -> int:
    """The moves a simulated player may choose among: ``mask[:n]`` the legal points that fill
    no own single-point eye (``mask[n]``, the pass, True), their points in ``moves[:count]``;
    returns ``count``.  What a choice that compares every candidate needs (the greedy moves,
    the network's first-move draw); `random_move` plays one without it."""
    gk.legal_points(board, color, h, seen, nbr, zob, mask)
    gk.clear_own_eyes(board, color, nbr, diag, mask)
    count = 0
    for p in range(board.shape[0]):
        if mask[p]:
            moves[count] = p
            count += 1
    return count


@njit(cache=True)
def random_move(
    hist: np.ndarray,
    seen: np.ndarray,
    h: int,
    color: int,
    nbr: np.ndarray,
    zob: np.ndarray,
    diag: np.ndarray,
    new_hist: np.ndarray,
    new_seen: np.ndarray,
    points: np.ndarray,
    rng: np.ndarray,
) -> tuple[int, int]:
    """Play the default policy's move: uniformly random among the legal points that do not
    fill an own single-point eye; returns (the point, the new hash), or (n, ``h``) when there
    is none (the player passes).  On a point, ``new_hist``/``new_seen`` hold the position after
    it, as `go_kernels.play_stone` fills them.

    Why not the legal mask: a random move needs only one legal point, so the empty points are
    drawn in random order and the first that is neither an own eye nor refused by
    ``play_stone`` (suicide, superko) is played.  Drawing without replacement until one is
    accepted is uniform over the accepted points, the distribution of a draw from the full mask,
    at the cost of a few local floods instead of a flood of the whole board and an eye test of
    every point.  ``points`` is scratch space of n entries.
    """
    board = hist[0]
    n = board.shape[0]
    count = 0
    for p in range(n):
        if board[p] == 0:
            points[count] = p
            count += 1
    while count > 0:
        i = _below(rng, count)
        p = points[i]
        if not gk.own_eye(board, p, color, nbr, diag):
            status, h2 = gk.play_stone(hist, seen, h, p, color, nbr, zob, new_hist, new_seen)
            if status == gk.OK:
                return p, h2
        count -= 1
        points[i] = points[count]
    return n, h


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


def fixed_values(index: np.ndarray, sign: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """``float64[F]``: a read-only memory's contribution to the logit of each raw feature."""
    return (sign * theta[index]).sum(axis=0)


@njit(cache=True)
def _shape_value(f: int, index: np.ndarray, sign: np.ndarray, theta: np.ndarray, fixed: np.ndarray) -> float:
    """Contribution of raw feature ``f`` to the logit: learnt maps, then the read-only part."""
    total = fixed[f] if fixed.shape[0] else 0.0
    for m in range(index.shape[0]):
        s = sign[m, f]
        if s != 0:
            total += s * theta[index[m, f]]
    return total


@njit(cache=True)
def logit(
    codes: np.ndarray, base: np.ndarray, index: np.ndarray, sign: np.ndarray, theta: np.ndarray, fixed: np.ndarray
) -> float:
    """sum_w phi_w . theta: the value's logit for a position given by its window codes.

    Empty windows are skipped: the all-empty shape is neutral under every sharing, so it is
    no feature.
    """
    total = 0.0
    for w in range(codes.shape[0]):
        if codes[w] != 0:
            total += _shape_value(base[w] + codes[w], index, sign, theta, fixed)
    return total


@njit(cache=True)
def _recode(
    old: np.ndarray,
    new: np.ndarray,
    point_windows: np.ndarray,
    point_powers: np.ndarray,
    codes: np.ndarray,
    base: np.ndarray,
    fixed: np.ndarray,
) -> float:
    """Update ``codes`` from board ``old`` to board ``new`` (the stone played and any captures);
    returns the change of the read-only memory's part of the logit.

    The read-only weights never change during a simulation, so their part of the logit is kept
    up to date here, from the few windows a move changes, instead of summed anew.
    """
    change = 0.0
    for p in range(old.shape[0]):
        if old[p] != new[p]:
            step = (new[p] + 3) % 3 - (old[p] + 3) % 3
            for j in range(point_windows.shape[1]):
                w = point_windows[p, j]
                if w < 0:
                    break
                f = base[w] + codes[w]
                codes[w] += step * point_powers[p, j]
                if fixed.shape[0]:
                    change += fixed[f + step * point_powers[p, j]] - fixed[f]
    return change


@njit(cache=True)
def chain_liberties(board: np.ndarray, nbr: np.ndarray, chain: np.ndarray, libs: np.ndarray) -> None:
    """Label the chains of ``board`` (``chain[p]`` from 1, 0 on empty points) and count the
    distinct liberties of each (``libs[label]``).

    The afterstate of a move needs its captures; go_kernels.legal_points finds the same
    chains (with their hashes, which this does not need) and counts their liberties with the
    same `go_kernels.count_liberties`.
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
    gk.count_liberties(board, nbr, chain, libs)


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
    fixed: np.ndarray,
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
        current[w] = 0.0 if codes[w] == 0 else _shape_value(base[w] + codes[w], index, sign, theta, fixed)
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
            out[p] = logit(scratch_codes, base, index, sign, theta, fixed)
            continue
        value = total
        for j in range(point_windows.shape[1]):
            w = point_windows[p, j]
            if w < 0:
                break
            f = base[w] + codes[w] + digit * point_powers[p, j]
            value += _shape_value(f, index, sign, theta, fixed) - current[w]
        out[p] = value


@njit(cache=True)
def _record(
    codes: np.ndarray, base: np.ndarray, index: np.ndarray, sign: np.ndarray, slot_index: np.ndarray,
    slot_sign: np.ndarray,
) -> int:
    """Store phi(s) of the learnt maps (weight index and sign of each active feature) in a
    slot; returns how many."""
    count = 0
    for w in range(codes.shape[0]):
        if codes[w] == 0:
            continue
        f = base[w] + codes[w]
        for m in range(index.shape[0]):
            s = sign[m, f]
            if s != 0:
                slot_index[count] = index[m, f]
                slot_sign[count] = s
                count += 1
    return count


@njit(cache=True)
def simulate(
    board0: np.ndarray,
    seen0: np.ndarray,
    hash0: int,
    color0: int,
    passes0: int,
    first_cdf: np.ndarray,
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
    fixed: np.ndarray,
    epsilon: float,
    alpha: float,
    lam: float,
    depth: int,
    greedy_moves: int,
    rng: np.ndarray,
    traces: tuple,
    ownership: np.ndarray,
) -> tuple[float, int]:
    """One simulated game from a position, learning ``theta`` as it goes; returns its reward
    (1 Black wins, 0 White wins, 0.5 a draw) and the number of moves simulated.

    TD search's simulation (Sect. 4.2, 4.4): the players choose epsilon-greedily on the
    current afterstate values (Black maximising, White minimising V, ties broken at random)
    for the first ``greedy_moves`` moves, then by the default policy, uniformly random (Sect.
    4.5.1, the paper's T; `random_move`); both never fill their own single-point eyes and pass
    only without another move (Sect. 3.2.1).  After every move the state two plies back is updated by
    logistic NTD2(lambda) (`ntd2_update`), and at the end the last state of each colour
    learns from the reward, so every simulated state learns, the default policy's too.
    ``traces`` (`new_traces`, for the learnt weights) are empty before and after; the final
    owner of each point (+1 Black, -1 White, 0 neither; Tromp-Taylor, and the game played
    out, so dead stones are gone) is added to ``ownership``.  ``first_cdf``, when not empty,
    is a cumulative distribution over the actions from which the game's first move is drawn
    instead of the epsilon-greedy choice (a network's policy, `klent.engine.search.td.TdSearch.choose`;
    a draw the player may not play, or a pass, falls back to that choice).
    Self-play TD learning (Sect. 3.2.1) is the same game from the empty board with
    ``greedy_moves`` beyond the move cap.
    """
    n = board0.shape[0]
    steps = max(max_moves - move0, 0)
    horizon = 2 * depth
    features = index.shape[0] * base.shape[0]
    slot_index = np.empty((3, features), np.int32)  # phi of the last three states, by time % 3
    slot_sign = np.empty((3, features), np.int8)
    slot_count = np.zeros(3, np.int64)
    slot_fixed = np.zeros(3)
    hist = np.empty((1, n), np.int8)
    hist[0] = board0
    new_hist = np.empty((1, n), np.int8)
    seen = np.empty(seen0.shape[0] + steps + 1, np.int64)
    seen[: seen0.shape[0]] = seen0
    new_seen = np.empty_like(seen)
    known = seen0.shape[0]
    mask = np.empty(n + 1, np.bool_)
    moves = np.empty(n, np.int32)
    values = np.empty(n)
    codes = np.empty(base.shape[0], np.int32)
    window_codes(board0, point_windows, point_powers, codes)
    frozen = logit(codes, base, index[:0], sign[:0], theta, fixed)  # the read-only memory's part
    slot_count[0] = _record(codes, base, index, sign, slot_index[0], slot_sign[0])
    slot_fixed[0] = frozen
    trace_add(0, 0, slot_index[0], slot_sign[0], slot_count[0], lam, traces)
    h = hash0
    color = color0
    passes = passes0
    move = move0
    t = 0
    while True:
        board = hist[0]
        greedy = t < greedy_moves and _uniform(rng) >= epsilon
        first_draw = t == 0 and first_cdf.shape[0] > 0
        drawn = -1
        if greedy or first_draw:
            # the choice needs every candidate: the afterstate values, or the draw's check
            count = candidate_moves(board, color, h, seen[:known], nbr, zob, diag, mask, moves)
            if first_draw:
                drawn = np.searchsorted(first_cdf, _uniform(rng) * first_cdf[-1], side="right")
                if drawn >= n or not mask[drawn]:
                    drawn = -1
            if count == 0:
                action = n
            elif drawn >= 0:
                action = drawn
            elif greedy:
                afterstate_logits(
                    board, color, mask, codes, nbr, base, point_windows, point_powers, index, sign, theta,
                    fixed, values,
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
            if action != n:
                status, h = gk.play_stone(hist, seen[:known], h, action, color, nbr, zob, new_hist,
                                          new_seen[: known + 1])
                if status != gk.OK:  # cannot happen for a move legal_points allowed
                    raise RuntimeError("TD search simulation played an illegal move")
        else:
            action, h = random_move(hist, seen[:known], h, color, nbr, zob, diag, new_hist, new_seen[: known + 1],
                                    moves, rng)
        if action == n:
            passes += 1
        else:
            frozen += _recode(hist[0], new_hist[0], point_windows, point_powers, codes, base, fixed)
            hist, new_hist = new_hist, hist
            seen, new_seen = new_seen, seen
            known += 1
            passes = 0
        color = -color
        move += 1
        t += 1
        if passes >= 2 or move >= max_moves:
            break
        s = t % 3
        slot_count[s] = _record(codes, base, index, sign, slot_index[s], slot_sign[s])
        slot_fixed[s] = frozen
        if t >= 2:
            target = sigmoid(slot_logit(slot_index[s], slot_sign[s], slot_count[s], frozen, theta))
            u = (t - 2) % 3
            ntd2_update(t - 2, target, slot_index[u], slot_sign[u], slot_count[u], slot_fixed[u], theta, alpha,
                        horizon, traces)
        trace_add(t % 2, t, slot_index[s], slot_sign[s], slot_count[s], lam, traces)
    owner = np.empty(n, np.int8)
    black, white = gk.area(hist[0], nbr, owner)
    ownership += owner
    score = black - white - komi
    reward = 1.0 if score > 0 else (0.0 if score < 0 else 0.5)
    for u in (t - 2, t - 1):
        if u >= 0:
            s = u % 3
            ntd2_update(u, reward, slot_index[s], slot_sign[s], slot_count[s], slot_fixed[s], theta, alpha, horizon,
                        traces)
    trace_clear(0, traces)
    trace_clear(1, traces)
    return reward, t
