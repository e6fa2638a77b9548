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


def considered_visits(
    m: int, n: int, start: int = 0, considered: int | None = None, count: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """The per-simulation visit targets and where each new phase starts.

    Returns ``(targets, phase_start)``: int32[n - start] and bool[n - start], for simulations
    ``start`` to n.  ``phase_start[i]`` is True when simulation ``start + i`` begins a phase
    with fewer considered actions than the previous one; a batched search must not run
    simulations of a new phase before the previous phase's values are in, because those values
    decide which actions survive.

    By default the schedule is the whole of it.  To re-plan a search whose n changes (a time
    budget, `klent.engine.search.gumbel`), ``start`` is the simulation at which a phase begins,
    ``considered`` the actions still in it and ``count`` the visits each of them has: the
    phases from there on are the ones n would give them.
    """
    if m <= 1:
        return np.arange(start, n, dtype=np.int32), np.zeros(max(0, n - start), dtype=np.bool_)
    phases = math.ceil(math.log2(m))
    blocks: list[np.ndarray] = [np.zeros(0, dtype=np.int32)]
    starts: list[np.ndarray] = [np.zeros(0, dtype=np.bool_)]
    length = start
    considered = m if considered is None else considered
    previous: int | None = m if start == 0 else None  # a resumed phase is a new one
    while length < n:
        extra = max(1, n // (phases * considered))
        block = np.repeat(np.arange(count, count + extra, dtype=np.int32), considered)
        phase = np.zeros(block.size, dtype=np.bool_)
        phase[0] = considered != previous
        blocks.append(block)
        starts.append(phase)
        length += block.size
        count += extra
        previous = considered
        considered = max(2, considered // 2)
    return np.concatenate(blocks)[: max(0, n - start)], np.concatenate(starts)[: max(0, n - start)]


def phase_survivors(m: int, phase_start: np.ndarray, t: int) -> int:
    """The actions still considered at simulation ``t`` of a schedule for m (``phase_start``
    from `considered_visits` over simulations 0..)."""
    considered = m
    for _ in range(int(phase_start[: t + 1].sum())):
        considered = max(2, considered // 2)
    return considered
