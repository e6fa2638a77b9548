"""`klent centre` (`klent.training.centre`): a bias planted in a model's action values is
measured back and removed, and nothing else of the model changes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from klent.engine.network import OnnxEvaluator, read_model_info
from klent.training.centre import OFFSET_KEY, centre


def plant_bias(source: Path, target: Path, bias: float) -> None:
    """``source`` with ``bias`` added to its action values by nodes of its own, as a model that
    learnt a bias would have it (no metadata says so)."""
    model = onnx.load(source)
    node = next(n for n in model.graph.node if "action_values" in n.output)
    node.output[list(node.output).index("action_values")] = "planted_input"
    model.graph.initializer.append(numpy_helper.from_array(np.array(bias, np.float32), "planted_bias"))
    model.graph.node.append(helper.make_node("Add", ["planted_input", "planted_bias"], ["action_values"]))
    onnx.save(model, target)


def _evaluations(first: Path, second: Path):
    """Both models' evaluations of a few positions, and the positions' legal masks (the
    evaluator reports 0 for an illegal move's value)."""
    a, b = OnnxEvaluator(first), OnnxEvaluator(second)
    states, state = [], a.game.initial_state()
    for _ in range(12):
        states.append(state)
        state = state.play(int(np.flatnonzero(state.legal_mask())[0]))
    return a.evaluate(states), b.evaluate(states), np.stack([s.legal_mask() for s in states])


def test_a_planted_bias_is_measured_and_removed(untrained_model, tmp_path: Path) -> None:
    source = Path(untrained_model("chess"))
    biased = tmp_path / "biased.onnx"
    plant_bias(source, biased, -0.3)
    plain = centre(source, tmp_path / "plain.onnx", games=8)
    fixed = centre(biased, tmp_path / "fixed.onnx", games=8)
    assert fixed.offset - plain.offset == pytest.approx(0.3, abs=0.05)
    assert fixed.mean_sum < plain.mean_sum - 0.5 and fixed.below_zero > 0.9
    before, after, legal = _evaluations(biased, tmp_path / "fixed.onnx")
    np.testing.assert_array_equal(before.policy_logits, after.policy_logits)
    expected = np.clip(before.action_values + np.float32(fixed.offset), -1, 1)
    np.testing.assert_allclose(after.action_values[legal], expected[legal], atol=1e-6)
    info = read_model_info(tmp_path / "fixed.onnx")
    assert info.game == "chess"
    assert float(dict((p.key, p.value) for p in onnx.load(tmp_path / "fixed.onnx").metadata_props)[OFFSET_KEY]) \
        == pytest.approx(fixed.offset, abs=1e-6)


def test_a_centred_model_a_value_head_and_overwriting_are_refused(untrained_model, tmp_path: Path) -> None:
    source = Path(untrained_model("chess"))
    centre(source, tmp_path / "once.onnx", games=2)
    with pytest.raises(ValueError, match="centred already"):
        centre(tmp_path / "once.onnx", tmp_path / "twice.onnx", games=2)
    with pytest.raises(ValueError, match="overwrite"):
        centre(source, source, games=2)
    import klent.engine.games as games
    from klent.training.export import export_onnx
    from klent.training.nets import NetConfig, build_net

    game = games.get("chess")
    export_onnx(build_net(game, NetConfig(blocks=1, channels=8, value_head=True)).eval(), game, tmp_path / "v.onnx")
    with pytest.raises(ValueError, match="value head"):
        centre(tmp_path / "v.onnx", tmp_path / "go.onnx", games=2)


def test_the_command_says_what_it_did_and_refuses_in_one_line(untrained_model, tmp_path: Path) -> None:
    source = untrained_model("chess")
    done = subprocess.run([sys.executable, "-m", "klent", "centre", source, "-o", str(tmp_path / "c.onnx"),
                           "--games", "2"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "action values shifted by" in done.stdout and (tmp_path / "c.onnx").is_file()
    again = subprocess.run([sys.executable, "-m", "klent", "centre", str(tmp_path / "c.onnx"), "-o",
                            str(tmp_path / "d.onnx"), "--games", "2"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and again.stderr.strip().count("\n") == 0 and "centred already" in again.stderr


def test_games_from_given_starts_are_measured_for_the_plies_asked(untrained_model, tmp_path: Path) -> None:
    from klent.matchplay.opening_files import opening_state

    starts = [opening_state("chess", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 moves e2e4"),
              opening_state("chess", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 moves d2d4 d7d5")]
    result = centre(untrained_model("chess"), tmp_path / "c.onnx", starts=starts, plies=5)
    assert result.pairs == 2 * 5  # plies 0..5 of each game: six positions, five pairs
