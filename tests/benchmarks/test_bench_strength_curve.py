"""`klent bench strength_curve`: match folders by simulations in, the model's curve out."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_bench_ladder import write_match

from klent.bench.strength_curve import main
from klent.engine.player import curve_for


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "m.onnx"
    path.write_bytes(b"model bytes")
    return path


def test_the_points_are_rated_and_written_beside_the_model(tmp_path: Path, model: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    reactive = write_match(tmp_path / "reactive", [1, 1, 1, 0, 1, 1, None, 1])
    searched = write_match(tmp_path / "g64", [0, 1, 0, None, 1, 0, 0, 1])
    searched_high = write_match(tmp_path / "g64-1500", [1, 1, 0, 1, 1, None])
    assert main(["--model", str(model), "--scale", "anchors", f"1:{reactive}=1350", f"64:{searched}=1350",
                 f"64:{searched_high}=1500"]) == 0
    curve = curve_for(model)
    assert curve is not None and [p.simulations for p in curve.points] == [1, 64]
    assert [p.games for p in curve.points] == [8, 14]
    assert curve.points[0].elo < 1350 - 150 and curve.points[0].low < curve.points[0].elo < curve.points[0].high
    assert curve.scale == "anchors"
    assert "| 1 | 8 |" in capsys.readouterr().out


def test_a_falling_curve_is_refused_in_one_line(tmp_path: Path, model: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    strong = write_match(tmp_path / "strong", [0, 0, 1, 0])
    weak = write_match(tmp_path / "weak", [1, 1, 0, 1])
    with pytest.raises(SystemExit) as exit_info:
        main(["--model", str(model), "--scale", "a", f"1:{strong}=1350", f"16:{weak}=1350"])
    assert exit_info.value.code == 2
    assert "ratings must rise with simulations" in capsys.readouterr().err
    assert curve_for(model) is None


@pytest.mark.parametrize("point", ["0:x=1350", "x=1350", "many:x=1350", "4:x"])
def test_a_malformed_point_is_a_one_line_error(point: str, model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--model", str(model), "--scale", "a", point])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "a point is SIMULATIONS:FOLDER=RATING" in err or "a rung is FOLDER=RATING" in err
