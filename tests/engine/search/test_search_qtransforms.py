"""Completed Q, v_mix, sigma and the selection rules against hand-computed numbers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from klent.engine.search.action_selection import final_action, interior_action, root_action
from klent.engine.search.gumbel import GumbelConfig
from klent.engine.search.qtransforms import completed_q, improved_policy, mixed_value, sigma_q

# pi = (0.5, 0.3, 0.2); two children visited.
LOGITS = np.log(np.array([0.5, 0.3, 0.2]))
VISITS = np.array([2, 1, 0], dtype=np.int32)
Q = np.array([0.4, -0.2, 0.0])
RAW_VALUE = 0.1


def call(function, *args) -> np.ndarray:
    """Run a kernel that writes its per-child result into an ``out`` array."""
    out = np.empty(3)
    function(*args, out)
    return out


def test_mixed_value_by_hand() -> None:
    # sum N = 3; visited prior mass 0.8; weighted q = (0.5*0.4 + 0.3*-0.2) / 0.8 = 0.175
    # v_mix = (0.1 + 3 * 0.175) / (1 + 3) = 0.15625
    assert mixed_value(LOGITS, VISITS, Q, RAW_VALUE) == pytest.approx(0.15625)


def test_mixed_value_of_an_unvisited_node_is_the_network_value() -> None:
    assert mixed_value(LOGITS, np.zeros(3, np.int32), Q, RAW_VALUE) == pytest.approx(RAW_VALUE)


def test_completed_q_by_hand() -> None:
    assert call(completed_q, LOGITS, VISITS, Q, RAW_VALUE) == pytest.approx([0.4, -0.2, 0.15625])


def test_sigma_by_hand() -> None:
    # rescaled: (cq + 0.2) / 0.6 = (1, 0, 0.59375); sigma = (50 + max N = 2) * 1 * rescaled
    assert call(sigma_q, LOGITS, VISITS, Q, RAW_VALUE, 50.0, 1.0, 1e-8) == pytest.approx([52.0, 0.0, 30.875])
    assert call(sigma_q, LOGITS, VISITS, Q, RAW_VALUE, 10.0, 0.5, 1e-8) == pytest.approx([6.0, 0.0, 3.5625])


def test_improved_policy_is_the_softmax_of_logits_plus_sigma() -> None:
    expected = np.exp(LOGITS + [6.0, 0.0, 3.5625])
    policy = call(improved_policy, LOGITS, VISITS, Q, RAW_VALUE, 10.0, 0.5, 1e-8)
    assert policy == pytest.approx(expected / expected.sum())


def test_sigma_of_equal_values_is_zero() -> None:
    assert call(sigma_q, LOGITS, np.zeros(3, np.int32), Q, RAW_VALUE, 50.0, 1.0, 1e-8) == pytest.approx([0, 0, 0])


def test_the_floor_keeps_near_equal_values_from_deciding() -> None:
    """Children a millionth apart (a game the value head calls lost): with mctx's floor the
    millionth is rescaled to the whole sigma range; with a floor of 0.1 it adds next to nothing,
    and a real difference above the floor is rescaled as before."""
    saturated = np.array([-1.0, -0.999999, -1.0])
    visits = np.ones(3, np.int32)
    assert call(sigma_q, LOGITS, visits, saturated, -1.0, 50.0, 1.0, 1e-8) == pytest.approx([0.0, 51.0, 0.0])
    assert call(sigma_q, LOGITS, visits, saturated, -1.0, 50.0, 1.0, 0.1).max() == pytest.approx(51e-5)
    assert call(sigma_q, LOGITS, VISITS, Q, RAW_VALUE, 50.0, 1.0, 0.1) == pytest.approx([52.0, 0.0, 30.875])
    assert call(sigma_q, LOGITS, VISITS, Q, RAW_VALUE, 50.0, 1.0, 1.2) == pytest.approx([26.0, 0.0, 15.4375])
    with pytest.raises(ValueError, match="rescale_floor must be > 0"):
        GumbelConfig(rescale_floor=0.0)


def test_interior_rule_by_hand() -> None:
    # pi' = softmax(0 + (2, 1, 0)) = (0.665, 0.245, 0.090); N = (3, 0, 0), 1 + sum N = 4:
    # scores (0.665 - 0.75, 0.245, 0.090): the second child, not the most likely one.
    improved = np.exp([2.0, 1.0, 0.0]) / np.exp([2.0, 1.0, 0.0]).sum()
    counts = np.array([3, 0, 0], np.int32)
    assert interior_action(improved, counts, np.zeros(3, np.bool_)) == 1
    # A claimed child (a leaf another descent is expanding) is skipped for the next best.
    assert interior_action(improved, counts, np.array([False, True, False])) == 2
    assert interior_action(improved, counts, np.ones(3, np.bool_)) == -1


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-5, 5), st.floats(0, 60), st.integers(0, 20)), min_size=1, max_size=12)
)
def test_interior_rule_is_the_argmax_of_the_formula(children: list[tuple[float, float, int]]) -> None:
    logits, sigma, counts = (np.array(column) for column in zip(*children))
    counts = counts.astype(np.int32)
    improved = np.exp(logits + sigma - (logits + sigma).max())
    improved /= improved.sum()
    scores = improved - counts / (1 + counts.sum())
    choice = interior_action(improved, counts, np.zeros(counts.size, np.bool_))
    assert scores[choice] == pytest.approx(scores.max(), abs=1e-12)


def test_root_rule_only_considers_the_target_count() -> None:
    gumbel = np.array([0.0, 5.0, 0.0, 1.0])
    logits = np.zeros(4)
    sigma = np.array([0.0, 0.0, 3.0, 0.0])
    counts = np.array([1, 0, 1, 1], dtype=np.int32)
    assert root_action(gumbel, logits, sigma, counts, 1) == 2  # 3.0 beats 1.0 and 0.0
    assert root_action(gumbel, logits, sigma, counts, 0) == 1
    assert root_action(gumbel, logits, sigma, counts, 2) == -1


def test_final_action_is_among_the_most_visited() -> None:
    gumbel = np.array([9.0, 0.0, 0.0])
    logits = np.zeros(3)
    sigma = np.array([0.0, 1.0, 2.0])
    counts = np.array([1, 5, 5], dtype=np.int32)
    assert final_action(gumbel, logits, sigma, counts) == 2
