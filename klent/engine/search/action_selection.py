"""Which child a simulation visits: the root rule, the interior rule and the final choice.

- Root: among the actions whose visit count (in this search) equals the Sequential Halving
  target of this simulation, argmax g(a) + logits(a) + sigma(cq)(a), with the same Gumbel
  draw g for every simulation of the search (`klent.engine.search.seq_halving`).
- Interior ("full Gumbel", deterministic): pi' = softmax(logits + sigma(cq)),
  argmax pi'(a) - N(a) / (1 + sum_b N(b)).  N counts pending visits too when the search runs
  several descents before backing them up, so parallel descents spread over the children
  instead of piling onto one leaf, and a leaf already claimed by such a descent is skipped.
- Final: among the most-visited actions, argmax g + logits + sigma(cq).

Arrays hold one entry per legal child.  Ties go to the lowest index, which keeps the search
deterministic.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def root_action(
    gumbel: np.ndarray,
    prior_logits: np.ndarray,
    sigma: np.ndarray,
    counts: np.ndarray,
    target: int,
) -> int:
    """Best g + logits + sigma among the children with exactly ``target`` visits.

    Returns -1 if no child has that count (the schedule guarantees one does).
    """
    best = -1
    best_score = -np.inf
    for a in range(counts.size):
        if counts[a] == target:
            score = gumbel[a] + prior_logits[a] + sigma[a]
            if best < 0 or score > best_score:
                best = a
                best_score = score
    return best


@njit(cache=True)
def interior_action(improved: np.ndarray, counts: np.ndarray, claimed: np.ndarray) -> int:
    """argmax pi'(a) - N(a) / (1 + sum N) over the children not ``claimed``.

    ``improved`` is pi' = softmax(logits + sigma).  A claimed child is an unexpanded leaf that
    another descent of the same batch will expand; going there again would evaluate the same
    position twice, so the next best child is taken instead.  Returns -1 if every child is
    claimed.
    """
    total = 0
    for a in range(counts.size):
        total += counts[a]
    best = -1
    best_score = -np.inf
    for a in range(counts.size):
        score = improved[a] - counts[a] / (1.0 + total)
        if not claimed[a] and (best < 0 or score > best_score):
            best = a
            best_score = score
    return best


@njit(cache=True)
def final_action(gumbel: np.ndarray, prior_logits: np.ndarray, sigma: np.ndarray, counts: np.ndarray) -> int:
    """The action to play: the best g + logits + sigma among the most-visited children."""
    return root_action(gumbel, prior_logits, sigma, counts, counts.max())
