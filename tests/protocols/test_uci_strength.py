"""`UCI_LimitStrength` and `UCI_Elo`: declared from the model's strength curve, and a level
plays with the simulations the curve gives it (`klent.engine.player.strength`)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from uci_driver import RawEngine

from klent.engine.player import StrengthCurve, StrengthPoint
from klent.engine.player.strength import curve_path, model_digest


@pytest.fixture
def levelled_model(untrained_model, tmp_path: Path) -> Path:
    """The small chess model with a curve: reactive 1000, 8 simulations 1200, 64 simulations 1400."""
    model = tmp_path / "chess.onnx"
    shutil.copyfile(untrained_model("chess"), model)
    points = tuple(StrengthPoint(s, elo, elo - 60, elo + 60, 100) for s, elo in ((1, 1000), (8, 1200), (64, 1400)))
    StrengthCurve(model_digest(model), "test anchors", "test matches", points).save(curve_path(model))
    return model


@pytest.fixture
def engine(levelled_model: Path) -> Iterator[RawEngine]:
    process = RawEngine([sys.executable, "-m", "klent", "uci", "--model", str(levelled_model)])
    try:
        process.send("uci")
        process.until(lambda line: line == "uciok", 60)
        yield process
    finally:
        process.close()


def _search(engine: RawEngine, go: str = "go movetime 20000") -> tuple[list[str], int]:
    """The lines of one search from the start position and the nodes its last report counts."""
    engine.send("position startpos moves e2e4", go)
    lines = engine.until(lambda line: line.startswith("bestmove"), 60)
    nodes = [int(line.split()[line.split().index("nodes") + 1]) for line in lines if " nodes " in line]
    return lines, nodes[-1]


def test_the_options_span_the_measured_ratings(levelled_model: Path) -> None:
    process = RawEngine([sys.executable, "-m", "klent", "uci", "--model", str(levelled_model)])
    try:
        process.send("uci")
        lines = process.until(lambda line: line == "uciok", 60)
    finally:
        process.close()
    assert "option name UCI_LimitStrength type check default false" in lines
    assert "option name UCI_Elo type spin default 1000 min 1000 max 1400" in lines


def test_each_level_searches_the_simulations_of_its_rating(engine: RawEngine) -> None:
    _, full = _search(engine, "go nodes 100")
    assert full == 100  # no limit yet: the go's own
    engine.send("setoption name UCI_LimitStrength value true", "setoption name UCI_Elo value 1400")
    said = engine.ready()
    assert "info string UCI_Elo 1400: 64 simulations a move, measured against test anchors" in said
    lines, nodes = _search(engine)
    assert nodes == 64 and "nodes 64" in " ".join(lines)  # not the 20 s the go allows
    engine.send("setoption name UCI_Elo value 1300")
    assert any("UCI_Elo 1300: 23 simulations a move" in line for line in engine.ready())
    assert _search(engine)[1] == 23
    engine.send("setoption name UCI_Elo value 1000")
    assert any("UCI_Elo 1000: reactive play (one network call)" in line for line in engine.ready())
    lines, nodes = _search(engine)
    assert nodes == 0 and "depth 1 " in " ".join(lines)  # one network call, no tree
    engine.send("setoption name UCI_LimitStrength value false")
    engine.ready()
    assert _search(engine, "go nodes 100")[1] == 100


def test_a_go_nodes_below_the_level_still_caps_the_search(engine: RawEngine) -> None:
    engine.send("setoption name UCI_LimitStrength value true", "setoption name UCI_Elo value 1400")
    engine.ready()
    assert _search(engine, "go nodes 10")[1] == 10


def test_a_model_without_a_curve_plays_at_full_strength_and_says_so(engine: RawEngine, untrained_model,
                                                                      tmp_path: Path) -> None:
    engine.send("setoption name UCI_LimitStrength value true", "setoption name UCI_Elo value 1400")
    engine.ready()
    other = tmp_path / "other.onnx"
    shutil.copyfile(untrained_model("chess", channels=8), other)
    engine.send(f"setoption name ModelFile value {other}")
    said = engine.ready()
    assert any("no strength curve for" in line and "full strength" in line for line in said)
    assert _search(engine, "go nodes 100")[1] == 100


def test_a_curve_measured_for_another_model_is_refused(levelled_model: Path, untrained_model, tmp_path: Path) -> None:
    other = tmp_path / "other.onnx"
    shutil.copyfile(untrained_model("chess", channels=8), other)
    shutil.copyfile(curve_path(levelled_model), curve_path(other))
    process = RawEngine([sys.executable, "-m", "klent", "uci", "--model", str(levelled_model)])
    try:
        process.send("uci", "setoption name UCI_LimitStrength value true", f"setoption name ModelFile value {other}")
        said = process.ready()
        assert any("measured for another model" in line for line in said)
        assert _search(process, "go nodes 100")[1] == 100
    finally:
        process.close()


def test_the_shipped_chess_model_has_its_levels() -> None:
    from klent.engine.player import DEFAULT_WEIGHTS_DIR, curve_for

    levels = curve_for(Path(DEFAULT_WEIGHTS_DIR) / "chess.onnx")
    assert levels is not None and levels.points[0].simulations == 1
    assert levels.highest - levels.lowest >= 200
