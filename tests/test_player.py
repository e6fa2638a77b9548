"""The player facade: positions, tree reuse, reactive and search decisions, model loading."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

import engine.games as games
from engine.games.base import IllegalMoveError
from engine.network import ModelMismatchError
from engine.player import Player, PlayOptions, model_path_for


@pytest.fixture()
def player(untrained_model) -> Player:
    return Player.load(games.get("countup"), model=untrained_model("countup"), seed=1)


def test_reactive_decision_is_the_policy_argmax(player: Player) -> None:
    decision = player.decide(PlayOptions(mode="reactive"))
    prior = decision.result.prior
    assert decision.action == int(prior.argmax())
    assert decision.simulations == 0
    assert decision.move == f"+{decision.action + 1}"
    assert -1.0 <= decision.value <= 1.0 and 0.0 <= decision.winrate <= 1.0
    assert [m.action for m in decision.top_moves] == sorted(range(2), key=lambda a: -prior[a])
    assert decision.top_moves[0].action == decision.action


def test_search_decision_reports_its_visits(player: Player) -> None:
    decision = player.decide(PlayOptions(mode="search", simulations=16))
    assert decision.simulations == 16
    assert sum(m.visits for m in decision.top_moves) == 16
    assert all(m.pv[0] == m.move for m in decision.top_moves)
    assert decision.pv[0] == decision.move
    # the player's position did not move
    assert player.state.move_number == 0


def test_tree_is_reused_when_the_position_extends(player: Player) -> None:
    first = player.decide(PlayOptions(simulations=32))
    reply = first.action
    player.play(reply)
    reused = player._reusable_tree()
    assert reused is not None and reused.visits == int(first.result.visits[reply])
    player.set_position(games.get("countup").initial_state(), [reply])
    assert player._reusable_tree() is None  # another initial state object: fresh tree


def test_bad_moves_change_nothing(player: Player) -> None:
    player.play(1)
    with pytest.raises(IllegalMoveError):
        player.play(5)
    assert player.actions == [1]
    player.undo()
    assert player.actions == [] and player.state.move_number == 0
    with pytest.raises(IndexError):
        player.undo()


def test_no_move_in_a_finished_game(player: Player) -> None:
    for action in (1, 1, 1, 1):
        player.play(action)
    assert player.state.is_terminal
    with pytest.raises(IllegalMoveError):
        player.decide()


def test_stop_flag_returns_a_legal_move(player: Player) -> None:
    stop = threading.Event()
    stop.set()
    decision = player.decide(PlayOptions(simulations=10_000), stop=stop)
    assert decision.action in (0, 1) and decision.simulations < 10_000


def test_model_loading_errors(tmp_path: Path, untrained_model) -> None:
    go = games.get("countup10_3")
    with pytest.raises(FileNotFoundError, match="no model for countup10_3"):
        Player.load(go, weights_dir=tmp_path)
    shutil.copy(untrained_model("countup"), model_path_for(go, tmp_path))
    with pytest.raises(ModelMismatchError):
        Player.load(go, weights_dir=tmp_path)
