"""Completed Q-values and the sigma transform of Gumbel MuZero, for one node's children.

All arrays hold one entry per *legal* child of a node (the tree stores no illegal edges), so no
masking is needed here.  Values are from the view of the player to move at the node.

    pi       = softmax(prior logits)
    v_mix    = (v_hat + N * sum_{a: N(a)>0} pi(a) q(a) / sum_{b: N(b)>0} pi(b)) / (1 + N)
    cq(a)    = q(a) if N(a) > 0 else v_mix                    N = sum_b N(b)
    cq_hat   = (cq - min cq) / max(max cq - min cq, floor)     (per node; floor 1e-8: mctx's)
    sigma(a) = (c_visit + max_b N(b)) * c_scale * cq_hat(a)
    pi'      = softmax(prior logits + sigma)                   (the improved policy)

v_hat is the network's value of the node itself (for a KLENT net V = sum pi Q).  Unvisited
children are completed with v_mix, not with the network's per-action Q: that is the paper's
method (KLENT appendix H runs the off-the-shelf Gumbel search).

The floor is the smallest span the rescaling divides by.  mctx's 1e-8 makes any difference
between the children's values count in full, which suits values of unknown scale; where every
child's value is nearly the same (a game the value head calls won or lost, |v| near 1), it
blows differences of 1e-6 up to the whole sigma range, and the search then chooses by noise
instead of by the prior.  Values in [-1, 1] have a known scale, and a floor F says that
children whose values differ by much less than F are as good as each other (Go and chess play
with F = 2, the whole range: `klent.engine.player.options.PLAY_RESCALE_FLOOR`, measured in benchmarks/RESULTS.md).

The functions are compiled with numba because the search calls them at every node of every
descent.  They write into ``out`` (a slice of the search's scratch arrays) instead of
allocating, and can be called from Python with numpy arrays as well.
"""

from __future__ import annotations

import numpy as np
from numba import njit

RESCALE_EPSILON = 1e-8


@njit(cache=True)
def softmax_into(logits: np.ndarray, out: np.ndarray) -> None:
    """``out`` = softmax of a 1-d array of finite logits (``out`` may be ``logits``)."""
    top = logits.max()
    total = 0.0
    for a in range(logits.size):
        out[a] = np.exp(logits[a] - top)
        total += out[a]
    for a in range(logits.size):
        out[a] /= total


@njit(cache=True)
def mixed_value(prior_logits: np.ndarray, visits: np.ndarray, q: np.ndarray, raw_value: float) -> float:
    """v_mix: the network value blended with the prior-weighted mean Q of the visited children."""
    total = 0
    for a in range(visits.size):
        total += visits[a]
    if total == 0:
        return raw_value
    top = prior_logits.max()
    weight = 0.0
    weighted_q = 0.0
    for a in range(visits.size):
        if visits[a] > 0:
            # Unnormalised prior: the softmax denominator cancels in the ratio below.  The floor
            # keeps a visited child whose prior underflowed from dividing by zero.
            p = max(np.exp(prior_logits[a] - top), 1e-300)
            weight += p
            weighted_q += p * q[a]
    return (raw_value + total * weighted_q / weight) / (1 + total)


@njit(cache=True)
def completed_q(prior_logits: np.ndarray, visits: np.ndarray, q: np.ndarray, raw_value: float, out: np.ndarray) -> None:
    """``out`` = q(a) for visited children, v_mix for the others."""
    v_mix = mixed_value(prior_logits, visits, q, raw_value)
    for a in range(visits.size):
        out[a] = q[a] if visits[a] > 0 else v_mix


@njit(cache=True)
def sigma_q(
    prior_logits: np.ndarray,
    visits: np.ndarray,
    q: np.ndarray,
    raw_value: float,
    c_visit: float,
    c_scale: float,
    floor: float,
    out: np.ndarray,
) -> None:
    """``out`` = sigma(min-max rescaled completed Q): what Gumbel search adds to the logits."""
    completed_q(prior_logits, visits, q, raw_value, out)
    low = out.min()
    span = max(out.max() - low, floor)
    scale = (c_visit + visits.max()) * c_scale / span
    for a in range(out.size):
        out[a] = (out[a] - low) * scale


@njit(cache=True)
def improved_policy(
    prior_logits: np.ndarray,
    visits: np.ndarray,
    q: np.ndarray,
    raw_value: float,
    c_visit: float,
    c_scale: float,
    floor: float,
    out: np.ndarray,
) -> None:
    """``out`` = pi' = softmax(logits + sigma(completed Q))."""
    sigma_q(prior_logits, visits, q, raw_value, c_visit, c_scale, floor, out)
    for a in range(out.size):
        out[a] += prior_logits[a]
    softmax_into(out, out)
