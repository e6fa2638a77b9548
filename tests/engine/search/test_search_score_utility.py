"""The score utility: its bonus, and a search that uses it to take points the win value ignores."""

from __future__ import annotations

import numpy as np
import pytest
from search_fakes import ScriptedEvaluator

from klent.engine.games.base import State
from klent.engine.games.go import GoGame
from klent.engine.search import GumbelConfig, SearchLimits, search
from klent.engine.search.score_utility import ScoreUtility

GAME = GoGame(9)
CAPTURE = 5 * 9 + 4  # e4: the last liberty of White's e5 stone
CANDIDATES = (0, 1, 2, CAPTURE)  # the moves the scripted policy likes, equally


def atari_position(to_play: int = 0) -> State:
    """Black's three stones around White's e5, whose last liberty is e4."""
    return GAME.setup_state(black=[3 * 9 + 4, 4 * 9 + 3, 4 * 9 + 5], white=[4 * 9 + 4], to_play=to_play)


def logits(state: State) -> np.ndarray:
    out = np.full(GAME.num_actions, -10.0, dtype=np.float32)
    out[list(CANDIDATES)] = 0.0
    return out


def evaluator() -> ScriptedEvaluator:
    """A network that calls every position even and knows the count: only the score tells moves apart."""
    return ScriptedEvaluator(GAME, logits=logits, value=lambda state: 0.0, score=lambda state: state.final_score())


def test_the_bonus_is_bounded_by_its_weights_and_grows_with_the_score() -> None:
    utility = ScoreUtility(0.1, 0.3)
    scores = np.array([-1e6, -10.0, -1.0, 0.0, 1.0, 10.0, 1e6])
    bonus = utility(scores, np.zeros(scores.size), width=9.0)
    assert np.all(np.diff(bonus) > 0)
    assert bonus[0] == pytest.approx(-0.4, abs=1e-4) and bonus[-1] == pytest.approx(0.4, abs=1e-4)
    assert bonus[3] == 0.0
    # the dynamic term is steepest at its centre: a point is worth more near the expected score
    centred = ScoreUtility(0.0, 0.3)
    near = centred(np.array([20.0, 21.0]), np.array([20.0, 20.0]), 9.0)
    far = centred(np.array([0.0, 1.0]), np.array([20.0, 20.0]), 9.0)
    assert near[1] - near[0] > far[1] - far[0] > 0
    assert not ScoreUtility().active
    with pytest.raises(ValueError):
        ScoreUtility(-0.1, 0.3)


def test_final_score_is_the_count_from_the_side_to_move() -> None:
    black, white = atari_position(0), atari_position(1)
    assert black.final_score() == black.score() == -white.final_score()  # type: ignore[attr-defined]


def test_the_score_utility_takes_the_points_the_win_value_ignores() -> None:
    root = atari_position()
    limits = SearchLimits(simulations=64)
    plain = search(root, evaluator(), limits, config=GumbelConfig(gumbel_scale=0.0))
    utility = GumbelConfig(gumbel_scale=0.0, score_utility=ScoreUtility(0.1, 0.3))
    scored = search(root, evaluator(), limits, config=utility)
    assert plain.action == CANDIDATES[0]  # every move is worth 0: the tie goes to the first
    assert scored.action == CAPTURE  # the capture makes the whole board Black's
    assert scored.q[CAPTURE] > max(scored.q[a] for a in CANDIDATES[:3])


def test_roots_searched_together_keep_their_own_centres() -> None:
    roots = [atari_position(0), atari_position(1)]
    config = GumbelConfig(gumbel_scale=0.0, score_utility=ScoreUtility(0.1, 0.3))
    limits = SearchLimits(simulations=48)
    together = search(roots, evaluator(), limits, config=config)
    for root, batched in zip(roots, together):
        alone = search(root, evaluator(), limits, config=config)
        assert batched.action == alone.action
        np.testing.assert_allclose(batched.q, alone.q)


def test_a_model_without_a_score_head_is_searched_on_its_values_alone() -> None:
    root = atari_position(0)
    no_score = ScriptedEvaluator(GAME, logits=logits, value=lambda state: 0.0)
    result = search(root, no_score, SearchLimits(simulations=32),
                    config=GumbelConfig(gumbel_scale=0.0, score_utility=ScoreUtility(0.1, 0.3)))
    assert result.action == CANDIDATES[0]
    assert result.value == 0.0


def test_a_finished_game_is_valued_by_its_result_and_the_bonus_of_its_count() -> None:
    root = atari_position(0).play(GAME.pass_action)  # White to move; White's pass ends the game
    pass_logits = np.zeros(GAME.num_actions, dtype=np.float32)
    pass_logits[GAME.pass_action] = 3.0
    utility = ScoreUtility(0.1, 0.3)
    scripted = ScriptedEvaluator(GAME, logits=lambda state: pass_logits, value=lambda state: 0.0,
                                 score=lambda state: state.final_score())
    config = GumbelConfig(gumbel_scale=0.0, score_utility=utility)
    result = search(root, scripted, SearchLimits(simulations=32), config=config)
    assert result.visits[GAME.pass_action] > 0
    lead = root.final_score()  # White leads by 5.5 by the count
    assert lead == 5.5
    bonus = utility(np.array([lead]), ScoreUtility.centre(np.array([lead])), width=9.0)[0]
    assert result.q[GAME.pass_action] == pytest.approx(1.0 + bonus, abs=1e-5)  # the win, and its points
