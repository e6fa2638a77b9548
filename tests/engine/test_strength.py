"""A model's strength curve (`klent.engine.player.strength`): the simulations a rating asks for,
and the curve file beside its model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from klent.engine.player import StrengthCurve, StrengthPoint, curve_for
from klent.engine.player.strength import curve_path, model_digest


def curve(*points: tuple[int, float], digest: str = "0" * 64) -> StrengthCurve:
    return StrengthCurve(digest, "test anchors", "test matches",
                         tuple(StrengthPoint(s, elo, elo - 50, elo + 50, 100) for s, elo in points))


def test_a_rating_between_two_points_is_linear_in_log_simulations() -> None:
    levels = curve((1, 1000), (16, 1200), (256, 1400))
    assert levels.simulations(1000) == 1 and levels.simulations(1200) == 16 and levels.simulations(1400) == 256
    assert levels.simulations(1100) == 4  # halfway between 1 and 16 in log: 4
    assert levels.simulations(1300) == 64
    assert [levels.simulations(elo) for elo in range(1000, 1401, 25)] == sorted(
        levels.simulations(elo) for elo in range(1000, 1401, 25))


def test_ratings_outside_the_curve_are_clamped_to_its_ends() -> None:
    levels = curve((1, 1000), (64, 1300))
    assert levels.simulations(-5000) == 1 and levels.simulations(9999) == 64
    assert (levels.lowest, levels.highest) == (1000, 1300)
    assert curve((1, 987.4), (64, 1300.6)).lowest == 988  # the range holds only measured ratings


@pytest.mark.parametrize("points", [(), ((16, 1200), (64, 1100)), ((16, 1200), (16, 1300)), ((0, 900),),
                                    ((1, float("nan")),)])
def test_a_curve_must_rise_with_the_simulations(points: tuple[tuple[int, float], ...]) -> None:
    with pytest.raises(ValueError):
        curve(*points)


def test_the_curve_beside_a_model_names_the_model(tmp_path: Path) -> None:
    model = tmp_path / "chess.onnx"
    model.write_bytes(b"a model")
    assert curve_path(model) == tmp_path / "chess.strength.json"
    assert curve_for(model) is None  # no curve: no limit
    curve((1, 1000), (64, 1300), digest=model_digest(model)).save(curve_path(model))
    found = curve_for(model)
    assert found is not None and found.simulations(1300) == 64
    model.write_bytes(b"a retrained model")
    with pytest.raises(ValueError, match="another model"):
        curve_for(model)


@pytest.mark.parametrize("text", ["{}", "[1, 2]", '{"model_sha256": "x", "scale": "s", "command": "c", "points": [{}]}',
                                  "[" * 5000, "x" * 70_000])
def test_a_broken_curve_file_is_a_value_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "m.strength.json"
    path.write_text(text)
    with pytest.raises(ValueError):
        StrengthCurve.load(path)


def test_the_file_round_trips(tmp_path: Path) -> None:
    levels = curve((1, 1000.5), (64, 1300))
    levels.save(tmp_path / "c.json")
    assert StrengthCurve.load(tmp_path / "c.json") == levels
    assert json.loads((tmp_path / "c.json").read_text())["points"][0]["simulations"] == 1
