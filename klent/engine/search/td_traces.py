"""Eligibility traces and the NTD2(lambda) update of TD search (numba), which the simulations of
`klent.engine.search.td_kernels` call after every move (Silver, Sutton and Mueller 2012, Sect. 3.2)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit


def trace_depth(lam: float, cutoff: float, longest: int) -> int:
    """How many same-colour moves a weight stays in an eligibility trace unrefreshed.

    The term a state s_{t-2j} left in the trace has decayed to lambda**j; a weight no later
    state refreshed leaves once that is below ``cutoff`` (an approximation that changes an
    update by less than that fraction), which keeps the trace, and the update's cost, to the
    recently active weights.  lambda = 1 (Monte-Carlo) keeps the whole episode.
    """
    if lam <= 0.0:
        return 0
    if lam >= 1.0:
        return longest
    return min(longest, math.ceil(math.log(cutoff) / math.log(lam)))


def new_traces(weights: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Empty eligibility traces over ``weights`` learnt weights, one per colour (`trace_add`).

    ``(values float64[2, W], refreshed int32[2, W], members int32[2, W], sizes int64[2],
    scale float64[2])``: colour c's trace is ``scale[c] * values[c]``; its non-zero weights are
    ``members[c, :sizes[c]]``, and ``refreshed[c, k]`` is 1 + the last time weight k was
    added to it (0: not in the trace).  All zeros, so untouched pages cost no memory.
    """
    return (np.zeros((2, weights)), np.zeros((2, weights), np.int32), np.zeros((2, weights), np.int32),
            np.zeros(2, np.int64), np.ones(2))


@njit(cache=True)
def trace_clear(c: int, traces: tuple) -> None:
    """Empty colour ``c``'s trace (at the end of each simulated game)."""
    values, refreshed, members, sizes, scale = traces
    for i in range(sizes[c]):
        k = members[c, i]
        values[c, k] = 0.0
        refreshed[c, k] = 0
    sizes[c] = 0
    scale[c] = 1.0


@njit(cache=True)
def trace_add(
    c: int, t: int, slot_index: np.ndarray, slot_sign: np.ndarray, count: int, lam: float, traces: tuple
) -> None:
    """e_c <- lambda * e_c + phi(s_t) / |phi(s_t)|**2, colour c's trace (Sect. 3.3.4, NTD2(lambda)).

    The decay multiplies the trace's scale, not each value, so adding a state costs its own
    features only; the trace is a dense vector with a member list, so a weight that stays
    active from move to move (most do) is one member however many states it came from.
    """
    values, refreshed, members, sizes, scale = traces
    if lam == 0.0:
        trace_clear(c, traces)
    else:
        scale[c] *= lam
        if scale[c] < 1e-100:  # fold the scale in before it underflows
            for i in range(sizes[c]):
                values[c, members[c, i]] *= scale[c]
            scale[c] = 1.0
    if count == 0:
        return
    add = 1.0 / (count * scale[c])
    for i in range(count):
        k = slot_index[i]
        if refreshed[c, k] == 0:
            members[c, sizes[c]] = k
            sizes[c] += 1
        refreshed[c, k] = t + 1
        values[c, k] += slot_sign[i] * add


@njit(cache=True)
def ntd2_update(
    u: int,
    target: float,
    slot_index: np.ndarray,
    slot_sign: np.ndarray,
    count: int,
    fixed: float,
    theta: np.ndarray,
    alpha: float,
    horizon: int,
    traces: tuple,
) -> float:
    """Logistic NTD2(lambda) for the state of time ``u`` (Sect. 3.2 and 3.3.4); returns delta.

    The two-ply TD error compares V(s_u) (from its recorded features, with the weights as
    they are now) with the next value of the same player's turn, ``target`` = V(s_{u+2}), or
    the reward at the end of the game; theta moves by alpha * delta * e_u, with the trace
    e_u = sum_j lambda**j phi(s_{u-2j}) / |phi(s_{u-2j})|**2 of u's colour.  Logistic TD
    descends the cross-entropy, so the gradient is phi itself (no sigmoid derivative);
    normalising by the number of active learnt features makes alpha the fraction of the error
    corrected in one step: with alpha = 1 the logit of s_u moves by exactly delta (when no
    weight appears twice).  A weight not refreshed in the last ``horizon`` plies has decayed
    below the cutoff (`trace_depth`) and leaves the trace.
    """
    delta = target - sigmoid(slot_logit(slot_index, slot_sign, count, fixed, theta))
    values, refreshed, members, sizes, scale = traces
    c = u % 2
    step = alpha * delta * scale[c]
    i = 0
    while i < sizes[c]:
        k = members[c, i]
        if u + 1 - refreshed[c, k] > horizon:
            values[c, k] = 0.0
            refreshed[c, k] = 0
            sizes[c] -= 1
            members[c, i] = members[c, sizes[c]]
        else:
            theta[k] += step * values[c, k]
            i += 1
    return delta


@njit(cache=True)
def sigmoid(x: float) -> float:
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@njit(cache=True)
def slot_logit(slot_index: np.ndarray, slot_sign: np.ndarray, count: int, fixed: float, theta: np.ndarray) -> float:
    total = fixed
    for i in range(count):
        total += slot_sign[i] * theta[slot_index[i]]
    return total
