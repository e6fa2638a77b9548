"""The reactive policy: argmax of the masked policy, or a sample at a temperature."""

from __future__ import annotations

import numpy as np
import pytest
from search_fakes import ScriptedEvaluator, TreeGame

from klent.engine.search import reactive

# Root with 3 legal actions out of 4 (action 3 is illegal at the root but has the top logit).
GAME = TreeGame({(): 3, (0,): 4}, {(1,): 1.0, (2,): -1.0, (0, 0): 0.0, (0, 1): 0.0, (0, 2): 0.0, (0, 3): 0.0})
LOGITS = np.array([0.0, 1.0, 0.5, 9.0])
ACTION_VALUES = np.array([0.2, -0.4, 0.6, 0.9])


def evaluator(value: float | None = None) -> ScriptedEvaluator:
    return ScriptedEvaluator(GAME, logits=lambda s: LOGITS, action_values=lambda s: ACTION_VALUES,
                             value=None if value is None else (lambda s: value))


def test_greedy_is_the_argmax_of_the_masked_policy() -> None:
    result = reactive(GAME.initial_state(), evaluator())
    prior = np.exp(LOGITS[:3]) / np.exp(LOGITS[:3]).sum()
    assert result.action == 1
    assert result.pv == [1]
    assert result.simulations == 0 and not result.visits.any()
    np.testing.assert_allclose(result.prior[:3], prior, rtol=1e-6)
    assert result.prior[3] == 0.0
    np.testing.assert_array_equal(result.improved_policy, result.prior)
    np.testing.assert_allclose(result.q, [0.2, -0.4, 0.6, 0.0], rtol=1e-6)
    assert result.value == pytest.approx(float(prior @ ACTION_VALUES[:3]), rel=1e-5)
    assert result.tree is None


def test_value_head_is_used_when_present() -> None:
    assert reactive(GAME.initial_state(), evaluator(value=0.25)).value == pytest.approx(0.25)


def test_temperature_sampling_follows_the_tempered_policy() -> None:
    rng = np.random.default_rng(0)
    states = [GAME.initial_state()] * 4000
    actions = np.array([r.action for r in reactive(states, evaluator(), temperature=2.0, rng=rng)])
    expected = np.exp(LOGITS[:3] / 2.0) / np.exp(LOGITS[:3] / 2.0).sum()
    frequencies = np.bincount(actions, minlength=4) / actions.size
    assert frequencies[3] == 0.0
    np.testing.assert_allclose(frequencies[:3], expected, atol=0.03)


def test_many_states_in_one_batch() -> None:
    scripted = evaluator()
    results = reactive([GAME.initial_state(), GAME.initial_state().play(0)], scripted)
    assert scripted.batches == [2]
    assert [r.action for r in results] == [1, 3]


def test_terminal_position_is_refused() -> None:
    with pytest.raises(ValueError, match="terminal"):
        reactive(GAME.initial_state().play(1), evaluator())
