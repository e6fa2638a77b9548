"""Sequential Halving at the root, expressed as a schedule of "considered visit" targets.

Instead of running phases explicitly, the search precomputes, for m considered actions and n
simulations, the visit count that the action chosen at root simulation t must currently have.
Picking, among the actions with exactly that count, the best by g + logits + sigma(completed Q)
then gives both Gumbel-Top-k sampling (the first round visits the top m once each) and the
halving (only the survivors of a phase reach the next target).  This is how DeepMind's mctx
drives Gumbel MuZero; the phase lengths follow the Gumbel paper:

    ceil(log2 m) phases; in phase j each remaining action gets
    max(1, floor(n / (ceil(log2 m) * m_j))) more visits, m_1 = m, m_{j+1} = max(2, m_j // 2);
    left-over simulations go round-robin to the last two; stop at n even mid-phase.

For n = 200, m = 16 the final visit counts are 8 x 3, 4 x 9, 2 x 21, 2 x 49.
"""

from __future__ import annotations

import math

import numpy as np


def num_considered(simulations: int | None, num_legal: int, max_considered: int) -> int:
    """m = min(n, max_considered, number of legal actions); n unknown means no cap from n."""
    m = min(max_considered, num_legal)
    return m if simulations is None else min(m, simulations)


def considered_visits(m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The per-simulation visit targets and where each new phase starts.

    Returns ``(targets, phase_start)``: int32[n] and bool[n].  ``phase_start[t]`` is True when
    simulation t begins a phase with fewer considered actions than the previous one; a batched
    search must not run simulations of a new phase before the previous phase's values are in,
    because those values decide which actions survive.
    """
    if m <= 1:
        return np.arange(n, dtype=np.int32), np.zeros(n, dtype=np.bool_)
    phases = math.ceil(math.log2(m))
    blocks: list[np.ndarray] = []
    starts: list[np.ndarray] = []
    length = 0
    count = 0  # visits every still-considered action has at the start of a block
    considered = m
    previous = m
    while length < n:
        extra = max(1, n // (phases * considered))
        block = np.repeat(np.arange(count, count + extra, dtype=np.int32), considered)
        start = np.zeros(block.size, dtype=np.bool_)
        start[0] = considered != previous
        blocks.append(block)
        starts.append(start)
        length += block.size
        count += extra
        previous = considered
        considered = max(2, considered // 2)
    return np.concatenate(blocks)[:n], np.concatenate(starts)[:n]

