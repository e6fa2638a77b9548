"""Torch -> ONNX export (klent/training/export.py, `klent export`): parity, batch axis, metadata."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

import klent.engine.games as games
from klent.cli import main as klent_main
from klent.engine.games.base import Game, State
from klent.engine.network import MASKED_LOGIT, OnnxEvaluator
from klent.training.checkpoint import initial_weights
from klent.training.export import export_onnx
from klent.training.nets import KlentNet, NetConfig, build_net, load_checkpoint, save_checkpoint
from klent.training.torch_evaluator import TorchEvaluator

TOLERANCE = 1e-4


def random_positions(game: Game, count: int, seed: int, max_moves: int = 60) -> list[State]:
    """``count`` positions met in uniformly random play (terminal positions included)."""
    rng = np.random.default_rng(seed)
    positions: list[State] = []
    state = game.initial_state()
    while len(positions) < count:
        positions.append(state)
        if state.is_terminal or state.move_number >= max_moves:
            state = game.initial_state()
        else:
            state = state.play(int(rng.choice(state.legal_actions())))
    return positions


def trained_looking_net(game: Game, config: NetConfig, seed: int) -> KlentNet:
    """A small random network whose batch norms have non-trivial running statistics.

    Fresh batch norms are the identity in eval mode, which would hide an export that used
    batch statistics instead of the running ones.
    """
    torch.manual_seed(seed)
    model = build_net(game, config)
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(16, *game.observation_shape) * 2 + 0.5)
    return model.eval()


@pytest.fixture(scope="module", params=["countup", "go9", "chess"])
def exported(request, tmp_path_factory) -> tuple[Game, KlentNet, OnnxEvaluator]:
    game = games.get(request.param)
    model = trained_looking_net(game, NetConfig(blocks=2, channels=16), seed=3)
    path = tmp_path_factory.mktemp(request.param) / f"{request.param}.onnx"
    export_onnx(model, game, path, {"algorithm": "klent", "simulator_evaluations": "1234"})
    return game, model, OnnxEvaluator(path, game)


def assert_same_evaluation(onnx_result, torch_result) -> None:
    for got, want in zip(onnx_result, torch_result):
        if want is None:
            assert got is None
        else:
            np.testing.assert_allclose(got, want, atol=TOLERANCE)


def test_onnx_runtime_agrees_with_torch_on_random_positions(exported) -> None:
    game, model, onnx_evaluator = exported
    positions = random_positions(game, 100, seed=4)
    masks = np.stack([s.legal_mask() for s in positions])
    assert masks.any(axis=1).mean() > 0.75  # mostly live positions, some terminal ones
    onnx_result = onnx_evaluator.evaluate(positions)
    torch_result = TorchEvaluator(model, game, device="cpu").evaluate(positions)
    assert_same_evaluation(onnx_result, torch_result)
    # Masking: illegal actions carry MASKED_LOGIT and Q = 0, legal ones the network's outputs.
    assert np.array_equal(onnx_result.policy_logits == MASKED_LOGIT, ~masks)
    assert np.all(onnx_result.action_values[~masks] == 0.0)
    assert np.all(np.abs(onnx_result.action_values) <= 1.0)


def test_dynamic_batch_axis(exported) -> None:
    game, model, onnx_evaluator = exported
    positions = random_positions(game, 64, seed=5)
    full = onnx_evaluator.evaluate(positions)
    for size in (1, 7, 64):
        part = onnx_evaluator.evaluate(positions[:size])
        assert part.policy_logits.shape == (size, game.num_actions)
        np.testing.assert_allclose(part.policy_logits, full.policy_logits[:size], atol=TOLERANCE)
        np.testing.assert_allclose(part.action_values, full.action_values[:size], atol=TOLERANCE)


def test_metadata_round_trip(exported) -> None:
    game, model, onnx_evaluator = exported
    info = onnx_evaluator.info
    assert (info.game, info.encoder_version) == (game.name, game.encoder_version)
    assert info.arch == "resnet-2x16"
    assert info.training["algorithm"] == "klent"
    assert info.training["simulator_evaluations"] == "1234"
    assert len(info.training["date"]) == 10  # ISO date added by the export
    assert (info.has_action_values, info.has_state_value) == (True, False)
    # The file itself, as another ONNX tool sees it.
    proto = onnx.load(info.path)
    props = {p.key: p.value for p in proto.metadata_props}
    assert props["klent.game"] == game.name and props["klent.encoder"] == str(game.encoder_version)
    assert json.loads(props["klent.training"])["algorithm"] == "klent"
    (obs,) = proto.graph.input
    dims = obs.type.tensor_type.shape.dim
    assert obs.name == "obs" and dims[0].dim_param  # symbolic batch dimension
    assert [d.dim_value for d in dims[1:]] == list(game.observation_shape)
    assert [o.name for o in proto.graph.output] == ["policy_logits", "action_values"]


def test_state_value_model_parity(tmp_path: Path) -> None:
    game = games.get("countup")
    config = NetConfig(blocks=1, channels=8, value_head=True)
    model = trained_looking_net(game, config, seed=6)
    model.train()  # the caller's model must keep its mode through the export
    export_onnx(model, game, tmp_path / "v.onnx")
    assert model.training
    assert os.listdir(tmp_path) == ["v.onnx"]  # written atomically: no temporary files left
    evaluator = OnnxEvaluator(tmp_path / "v.onnx")
    assert evaluator.info.has_state_value and evaluator.info.has_action_values
    positions = random_positions(game, 20, seed=7)
    torch_result = TorchEvaluator(model, game, device="cpu").evaluate(positions)
    assert torch_result.state_value is not None
    assert_same_evaluation(evaluator.evaluate(positions), torch_result)


def test_ownership_and_score_heads_travel_through_onnx(tmp_path: Path) -> None:
    game = games.get("go9")
    config = NetConfig(blocks=2, channels=8, ownership_head=True, score_head=True, global_pooling=True)
    model = trained_looking_net(game, config, seed=8)
    export_onnx(model, game, tmp_path / "o.onnx")
    evaluator = OnnxEvaluator(tmp_path / "o.onnx")
    assert (evaluator.info.has_ownership, evaluator.info.has_score) == (True, True)
    assert evaluator.info.arch == "resnet-2x8-gpool"
    positions = random_positions(game, 20, seed=9)
    onnx_result = evaluator.evaluate(positions)
    assert onnx_result.ownership is not None and onnx_result.ownership.shape == (20, 9, 9)
    assert onnx_result.score is not None and onnx_result.score.shape == (20,)
    assert np.abs(onnx_result.ownership).max() <= 1.0 and onnx_result.ownership.std() > 0
    assert_same_evaluation(onnx_result, TorchEvaluator(model, game, device="cpu").evaluate(positions))


@pytest.mark.parametrize("tensor", ["weight", "buffer"])
def test_export_refuses_non_finite_weights(tmp_path: Path, tensor: str) -> None:
    """The weights of a diverged training run would make every search fail at its first move."""
    game = games.get("countup")
    model = build_net(game, NetConfig(blocks=1, channels=8))
    with torch.no_grad():
        if tensor == "weight":
            next(model.parameters()).view(-1)[0] = float("nan")
        else:  # a batch norm's running variance
            next(b for name, b in model.named_buffers() if name.endswith("running_var"))[0] = float("inf")
    with pytest.raises(ValueError, match=r"not finite \(NaN or infinite\)"):
        export_onnx(model, game, tmp_path / "nan.onnx")
    assert os.listdir(tmp_path) == []


def test_klent_export_random_baseline_model(tmp_path: Path, capsys) -> None:
    """``--random`` with the Gumbel AlphaZero heads (policy + state value), seeded."""
    out = tmp_path / "random.onnx"
    args = ["--random", "--game", "countup", "--blocks", "1", "--channels", "8", "--seed", "5"]
    assert klent_main(["export", *args, "--value-head", "--no-action-values", "-o", str(out)]) == 0
    assert "countup, resnet-1x8" in capsys.readouterr().out
    evaluator = OnnxEvaluator(out)
    assert evaluator.info.training["simulator_evaluations"] == "0"
    assert (evaluator.info.has_action_values, evaluator.info.has_state_value) == (False, True)
    game = games.get("countup")
    torch.manual_seed(5)
    same_seed = build_net(game, NetConfig(1, 8, value_head=True, action_value_head=False))
    positions = random_positions(game, 10, seed=8)
    result = evaluator.evaluate(positions)
    torch_result = TorchEvaluator(same_seed, game, device="cpu").evaluate(positions)
    assert_same_evaluation(result, torch_result)
    assert np.all(result.action_values == 0.0)  # no action-value head: reported as 0


def test_klent_export_checkpoint(tmp_path: Path, capsys) -> None:
    game = games.get("countup")
    config = NetConfig(blocks=1, channels=8)
    model = trained_looking_net(game, config, seed=8)
    info = {"algorithm": "klent", "simulator_evaluations": "5000"}
    save_checkpoint(tmp_path / "ckpt.pt", model, game, config, training_info=info, step=3)
    assert klent_main(["export", str(tmp_path / "ckpt.pt"), "-o", str(tmp_path / "c.onnx")]) == 0
    assert "wrote" in capsys.readouterr().out
    from_checkpoint = OnnxEvaluator(tmp_path / "c.onnx")
    assert from_checkpoint.info.training["simulator_evaluations"] == "5000"
    positions = random_positions(game, 10, seed=9)
    torch_result = TorchEvaluator(model, game, device="cpu").evaluate(positions)
    assert_same_evaluation(from_checkpoint.evaluate(positions), torch_result)


def test_klent_export_float16_weights_start_a_run(tmp_path: Path, capsys) -> None:
    game = games.get("countup")
    config = NetConfig(blocks=2, channels=32)
    model = trained_looking_net(game, config, seed=8)
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.zeros(1, *game.observation_shape)).policy_logits.sum().backward()
    optimizer.step()  # the moments a trainer's checkpoint carries
    info = {"algorithm": "distill", "iterations": "7"}
    save_checkpoint(tmp_path / "ckpt.pt", model, game, config, training_info=info,
                    optimizer=optimizer.state_dict())
    assert klent_main(["export", str(tmp_path / "ckpt.pt"), "-o", str(tmp_path / "w.pt")]) == 0
    assert "float16 weights" in capsys.readouterr().out
    assert (tmp_path / "w.pt").stat().st_size < (tmp_path / "ckpt.pt").stat().st_size / 4
    weights = load_checkpoint(tmp_path / "w.pt")
    assert weights.config == config and weights.extra == {"training_info": info}
    assert initial_weights(tmp_path / "w.pt", game, config).keys() == model.state_dict().keys()
    positions = random_positions(game, 10, seed=9)
    full = TorchEvaluator(model, game, device="cpu").evaluate(positions)
    half = TorchEvaluator(weights.model, game, device="cpu").evaluate(positions)
    assert np.allclose(half.policy_logits, full.policy_logits, atol=1e-2)
    assert np.allclose(half.action_values, full.action_values, atol=1e-2)
    assert not np.array_equal(half.action_values, full.action_values)  # rounded to float16, not copied


def test_klent_export_refuses_int8_float16_weights_before_reading(tmp_path: Path, capsys) -> None:
    (tmp_path / "corrupt.pt").write_bytes(b"\x00garbage")  # read, it would fail with another message
    status = klent_main(["export", str(tmp_path / "corrupt.pt"), "--quantize", "int8", "-o", str(tmp_path / "w.pt")])
    err = capsys.readouterr().err
    assert status == 2 and "--quantize writes an ONNX model" in err and err.count("\n") == 1
    assert not (tmp_path / "w.pt").exists()


@pytest.mark.parametrize(
    ("make_args", "message"),
    [
        (lambda d: [str(d / "missing.pt")], "no checkpoint file"),
        (lambda d: [str(d / "corrupt.pt")], "corrupt.pt: corrupt or not a checkpoint"),
        (lambda d: [], "either a CHECKPOINT or --random"),
        (lambda d: ["--random"], "--random needs --game"),
        (lambda d: ["--random", "--game", "tictactoe"], "unknown game 'tictactoe'"),
        (lambda d: [str(d / "corrupt.pt"), "--blocks", "3"], "--blocks only apply with --random"),
    ],
    ids=["missing", "corrupt", "nothing", "no-game", "unknown-game", "random-option"],
)
def test_klent_export_errors_are_one_line(tmp_path: Path, capsys, make_args, message) -> None:
    (tmp_path / "corrupt.pt").write_bytes(b"\x00garbage")
    status = klent_main(["export", *make_args(tmp_path), "-o", str(tmp_path / "out.onnx")])
    err = capsys.readouterr().err
    assert status == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "out.onnx").exists()
