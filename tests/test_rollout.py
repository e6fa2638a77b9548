"""Leaf values mixed with rollouts (engine/search/rollout.py, td_kernels.playout): the mixture,
the rollouts' results on positions whose outcome is certain, and the player option."""

from __future__ import annotations

import numpy as np
import pytest

import engine.games as games
from engine.games.go import GoGame
from engine.network import OnnxEvaluator, state_values
from engine.player import Player, PlayOptions
from engine.search import td_kernels as tk
from engine.search.rollout import RolloutMixed, play_out
from klent.cli import main as klent_main


def black_wall(game: GoGame, to_play: int):
    """Black everywhere but single-point eyes on every third point of every third row: no White
    move is legal, no Black move fills anything but its own eyes, so every rollout ends at
    once with Black owning the board."""
    eyes = {r * game.size + c for r in range(1, game.size, 3) for c in range(1, game.size, 3)}
    black = [p for p in range(game.size**2) if p not in eyes]
    return game.setup_state(black, [], to_play)


def test_rollouts_of_a_decided_position() -> None:
    game = GoGame(9)
    rng = tk.seed_state(0)
    assert play_out(black_wall(game, 0), tactics=True, rng=rng) == 1.0
    assert play_out(black_wall(game, 1), tactics=True, rng=rng) == -1.0
    assert play_out(black_wall(game, 1), tactics=False, rng=rng) == -1.0


def test_rollouts_play_legal_games_to_the_end() -> None:
    """From the empty board, random and tactical rollouts finish with a result, and with komi
    7.5 on a 5x5 board both sides win some of them."""
    game = GoGame(5, komi=7.5)
    for tactics in (False, True):
        rng = tk.seed_state(1)
        results = {play_out(game.initial_state(), tactics, rng) for _ in range(40)}
        assert results == {1.0, -1.0}


def test_the_value_is_the_mixture(untrained_model) -> None:
    game = games.get("go9")
    network = OnnxEvaluator(untrained_model("go9"), threads=1)
    states = [black_wall(game, 0), black_wall(game, 1), game.initial_state().play(40)]
    plain = network.evaluate(states)
    mixed = RolloutMixed(network, 0.25, seed=0).evaluate(states)
    v = state_values(plain)
    assert mixed.state_value is not None
    np.testing.assert_allclose(mixed.state_value[:2], 0.75 * v[:2] + 0.25 * np.array([1.0, -1.0]), atol=1e-6)
    assert abs(mixed.state_value[2] - 0.75 * v[2]) == pytest.approx(0.25, abs=1e-6)  # won or lost, no draw
    np.testing.assert_array_equal(mixed.policy_logits, plain.policy_logits)
    np.testing.assert_array_equal(mixed.action_values, plain.action_values)


def test_refusals(untrained_model) -> None:
    network = OnnxEvaluator(untrained_model("go9"), threads=1)
    with pytest.raises(ValueError, match="within"):
        RolloutMixed(network, 0.0)
    with pytest.raises(ValueError, match="random or tactical"):
        RolloutMixed(network, 0.5, policy="heavy")
    with pytest.raises(ValueError, match="rollouts play Go, not chess"):
        Player.load(games.get("chess"), model=untrained_model("chess"), options=PlayOptions(rollout_weight=0.5))
    with pytest.raises(ValueError, match="rollout_weight must be within"):
        PlayOptions(rollout_weight=1.5)


def test_player_searches_with_rollouts(untrained_model) -> None:
    game = games.get("go9")
    options = PlayOptions(mode="search", simulations=32, rollout_weight=0.5)
    player = Player.load(game, model=untrained_model("go9"), options=options, seed=0, threads=1)
    player.play(40)
    decision = player.decide()
    assert decision.simulations == 32 and decision.result.tree is not None
    assert isinstance(player._leaf_evaluator(options), RolloutMixed)
    assert player._leaf_evaluator(PlayOptions()) is player.evaluator


def test_gtp_rollouts_need_the_search(capsys) -> None:
    assert klent_main(["gtp", "--mode", "reactive", "--rollouts", "0.5"]) == 2
    assert "--rollouts takes a weight within [0, 1], with --mode search" in capsys.readouterr().err
