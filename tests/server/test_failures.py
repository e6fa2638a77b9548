"""The HTTP API with models that fail (tests/broken_models.py) and numbers at the edge of their
range: a model that cannot load, or fails its warm-up, is answered 503 for its game while the
others are served; one that fails on a request's position fails that request alone, with a
JSON ``detail``, never a traceback."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import broken_models
import numpy as np
import pytest

with warnings.catch_warnings():  # starlette's note about httpx2 is not ours to act on
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

import klent.engine.games
from klent.engine.network import Evaluation, ModelFormatError, ModelOutputError
from klent.server.app import ServerConfig, create_app
from klent.server.batching import BatchingEvaluator


def serve(folder: Path) -> TestClient:
    return TestClient(create_app(ServerConfig(models_dir=folder, max_simulations=400, max_time=5.0)))


@pytest.mark.parametrize("build", [broken_models.huge_allocation_model, broken_models.nested_metadata_model,
                                   broken_models.nan_after_a_move_model])
def test_a_model_that_fails_to_load_or_warm_up_is_503_while_the_others_serve(
    build, untrained_model, tmp_path: Path
) -> None:
    """It was a traceback at start-up (the whole server down) or a 500 at each request."""
    shutil.copy(untrained_model("go9"), tmp_path / "go9.onnx")
    path = build("chess", tmp_path / "chess.onnx")
    with serve(tmp_path) as client:
        refused = client.post("/v1/chess/move", json={"mode": "reactive"})
        assert refused.status_code == 503
        assert refused.json()["detail"].startswith(f"the model for chess is not served: {path}")
        assert client.post("/v1/go9/move", json={"mode": "reactive"}).status_code == 200
        assert [model["game"] for model in client.get("/v1/models").json()["models"]] == ["go9"]
        assert client.get("/readyz").status_code == 200


def test_a_folder_where_no_model_loads_is_a_one_line_error(tmp_path: Path) -> None:
    path = broken_models.huge_allocation_model("go9", tmp_path / "go9.onnx")
    with pytest.raises(ModelFormatError, match="no model in the folder loads"):
        create_app(ServerConfig(models_dir=tmp_path))
    done = subprocess.run([sys.executable, "-m", "klent", "serve", "--models", str(tmp_path), "--port", "1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"klent serve: no model in the folder loads: {path}")
    assert "Traceback" not in done.stderr


def test_a_model_that_fails_on_a_requests_position_fails_that_request_alone(tmp_path: Path) -> None:
    """NaN from the third stone on: the warm-up passes, a request with three stones gets 500
    with the reason, and the next request is served."""
    path = broken_models.nan_from_stones_model(tmp_path / "go9.onnx")
    with serve(tmp_path) as client:
        failed = client.post("/v1/go9/move", json={"mode": "reactive", "moves": ["E5", "D4", "C3"]})
        assert failed.status_code == 500
        assert failed.json() == {"detail": f"the model failed on this position: {path}: its policy_logits are not "
                                           "finite (NaN or infinite), as from a diverged training run"}
        searched = client.post("/v1/go9/move", json={"moves": ["E5", "D4"], "simulations": 16})
        assert searched.status_code == 500
        assert client.post("/v1/go9/move", json={"mode": "reactive", "moves": ["E5"]}).status_code == 200


class PoisonedRows:
    """An evaluator whose batch fails when it holds a row of ones (one caller's bad position)."""

    def __init__(self) -> None:
        self.game = klent.engine.games.get("countup")

    def evaluate_encoded(self, obs: np.ndarray, masks: np.ndarray) -> Evaluation:
        if (obs == 1).all(axis=tuple(range(1, obs.ndim))).any():
            raise ModelOutputError("its policy_logits are not finite")
        batch = obs.shape[0]
        logits = np.broadcast_to(obs.reshape(batch, -1)[:, :1], masks.shape).astype(np.float32)
        return Evaluation(logits, np.zeros(masks.shape, np.float32), np.zeros(batch, np.float32))


def test_one_callers_failing_rows_do_not_fail_the_callers_batched_with_it() -> None:
    """Merged into one network call, one request's NaN position failed every request of the batch."""
    inner = PoisonedRows()
    batcher = BatchingEvaluator(inner, max_batch=16, max_wait=0.5)
    shape = (1, *inner.game.observation_shape)
    masks = np.ones((1, inner.game.num_actions), dtype=bool)
    results: dict[float, object] = {}

    def call(fill: float) -> None:
        try:
            results[fill] = batcher.evaluate_encoded(np.full(shape, fill, np.float32), masks).policy_logits[0, 0]
        except ModelOutputError as error:
            results[fill] = error

    try:
        with batcher.client(), batcher.client(), batcher.client():  # the batch waits for all three
            threads = [threading.Thread(target=call, args=(fill,)) for fill in (0.25, 1.0, 0.5)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(10)
    finally:
        batcher.close()
    assert results[0.25] == 0.25 and results[0.5] == 0.5
    assert isinstance(results[1.0], ModelOutputError)


def test_the_smallest_temperature_plays_the_policys_best_move(untrained_model, tmp_path: Path) -> None:
    """``"temperature": 5e-324`` divided the logits into infinities: "Probabilities contain NaN",
    a 500 with a traceback and a dropped keep-alive connection."""
    shutil.copy(untrained_model("go9"), tmp_path / "go9.onnx")
    with serve(tmp_path) as client:
        best = client.post("/v1/go9/move", json={"mode": "reactive"}).json()["move"]
        tiny = client.post("/v1/go9/move", json={"mode": "reactive", "temperature": 5e-324})
        assert tiny.status_code == 200 and tiny.json()["move"] == best
