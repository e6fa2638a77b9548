"""The KLENT network family (klent/training/nets.py), its checkpoints and the torch evaluator."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

import klent.engine.games as games
from klent.engine.games.countup import CountUpGame
from klent.engine.network import MASKED_LOGIT, ModelMismatchError
from klent.training import nets
from klent.training.nets import (
    CheckpointError,
    NetConfig,
    build_net,
    count_parameters,
    load_checkpoint,
    save_checkpoint,
)
from klent.training.torch_evaluator import TorchEvaluator


class ShapeOnlyGame:
    """Observation/action shapes of a board game, for shape tests that need no rules."""

    def __init__(self, shape: tuple[int, int, int], num_actions: int) -> None:
        self.name = "shape-only"
        self.observation_shape = shape
        self.num_actions = num_actions
        self.encoder_version = 1
        self.action_planes = None  # no point-major action layout: fully-connected heads only


def settle_batchnorm(model: torch.nn.Module, shape: tuple[int, ...]) -> None:
    """Give batch norm non-trivial running statistics, as training would."""
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(8, *shape) * 2 + 0.5)
    model.eval()


@pytest.mark.parametrize(
    ("shape", "num_actions"),
    [((7, 1, 1), 2), ((17, 9, 9), 82), ((119, 8, 8), 4672)],
    ids=["countup", "go9-shape", "chess-shape"],
)
@pytest.mark.parametrize(
    "config",
    [
        NetConfig(blocks=2, channels=16),
        NetConfig(blocks=2, channels=16, value_head=True, action_value_head=False),
        NetConfig(blocks=1, channels=8, value_head=True, action_value_head=True),
    ],
    ids=["klent", "gumbel-az", "all-heads"],
)
def test_forward_shapes_and_ranges(shape, num_actions, config) -> None:
    torch.manual_seed(0)
    model = build_net(ShapeOnlyGame(shape, num_actions), config).eval()
    with torch.no_grad():
        logits, q, v, _, _ = model(torch.randn(5, *shape) * 3)
    assert logits.shape == (5, num_actions)
    assert logits.std() > 0  # not a constant output
    if config.action_value_head:
        assert q is not None and q.shape == (5, num_actions)
        assert q.abs().max() <= 1.0 and q.std() > 0
    else:
        assert q is None
    if config.value_head:
        assert v is not None and v.shape == (5,)
        assert v.abs().max() <= 1.0
    else:
        assert v is None


def test_config_validation_and_arch_name() -> None:
    assert NetConfig().arch == "resnet-6x64"
    assert NetConfig(blocks=20, channels=256).arch == "resnet-20x256"
    with pytest.raises(ValueError, match="value head"):
        NetConfig(value_head=False, action_value_head=False)
    with pytest.raises(ValueError, match="channels"):
        NetConfig(channels=0)
    with pytest.raises(ValueError, match="unknown network settings: width"):
        NetConfig.from_dict({"blocks": 2, "width": 3})


def test_parameter_count_of_the_paper_size() -> None:
    # The KLENT paper (appendix C): 6 blocks x 128 channels, 1.7M-2.1M parameters per game.
    go9_like = ShapeOnlyGame((17, 9, 9), 82)
    assert 1.7e6 <= count_parameters(build_net(go9_like, NetConfig(6, 128))) <= 2.1e6


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    game = games.get("countup")
    config = NetConfig(blocks=2, channels=16, value_head=True)
    torch.manual_seed(1)
    model = build_net(game, config)
    settle_batchnorm(model, game.observation_shape)
    optimizer = torch.optim.Adam(model.parameters())
    model.train()
    model(torch.randn(4, *game.observation_shape))[0].sum().backward()
    optimizer.step()
    model.eval()
    path = tmp_path / "run" / "checkpoint.pt"
    save_checkpoint(
        path, model, game, config, optimizer=optimizer.state_dict(), step=12,
        training_info={"algorithm": "klent"},
    )
    assert os.listdir(path.parent) == ["checkpoint.pt"]  # no temporary file left behind
    assert path.stat().st_mode & 0o777 == 0o644

    loaded = load_checkpoint(path)
    assert loaded.config == config and loaded.game.name == "countup"
    assert loaded.extra["step"] == 12 and loaded.extra["training_info"] == {"algorithm": "klent"}
    restored = torch.optim.Adam(loaded.model.parameters())
    restored.load_state_dict(loaded.extra["optimizer"])  # the trainer can resume from it
    obs = torch.randn(6, *game.observation_shape)
    with torch.no_grad():
        for a, b in zip(model(obs), loaded.model.eval()(obs)):
            assert (a is None and b is None) or torch.equal(a, b)


def test_checkpoint_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    game = games.get("countup")
    config = NetConfig(blocks=1, channels=8)
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, build_net(game, config), game, config, step=1)

    def crash_half_way(payload, f) -> None:
        Path(f).write_bytes(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", crash_half_way)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(path, build_net(game, config), game, config, step=2)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["checkpoint.pt"]
    assert load_checkpoint(path).extra["step"] == 1  # the old checkpoint is intact


def test_checkpoint_rejects_what_it_could_not_load_back(tmp_path: Path) -> None:
    game = games.get("countup")
    config = NetConfig(blocks=1, channels=8)
    model = build_net(game, config)
    with pytest.raises(TypeError, match=r"rng\['state'\] is a ndarray"):
        save_checkpoint(tmp_path / "c.pt", model, game, config, rng={"state": np.zeros(3)})
    with pytest.raises(ValueError, match="reserved"):
        save_checkpoint(tmp_path / "c.pt", model, game, config, game="chess", net_config={})
    assert os.listdir(tmp_path) == []


def test_bad_checkpoints_give_clear_errors(tmp_path: Path) -> None:
    game = games.get("countup")
    config = NetConfig(blocks=1, channels=8)
    with pytest.raises(FileNotFoundError, match="missing.pt"):
        load_checkpoint(tmp_path / "missing.pt")
    (tmp_path / "garbage.pt").write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="garbage.pt: corrupt or not a checkpoint"):
        load_checkpoint(tmp_path / "garbage.pt")
    save_checkpoint(tmp_path / "good.pt", build_net(game, config), game, config)
    data = (tmp_path / "good.pt").read_bytes()
    (tmp_path / "truncated.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated.pt"):
        load_checkpoint(tmp_path / "truncated.pt")
    torch.save({"weights": 1}, tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="not a klent checkpoint"):
        load_checkpoint(tmp_path / "foreign.pt")


def test_a_checkpoint_too_large_a_zip_bomb_or_nested_deeply_is_refused_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.load inflated a deflated member whole, whatever its size: here 16 MiB of padding
    after a checkpoint's pickle, deflated to 16 KB; and a "model" that is no dict was a TypeError."""
    game = games.get("countup")
    config = NetConfig(blocks=1, channels=8)
    good = tmp_path / "good.pt"
    save_checkpoint(good, build_net(game, config), game, config)

    def rewritten(name: str, pickle: bytes | None = None) -> Path:
        """``good`` with its pickle replaced by ``pickle`` (or padded to 16 MiB), deflated."""
        path = tmp_path / name
        with zipfile.ZipFile(good) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
            for member in source.namelist():
                data = source.read(member)
                if member.endswith("/data.pkl"):
                    data = data + bytes(16 << 20) if pickle is None else pickle
                out.writestr(member, data)
        return path

    bomb = rewritten("bomb.pt")
    assert bomb.stat().st_size < 100_000
    monkeypatch.setattr(nets, "MAX_CHECKPOINT_BYTES", 1 << 20)
    with pytest.raises(CheckpointError, match=f"^{bomb}: its members inflate to .* bytes, more than 1048576$"):
        load_checkpoint(bomb)
    monkeypatch.setattr(nets, "MAX_CHECKPOINT_BYTES", 1000)
    with pytest.raises(CheckpointError, match=f"^{good}: larger than 1000 bytes$"):
        load_checkpoint(good)
    monkeypatch.undo()
    nested = rewritten("nested.pt", b"\x80\x02" + b"]" * 100_000 + b"a" * 99_999 + b".")  # lists 100,000 deep
    with pytest.raises(CheckpointError, match=f"^{nested}: not a klent checkpoint"):
        load_checkpoint(nested)
    torch.save({**torch.load(good, weights_only=True), "model": []}, tmp_path / "list.pt")
    with pytest.raises(CheckpointError, match="list.pt: weights do not fit the network .Expected state_dict to be"):
        load_checkpoint(tmp_path / "list.pt")


def test_checkpoint_of_an_older_encoder_is_refused(tmp_path: Path) -> None:
    class OldCountUp(CountUpGame):
        encoder_version = 0

    game = OldCountUp()
    config = NetConfig(blocks=1, channels=8)
    save_checkpoint(tmp_path / "old.pt", build_net(game, config), game, config)
    with pytest.raises(ModelMismatchError, match="encoder version 0.*version 1"):
        load_checkpoint(tmp_path / "old.pt")


def test_torch_evaluator_masks_and_uses_eval_mode() -> None:
    game = games.get("countup")
    torch.manual_seed(2)
    model = build_net(game, NetConfig(blocks=2, channels=16))
    settle_batchnorm(model, game.observation_shape)
    model.train()  # as the trainer may leave it; the evaluator must not use batch statistics
    evaluator = TorchEvaluator(model, game, device="cpu")
    start = game.initial_state()
    states = [start, start.play(1), start.play(1).play(1).play(1).play(1)]  # the last is over
    result = evaluator.evaluate(states)
    assert result.policy_logits.dtype == np.float32 and result.action_values.dtype == np.float32
    assert result.state_value is None
    assert np.all(result.policy_logits[2] == MASKED_LOGIT)  # terminal: nothing is legal
    assert np.all(result.action_values[2] == 0.0)
    with torch.no_grad():
        logits, q, *_ = model.eval()(torch.from_numpy(game.encode_batch(states[:2])))
    np.testing.assert_allclose(result.policy_logits[:2], logits.numpy(), atol=1e-6)
    np.testing.assert_allclose(result.action_values[:2], q.numpy(), atol=1e-6)
    # One state alone gives what it gets inside a batch: no batch statistics are used.
    alone = evaluator.evaluate(states[1:2])
    np.testing.assert_allclose(alone.policy_logits[0], result.policy_logits[1], atol=1e-6)


def test_torch_evaluator_refuses_a_network_of_another_shape() -> None:
    model = build_net(games.get("countup"), NetConfig(blocks=1, channels=8))
    with pytest.raises(ValueError, match="does not fit countup10_3"):
        TorchEvaluator(model, games.get("countup10_3"), device="cpu")


def test_convolutional_heads_score_each_move_at_its_from_square_and_export(tmp_path: Path) -> None:
    from klent.engine.network import OnnxEvaluator
    from klent.training.export import export_onnx

    game = games.get("chess")
    torch.manual_seed(0)
    model = build_net(game, NetConfig(blocks=1, channels=8, heads="conv")).eval()
    assert model.config.arch == "resnet-1x8-conv"
    captured = {}
    model.policy_head.out.register_forward_hook(lambda _m, _i, out: captured.setdefault("planes", out))
    state = game.initial_state()
    obs = torch.from_numpy(game.encode(state))[None]
    with torch.no_grad():
        logits, q, *_ = model(obs)
    planes = captured["planes"][0]  # [73, 8, 8]: obs[:, rank, file] with rank 0 the mover's back rank
    for move in ("g1f3", "e2e4", "b1c3"):
        action = game.text_to_action(state, move)
        square, plane = divmod(action, 73)
        assert logits[0, action] == planes[plane, square // 8, square % 8]
    assert q.shape == (1, game.num_actions) and q.abs().max() <= 1
    with pytest.raises(ValueError, match="planes over its board"):
        build_net(games.get("go9"), NetConfig(blocks=1, channels=8, heads="conv"))
    export_onnx(model, game, tmp_path / "conv.onnx")
    mask = state.legal_mask()
    exported = OnnxEvaluator(tmp_path / "conv.onnx", game, threads=1).evaluate([state])[0][0]
    np.testing.assert_allclose(exported[mask], logits[0].numpy()[mask], atol=1e-5)
