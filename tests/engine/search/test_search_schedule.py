"""Sequential Halving: the visit schedule, checked on its own and through the real search."""

from __future__ import annotations

import numpy as np
import pytest
from search_fakes import ScriptedEvaluator, WideGame

from klent.engine.search import GumbelConfig, SearchLimits, search
from klent.engine.search.seq_halving import considered_visits, num_considered, phase_survivors

# (n, m) -> sorted final visit counts of the m considered actions.  The table says
# "8 x 1, 4 x 2, 4 x 3" for n = 32, which adds up to 28, not 32: the phase formula gives the
# last four actions floor(32 / (4 * 4)) = 2 more visits in phase 3, so they end with 4.
REFERENCE = {
    (200, 16): [49, 49, 21, 21] + [9] * 4 + [3] * 8,
    (32, 16): [4] * 4 + [2] * 4 + [1] * 8,
}


def replay(m: int, n: int) -> np.ndarray:
    """Final counts when each target is given to the first action having that count."""
    targets, _ = considered_visits(m, n)
    counts = np.zeros(m, dtype=np.int64)
    for target in targets:
        counts[np.flatnonzero(counts == target)[0]] += 1
    return counts


@pytest.mark.parametrize(("n", "m"), list(REFERENCE))
def test_schedule_reference_counts(n: int, m: int) -> None:
    assert sorted(replay(m, n).tolist(), reverse=True) == REFERENCE[(n, m)]


@pytest.mark.parametrize("n", [1, 2, 5, 16])
def test_small_budgets_visit_each_considered_action_once(n: int) -> None:
    m = num_considered(n, num_legal=30, max_considered=16)
    assert m == n
    assert replay(m, n).tolist() == [1] * n


def test_phase_starts_mark_the_halvings() -> None:
    targets, phase_start = considered_visits(16, 200)
    # Phases begin after 16 x 3, then 8 x 6 and 4 x 12 more simulations.
    assert np.flatnonzero(phase_start).tolist() == [48, 96, 144]
    assert targets.size == 200


@pytest.mark.parametrize(("m", "n"), [(16, 200), (16, 1000), (9, 77), (3, 40), (2, 10)])
def test_a_schedule_resumed_at_a_phase_with_the_same_n_is_its_own_rest(m: int, n: int) -> None:
    targets, phase_start = considered_visits(m, n)
    for t in np.flatnonzero(phase_start).tolist():
        rest = considered_visits(m, n, start=t, considered=phase_survivors(m, phase_start, t), count=int(targets[t]))
        np.testing.assert_array_equal(rest[0], targets[t:])
        np.testing.assert_array_equal(rest[1], phase_start[t:])


def test_a_schedule_resumed_with_a_larger_n_gives_its_later_phases_more() -> None:
    """Planned for 200 and re-planned at the second phase for 1,000: the first phase's 16 x 3
    visits stay, and 8 survivors then get 1000 // (4 x 8) = 31 visits each, not 6."""
    targets, phase_start = considered_visits(16, 200)
    t = int(np.flatnonzero(phase_start)[0])
    assert phase_survivors(16, phase_start, t) == 8
    rest, starts = considered_visits(16, 1000, start=t, considered=8, count=int(targets[t]))
    assert rest.size == 1000 - t and starts[0]
    counts = np.zeros(16, dtype=np.int64)
    for target in np.concatenate((targets[:t], rest)):
        counts[np.flatnonzero(counts == target)[0]] += 1
    assert sorted(counts.tolist())[:8] == [3] * 8  # the first phase's losers
    assert counts.sum() == 1000 and sorted(counts.tolist())[8] == 3 + 31


def test_single_action_gets_every_simulation() -> None:
    targets, phase_start = considered_visits(1, 7)
    assert targets.tolist() == list(range(7))
    assert not phase_start.any()


def _wide_search(n: int, scale: float, seed: int = 0):
    game = WideGame(num_actions=20, depth=6)
    logits = np.linspace(1.0, 0.0, game.num_actions, dtype=np.float32)  # distinct priors
    evaluator = ScriptedEvaluator(game, logits=lambda s: logits)
    config = GumbelConfig(gumbel_scale=scale)
    result = search(game.initial_state(), evaluator, SearchLimits(simulations=n), config=config,
                    rng=np.random.default_rng(seed))
    return result, logits, evaluator


@pytest.mark.parametrize(("n", "m"), list(REFERENCE))
def test_search_follows_the_reference_schedule(n: int, m: int) -> None:
    result, _, _ = _wide_search(n, scale=1.0)
    visited = result.visits[result.visits > 0]
    assert sorted(visited.tolist(), reverse=True) == REFERENCE[(n, m)]
    assert result.simulations == n == result.visits.sum()


@pytest.mark.parametrize("n", [1, 3, 10, 16])
def test_search_with_small_budget_visits_the_top_n_once(n: int) -> None:
    result, logits, _ = _wide_search(n, scale=0.0)
    assert np.flatnonzero(result.visits).tolist() == list(range(n))  # the n highest logits
    assert set(result.visits[result.visits > 0].tolist()) == {1}


def test_search_considers_the_gumbel_top_n() -> None:
    seed, n = 3, 10
    result, logits, _ = _wide_search(n, scale=1.0, seed=seed)
    gumbel = np.random.default_rng(seed).gumbel(size=logits.size)  # the search's one draw
    top = np.sort(np.argsort(-(gumbel + logits))[:n])
    assert np.flatnonzero(result.visits).tolist() == top.tolist()
