"""Count-up rules (KLENT paper appendix L): the convergence test game of the trainer."""

from __future__ import annotations

import numpy as np
import pytest

import klent.engine.games as games
from klent.engine.games.base import GameFormatError, IllegalMoveError


def test_registry_names() -> None:
    assert games.get("countup").name == "countup"
    custom = games.get("countup10_3")
    assert (custom.target, custom.max_step, custom.num_actions) == (10, 3, 3)
    with pytest.raises(ValueError, match="unknown game"):
        games.get("tictactoe")


def test_rules_and_outcome() -> None:
    game = games.get("countup")
    state = game.initial_state()
    assert state.to_play == 0 and not state.is_terminal
    # 0 -> 2 -> 4 -> 6 -> 7: player 0 makes the 1st and 3rd moves, player 1 the 2nd and 4th.
    for action in (1, 1, 1, 0):
        state = state.play(action)
    assert state.count == 7 and state.is_terminal
    assert state.outcome() == -1.0  # the 4th move was player 1's
    assert state.reward_for(1) == 1.0
    assert not state.legal_mask().any()
    with pytest.raises(IllegalMoveError):
        state.play(0)


def test_overshoot_wins_and_immutability() -> None:
    game = games.get("countup")
    state = game.initial_state()
    for action in (1, 1, 1):
        state = state.play(action)
    before = state.count
    final = state.play(1)  # 6 + 2 = 8 >= 7
    assert state.count == before and not state.is_terminal
    assert final.is_terminal and final.outcome() == -1.0  # player 1 moved from 6


def test_outcome_of_unfinished_game_is_an_error() -> None:
    with pytest.raises(ValueError):
        games.get("countup").initial_state().outcome()


def test_encoding_and_text() -> None:
    game = games.get("countup")
    state = game.initial_state().play(1)
    obs = game.encode(state)
    assert obs.shape == game.observation_shape and obs.dtype == np.float32
    assert obs[2, 0, 0] == 1.0 and obs.sum() == 1.0
    assert game.text_to_action(state, game.action_to_text(state, 0)) == 0
    with pytest.raises(GameFormatError):
        game.text_to_action(state, "two")
    with pytest.raises(IllegalMoveError):
        game.text_to_action(state, "+3")
