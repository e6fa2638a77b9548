"""`klent bench agreement`: a Go model's top-1 agreement with its teacher, by symmetries averaged."""

from __future__ import annotations

from pathlib import Path

import pytest

from klent.bench.agreement import agreement_rows, held_out_moves, main
from klent.engine.network import OnnxEvaluator
from klent.engine.symmetric import SymmetricEvaluator
from klent.training import teacher


def test_agreement_counts_the_teachers_moves_on_the_validation_games(tmp_path: Path, gnugo_path: str) -> None:
    config = teacher.LabelConfig(game="go9", teacher=f"{gnugo_path} --mode gtp --level 1 --chinese-rules",
                                 positions=60, depth=None, max_plies=40, opening_plies=4, games_per_shard=2,
                                 validation_every=2)
    manifest = teacher.label(config, tmp_path / "go", jobs=1)
    game_name, positions = held_out_moves(tmp_path / "go")
    assert game_name == "go9" and len(positions) == manifest.validation_positions > 0
    assert len(held_out_moves(tmp_path / "go", limit=5)[1]) == 5
    network = OnnxEvaluator("weights/go9.onnx", threads=1)
    rows = list(agreement_rows("weights/go9.onnx", "go9", positions, [1, 8], batch=7))
    for count, row in zip((1, 8), rows):
        evaluator = SymmetricEvaluator(network, count)
        hits = sum(int(evaluator.evaluate([state]).policy_logits[0].argmax()) == move for state, move in positions)
        assert row.startswith(f"{count} symmetr") and f"top-1 {hits / len(positions):.4f}" in row
        assert f"({len(positions)} positions" in row


def test_a_folder_without_a_set_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--model", "weights/go9.onnx", "--labels", str(tmp_path)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"klent bench agreement: {tmp_path} holds no labelled set"]
