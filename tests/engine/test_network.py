"""The ONNX Runtime evaluator (klent/engine/network.py): loading, refusal, providers, batching."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import broken_models
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import klent.engine.games as games
import klent.engine.network as network
from klent.cli import main as klent_main
from klent.engine.games.countup import CountUpGame
from klent.engine.network import (
    MASKED_LOGIT,
    PROVIDER_PREFERENCE,
    ModelFormatError,
    ModelMismatchError,
    OnnxEvaluator,
    select_providers,
    state_values,
)


@pytest.fixture(scope="module")
def countup_model(untrained_model) -> Path:
    """An untrained 2 x 16 count-up model (conftest), exported by klent.training.export."""
    return Path(untrained_model("countup"))


def with_metadata(source: Path, target: Path, **changes: str) -> Path:
    """A copy of the model ``source`` with some metadata props changed (keys without 'klent.')."""
    proto = onnx.load(source)
    for prop in proto.metadata_props:
        key = prop.key.removeprefix("klent.")
        if key in changes:
            prop.value = changes[key]
    onnx.save(proto, target)
    return target


def test_loads_the_game_named_by_the_model(countup_model: Path) -> None:
    evaluator = OnnxEvaluator(countup_model)
    assert evaluator.game.name == "countup"
    assert evaluator.info.game == "countup" and evaluator.info.encoder_version == 1
    assert evaluator.info.arch == "resnet-2x16"
    assert evaluator.info.training["algorithm"] == "untrained"


def test_batched_evaluation_with_masking(countup_model: Path) -> None:
    evaluator = OnnxEvaluator(countup_model, games.get("countup"))
    start = evaluator.game.initial_state()
    over = start.play(1).play(1).play(1).play(1)
    assert over.is_terminal
    result = evaluator.evaluate([start, over, start.play(0)])
    assert result.policy_logits.shape == (3, 2) and result.policy_logits.dtype == np.float32
    assert np.all(result.policy_logits[1] == MASKED_LOGIT) and np.all(result.action_values[1] == 0)
    assert np.all(result.policy_logits[[0, 2]] > MASKED_LOGIT)
    assert result.state_value is None
    v = state_values(result)  # V = sum_a pi(a|s) Q(s, a) for a model without a value head
    assert v.shape == (3,) and np.all(np.abs(v) <= 1.0)

    # The encoded entry point gives the same numbers, and honours a mask it is given.  (A batch
    # of 1 against one of 3: on a GPU other kernels run, and on an H200 the logits differed by
    # 4.9e-6; the models' ONNX parity bound is 1e-4.)
    obs = evaluator.game.encode_batch([start])
    masked = evaluator.evaluate_encoded(obs, np.array([[False, True]]))
    assert masked.policy_logits[0, 0] == MASKED_LOGIT
    np.testing.assert_allclose(masked.policy_logits[0, 1], result.policy_logits[0, 1], atol=1e-4)
    empty = evaluator.evaluate([])
    assert empty.policy_logits.shape == (0, 2)
    with pytest.raises(ValueError, match=r"expected observations \[B, 7, 1, 1\]"):
        evaluator.evaluate_encoded(np.zeros((1, 5, 1, 1), np.float32), np.ones((1, 2), bool))


def test_refuses_a_model_of_another_game(countup_model: Path) -> None:
    with pytest.raises(ModelMismatchError, match="is a model for countup, not for countup10_3"):
        OnnxEvaluator(countup_model, games.get("countup10_3"))


def test_refuses_a_model_of_another_encoder_version(countup_model: Path, tmp_path: Path) -> None:
    class NewerCountUp(CountUpGame):
        encoder_version = 2

    with pytest.raises(ModelMismatchError, match="encoder version 1, but .* version 2"):
        OnnxEvaluator(countup_model, NewerCountUp())
    old = with_metadata(countup_model, tmp_path / "old.onnx", encoder="0")
    with pytest.raises(ModelMismatchError, match="encoder version 0, but .* version 1"):
        OnnxEvaluator(old)


def test_refuses_a_model_whose_tensors_do_not_fit(countup_model: Path) -> None:
    class SameNameOtherShape(CountUpGame):
        pass

    impostor = SameNameOtherShape(target=7, max_step=3)
    impostor.name = "countup"  # claims the name, but has 3 actions
    with pytest.raises(ModelMismatchError, match="do not fit countup"):
        OnnxEvaluator(countup_model, impostor)


def test_refuses_a_model_of_an_unknown_game(countup_model: Path, tmp_path: Path) -> None:
    foreign = with_metadata(countup_model, tmp_path / "t.onnx", game="tictactoe")
    with pytest.raises(ModelMismatchError, match="'tictactoe', a game this klent does not know"):
        OnnxEvaluator(foreign)


def test_refuses_malformed_metadata(countup_model: Path, tmp_path: Path) -> None:
    for name, change in [("e.onnx", {"encoder": "one"}), ("t.onnx", {"training": "[1, 2]"})]:
        broken = with_metadata(countup_model, tmp_path / name, **change)
        with pytest.raises(ModelFormatError, match=f"{name}: malformed klent metadata"):
            OnnxEvaluator(broken)


def test_files_that_are_not_klent_models(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nothing.onnx"):
        OnnxEvaluator(tmp_path / "nothing.onnx")
    (tmp_path / "garbage.onnx").write_bytes(b"\x08\x07garbage")
    with pytest.raises(ModelFormatError, match="garbage.onnx: ONNX Runtime cannot load it"):
        OnnxEvaluator(tmp_path / "garbage.onnx")
    # A valid ONNX graph without klent metadata.
    graph = helper.make_graph(
        [helper.make_node("Identity", ["obs"], ["policy_logits"])],
        "plain",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["B", 2])],
        [helper.make_tensor_value_info("policy_logits", TensorProto.FLOAT, ["B", 2])],
    )
    plain = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    plain.ir_version = 8
    onnx.save(plain, tmp_path / "plain.onnx")
    with pytest.raises(ModelFormatError, match="not a klent model .no klent.game or klent.encoder"):
        OnnxEvaluator(tmp_path / "plain.onnx")


def test_refuses_a_model_whose_outputs_are_not_finite(countup_model: Path, tmp_path: Path) -> None:
    """NaN weights (a diverged training run) would fail a search at its first move instead."""
    proto = onnx.load(countup_model)
    for initializer in proto.graph.initializer:
        weights = numpy_helper.to_array(initializer)
        if weights.dtype == np.float32:
            initializer.CopyFrom(numpy_helper.from_array(np.full_like(weights, np.nan), initializer.name))
    onnx.save(proto, tmp_path / "nan.onnx")
    with pytest.raises(ModelFormatError, match=r"nan.onnx: its policy_logits are not finite") as error:
        OnnxEvaluator(tmp_path / "nan.onnx")
    assert "\n" not in str(error.value)


def test_provider_preference() -> None:
    everything = ["CPUExecutionProvider", "CUDAExecutionProvider", "TensorrtExecutionProvider"]
    assert select_providers(everything, tensorrt_found=True) == [
        "TensorrtExecutionProvider",
        "CUDAExecutionProvider",
        "CPUExecutionProvider",
    ]
    # Listed by a GPU build of ONNX Runtime, but libnvinfer is not installed: not tried.
    assert select_providers(everything, tensorrt_found=False) == [
        "CUDAExecutionProvider",
        "CPUExecutionProvider",
    ]
    assert select_providers(["AzureExecutionProvider", "CPUExecutionProvider"]) == [
        "CPUExecutionProvider"
    ]
    assert select_providers(["CUDAExecutionProvider"]) == [
        "CUDAExecutionProvider",
        "CPUExecutionProvider",
    ]


def test_skips_providers_that_cannot_start(
    countup_model: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A GPU build lists TensorRT and CUDA even when their libraries are missing; opening a
    # session on them then fails, and the evaluator must go on to the next provider.
    monkeypatch.setattr(network.ort, "get_available_providers", lambda: list(PROVIDER_PREFERENCE))
    monkeypatch.setattr(network.ctypes.util, "find_library", lambda name: f"lib{name}.so.10")
    real_session = ort.InferenceSession
    attempts: list[str] = []
    options: dict[str, dict[str, str]] = {}

    def gpu_libraries_missing(path, sess_options, providers, provider_options, **kwargs):
        attempts.append(providers[0])
        options[providers[0]] = provider_options[0]
        if providers[0] != "CPUExecutionProvider":
            raise RuntimeError(f"{providers[0]}: libnvinfer.so.10 not found")
        return real_session(path, sess_options=sess_options, providers=providers, **kwargs)

    monkeypatch.setattr(network.ort, "InferenceSession", gpu_libraries_missing)
    evaluator = OnnxEvaluator(countup_model)
    assert attempts == list(PROVIDER_PREFERENCE)
    # cuDNN picks convolution algorithms by heuristics, not by timing them for every new batch
    # size (which made a one-game search 5x slower on an H100).
    assert options["CUDAExecutionProvider"] == {"cudnn_conv_algo_search": "HEURISTIC"}
    assert options["CPUExecutionProvider"] == {}
    assert evaluator.providers == ["CPUExecutionProvider"]
    assert evaluator.evaluate([evaluator.game.initial_state()]).policy_logits.shape == (1, 2)
    assert capsys.readouterr().out == ""  # stdout is the GTP/UCI channel: nothing printed


def test_uses_every_installed_provider_it_prefers(countup_model: Path) -> None:
    # On a CPU-only machine (like CI) this is ["CPUExecutionProvider"].
    evaluator = OnnxEvaluator(countup_model)
    assert evaluator.providers == select_providers(ort.get_available_providers())
    forced = OnnxEvaluator(countup_model, device="cpu")
    assert forced.providers == ["CPUExecutionProvider"]


def test_a_device_this_onnx_runtime_lacks_is_a_one_line_error(
    countup_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(network.ort, "get_available_providers", lambda: ["CPUExecutionProvider"])
    with pytest.raises(ValueError, match=r"^device cuda: .* has no CUDAExecutionProvider \(the onnxruntime-gpu"):
        OnnxEvaluator(countup_model, device="cuda")
    with pytest.raises(ValueError, match="device must be one of auto, cpu, cuda, tensorrt, not 'gpu'"):
        network.device_providers("gpu")
    monkeypatch.setattr(network.ort, "get_available_providers", lambda: list(PROVIDER_PREFERENCE))
    assert network.device_providers("cuda") == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert network.device_providers("cpu") == ["CPUExecutionProvider"]


@pytest.mark.parametrize("command", ["gtp", "uci", "serve"])
def test_players_refuse_a_device_before_they_start(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Players load their models at the first move; the device is checked at start-up instead.
    monkeypatch.setattr(network.ort, "get_available_providers", lambda: ["CPUExecutionProvider"])
    assert klent_main([command, "--device", "cuda"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "device cuda: " in error and "has no CUDAExecutionProvider" in error


def test_thread_settings(countup_model: Path) -> None:
    assert 1 <= network.default_threads() <= 4
    options = OnnxEvaluator(countup_model, threads=1).session.get_session_options()
    assert options.intra_op_num_threads == 1 and options.inter_op_num_threads == 1
    default = OnnxEvaluator(countup_model).session.get_session_options()
    assert default.intra_op_num_threads == network.default_threads()
    assert default.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_the_engine_never_imports_torch() -> None:
    code = (
        "import sys, klent.engine.network, klent.engine.games; klent.engine.games.get('countup'); "
        "sys.exit('torch' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# --- models that fail (tests/broken_models.py) --------------------------------------------------


def test_a_model_onnx_runtime_fails_to_evaluate_is_refused_at_load(tmp_path: Path) -> None:
    """ONNX Runtime's own exception used to escape the load-time probe: every front door that
    caught the engine's errors (ValueError) crashed or hung on it."""
    path = broken_models.huge_allocation_model("go9", tmp_path / "huge.onnx")
    with pytest.raises(ModelFormatError, match=r"huge.onnx: ONNX Runtime fails to evaluate it .* initial pos") as error:
        OnnxEvaluator(path)
    assert "\n" not in str(error.value)


def test_metadata_nested_too_deeply_is_a_format_error(tmp_path: Path) -> None:
    """``klent.training`` of 100,000 nested ``[`` was a RecursionError out of the JSON parser."""
    path = broken_models.nested_metadata_model("go9", tmp_path / "nested.onnx")
    with pytest.raises(ModelFormatError, match=r"nested.onnx: malformed klent metadata \(klent.training is nested"):
        network.read_model_info(path)
    with pytest.raises(ModelFormatError, match="nested too deeply"):
        OnnxEvaluator(path)


def test_outputs_that_turn_nan_at_play_time_are_an_error_for_that_evaluation(tmp_path: Path) -> None:
    """Finite on the empty board (so it loads), NaN after one stone: the NaN reached the search,
    which failed with "argmax of an empty sequence" (GTP died of it)."""
    evaluator = OnnxEvaluator(broken_models.nan_after_a_move_model("go9", tmp_path / "nan.onnx"))
    start = evaluator.game.initial_state()
    assert np.isfinite(evaluator.evaluate([start]).policy_logits).all()
    with pytest.raises(network.ModelOutputError, match=r"nan.onnx: its policy_logits are not finite"):
        evaluator.evaluate([start, start.play(40)])
    assert np.isfinite(evaluator.evaluate([start]).policy_logits).all()  # and it goes on evaluating


def test_a_hostile_file_costs_bounded_work_to_read_its_header(tmp_path: Path) -> None:
    """64 MB of zeros is a protobuf field every two bytes: its header took 58 s to walk (and
    1 GB about 15 min) before `klent gtp --model` could say it is no model."""
    import time

    zeros = tmp_path / "zeros.onnx"
    zeros.write_bytes(bytes(64 << 20))
    started = time.monotonic()
    with pytest.raises(ModelFormatError, match="more than 100000 protobuf fields"):
        network.read_model_info(zeros)
    assert time.monotonic() - started < 5
    huge = tmp_path / "huge.onnx"
    with huge.open("wb") as file:  # sparse: 3 GiB on paper, nothing on the disk
        file.truncate(3 << 30)
    with pytest.raises(ModelFormatError, match="more than protobuf's 2147483648"):
        network.read_model_info(huge)


def test_thread_counts_beyond_the_cap_are_refused(countup_model: Path) -> None:
    with pytest.raises(ValueError, match="threads must be between 1 and 64, got 100000"):
        OnnxEvaluator(countup_model, threads=100_000)


@pytest.mark.parametrize("command", ["gtp", "serve"])
def test_players_refuse_thousands_of_threads_before_they_start(command: str, capsys: pytest.CaptureFixture) -> None:
    """``--threads 100000`` grew the process by 60 MB a second and never served (UCI's Threads
    option already stopped at 64)."""
    assert klent_main([command, "--threads", "100000"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "--threads must be between 1 and 64" in error, error
