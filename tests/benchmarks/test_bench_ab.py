"""`klent bench ab`, the head-to-head yardstick of training A/B runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from klent.bench.ab import head_to_head, main

SHIPPED_GO9 = Path(__file__).resolve().parents[2] / "weights" / "go9.onnx"


def test_a_trained_model_beats_an_untrained_one_and_the_counts_add_up(untrained_model) -> None:
    untrained = untrained_model("go9")
    summary = head_to_head(SHIPPED_GO9, Path(untrained), games=40, opening_plies=2, seed=1)
    assert summary.wins + summary.losses + summary.draws == 40
    assert summary.win_rate_low > 0.5  # the shipped model learnt something
    mirrored = head_to_head(Path(untrained), SHIPPED_GO9, games=40, opening_plies=2, seed=1)
    assert mirrored.win_rate_high < 0.5


def test_models_of_different_games_are_refused(untrained_model) -> None:
    with pytest.raises(ValueError, match="plays go9 but"):
        head_to_head(SHIPPED_GO9, Path(untrained_model("go5")), games=2, opening_plies=0, seed=0)


def test_command_line_prints_the_summary(untrained_model, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(SHIPPED_GO9), untrained_model("go9"), "--games", "4"]) == 0
    out = capsys.readouterr().out
    assert "4 games: +" in out and "win rate" in out and "Elo difference" in out
    with pytest.raises(SystemExit):
        main(["missing.onnx", untrained_model("go9")])


def test_a_pool_of_opponents_is_reported_one_by_one_and_pooled(
    untrained_model, capsys: pytest.CaptureFixture[str]
) -> None:
    untrained = untrained_model("go9")
    assert main([untrained, str(SHIPPED_GO9), untrained, "--games", "6", "--opening-plies", "2"]) == 0
    out = capsys.readouterr().out
    counts = [tuple(map(int, m)) for m in re.findall(r"(\d+) games: \+(\d+) -(\d+) =(\d+)", out)]
    assert len(counts) == 3 and counts[0][0] == counts[1][0] == 6  # two opponents, then the pool
    assert counts[2] == tuple(a + b for a, b in zip(counts[0], counts[1]))
    assert "pooled over 2 opponents: 12 games" in out
    assert counts[0][1] < 6  # the untrained model does not sweep the shipped one


def test_the_random_mover_is_an_opponent(untrained_model, capsys: pytest.CaptureFixture[str]) -> None:
    """`random` in place of a file: the shipped model beats a uniformly random mover, and a
    missing file of any other name is still refused."""
    summary = head_to_head(SHIPPED_GO9, Path("random"), games=20, opening_plies=0, seed=2)
    assert summary.wins + summary.losses + summary.draws == 20
    assert summary.win_rate_low > 0.7
    assert main([str(SHIPPED_GO9), "random", "--games", "2"]) == 0
    assert "vs random: 2 games" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([str(SHIPPED_GO9), "randm"])


def test_two_multi_size_models_meet_on_a_size_they_both_serve(capsys: pytest.CaptureFixture[str]) -> None:
    """`--game`: the shipped 19x19 and 13x13 networks (board heads, both sizes) play 13x13; a
    9x9 model is refused that size in one line."""
    weights = SHIPPED_GO9.parent
    summary = head_to_head(
        weights / "go19.onnx", weights / "go13.onnx", games=2, opening_plies=2, seed=0, game_id="go13"
    )
    assert summary.wins + summary.losses + summary.draws == 2
    with pytest.raises(ValueError, match="not for go13"):
        head_to_head(SHIPPED_GO9, weights / "go13.onnx", games=2, opening_plies=0, seed=0, game_id="go13")
    with pytest.raises(SystemExit):
        main([str(SHIPPED_GO9), str(weights / "go13.onnx"), "--game", "go13"])
    assert "not for go13" in capsys.readouterr().err
