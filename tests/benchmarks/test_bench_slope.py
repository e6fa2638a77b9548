"""`klent bench slope`: a run's snapshots against a fixed pool."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from klent.bench.slope import main, snapshots
from klent.engine.network import OnnxEvaluator

SHIPPED_GO9 = Path(__file__).resolve().parents[2] / "weights" / "go9.onnx"
LATEST = f"{int(OnnxEvaluator(SHIPPED_GO9).info.training['iterations']):,} (latest)"


def fake_run(folder: Path, untrained: str) -> Path:
    """A run folder whose snapshots 100 and 300 are untrained and 200 is the shipped model."""
    (folder / "snapshots").mkdir(parents=True)
    for iteration, model in ((100, untrained), (200, SHIPPED_GO9), (300, untrained)):
        shutil.copy(model, folder / "snapshots" / f"iteration-{iteration:06d}.onnx")
    (folder / "snapshots" / "notes.onnx").write_text("not a snapshot name")
    shutil.copy(SHIPPED_GO9, folder / "latest.onnx")
    return folder


def test_snapshots_are_taken_in_iteration_order_after_since_then_latest(tmp_path: Path, untrained_model) -> None:
    run = fake_run(tmp_path / "run", untrained_model("go9"))
    assert [label for label, _ in snapshots(run, 0)] == ["100", "200", "300", LATEST]
    assert [label for label, _ in snapshots(run, 100)] == ["200", "300", LATEST]


def test_each_snapshot_gets_a_row_pooled_over_the_references(
    tmp_path: Path, untrained_model, capsys: pytest.CaptureFixture[str]
) -> None:
    untrained = untrained_model("go9")
    run = fake_run(tmp_path / "run", untrained)
    reference = run / "snapshots" / "iteration-000100.onnx"  # a pool member is not a row
    assert main([str(run), "--pool", str(reference), untrained, "--games", "10", "--seed", "3"]) == 0
    rows = re.findall(r"^\| ([\w, ()]+) \| ([\d.]+) \(([\d.]+)–([\d.]+)\) \| (\d+) \|$", capsys.readouterr().out, re.M)
    assert [row[0] for row in rows] == ["200", "300", LATEST]
    assert all(row[4] == "20" for row in rows)
    rates = {row[0]: float(row[1]) for row in rows}
    assert rates["200"] == rates[LATEST] > 0.75  # the trained model, the same games both times
    assert rates["300"] < rates["200"]  # an untrained model against copies of itself
    for _label, rate, low, high, _ in rows:
        assert float(low) <= float(rate) <= float(high)


def test_bad_arguments_are_one_line_errors(tmp_path: Path, untrained_model) -> None:
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--pool", "missing.onnx"])
    with pytest.raises(SystemExit):  # no snapshots, no latest.onnx
        main([str(tmp_path), "--pool", untrained_model("go9")])
