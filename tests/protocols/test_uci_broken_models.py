"""`klent uci` with a model that cannot load or fails at play: a GUI waits for ``readyok`` after
``isready`` and for ``bestmove`` after ``go``, so both come whatever the model does, with an
``info string`` naming the file (models from tests/broken_models.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import broken_models
import pytest

from klent.matchplay.engine_process import UciProcess

ANSWER = 60.0  # seconds; a GUI that waits longer is hung


@pytest.mark.parametrize(("build", "reason"), [
    (broken_models.huge_allocation_model, "ONNX Runtime fails to evaluate it"),
    (broken_models.nested_metadata_model, "malformed klent metadata (klent.training is nested too deeply)"),
])
def test_a_model_that_cannot_load_still_answers_readyok_and_bestmove(build, reason: str, tmp_path: Path) -> None:
    """Load failures other than a ValueError escaped: ``isready`` and ``go`` answered only
    ``info string ... failed``, never ``readyok`` or ``bestmove``."""
    path = build("chess", tmp_path / "broken.onnx")
    with UciProcess([sys.executable, "-m", "klent", "uci", "--model", path]) as uci:
        ready = uci.ask("isready", "readyok", ANSWER)
        assert any(line.startswith(f"info string cannot load model {path}") and reason in line for line in ready), ready
        assert len(ready) == 2
        uci.tell("position startpos moves e2e4")
        assert uci.ask("go nodes 8", "bestmove", ANSWER)[-1] == "bestmove (none)"
        assert uci.ask("isready", "readyok", ANSWER)[-1] == "readyok"


def test_a_model_that_turns_nan_after_a_move_fails_that_search_only(tmp_path: Path) -> None:
    path = broken_models.nan_after_a_move_model("chess", tmp_path / "nan.onnx")
    with UciProcess([sys.executable, "-m", "klent", "uci", "--model", path]) as uci:
        assert uci.ask("isready", "readyok", ANSWER) == ["readyok"]
        uci.tell("position startpos")
        answer = uci.ask("go nodes 8", "bestmove", ANSWER)
        assert answer[-1] == "bestmove (none)"
        assert any(f"{path}: its policy_logits are not finite" in line for line in answer), answer
        assert uci.ask("isready", "readyok", ANSWER) == ["readyok"]
