"""One Go network for every board size: KataGo's board heads (klent/training/nets.py), encoder 3's
on-board plane, export with dynamic board axes, and the engine serving the sizes a model lists."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

from klent.engine.games.go import GoGame
from klent.engine.network import META_BOARD_SIZES, ModelMismatchError, OnnxEvaluator, read_model_info
from klent.engine.player import Player, PlayOptions, go_board_sizes
from klent.training.checkpoint import initial_weights
from klent.training.export import export_onnx
from klent.training.nets import KlentNet, NetConfig, build_net, save_checkpoint
from klent.training.teacher import LabelConfig, label

SIZES = (9, 13, 19)
CONFIG = NetConfig(blocks=2, channels=16, heads="board", global_pooling=True, ownership_head=True,
                   score_head=True, board_sizes=SIZES)


def positions(game: GoGame, count: int, seed: int) -> list:
    """``count`` positions of random play on ``game``'s board."""
    rng = np.random.default_rng(seed)
    state, found = game.initial_state(), []
    while len(found) < count:
        found.append(state)
        legal = np.flatnonzero(state.legal_mask()[:-1])  # stones only: games last
        state = state.play(int(rng.choice(legal))) if len(legal) and state.move_number < 40 else game.initial_state()
    return found


@pytest.fixture(scope="module")
def any_size_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[torch.nn.Module, Path]:
    """A small board-heads network with non-trivial batch-norm statistics, exported for go19."""
    game = GoGame(19, encoder=3)
    torch.manual_seed(5)
    model = build_net(game, CONFIG)
    model.train()
    with torch.no_grad():
        for size in SIZES:  # running statistics from every size, as mixed training gives
            model(torch.randn(8, game.observation_shape[0], size, size) + 0.5)
    model.eval()
    path = tmp_path_factory.mktemp("go") / "go19.onnx"
    export_onnx(model, game, path, {"algorithm": "untrained"})
    return model, path


def test_encoder_3_adds_a_plane_of_ones_over_the_board() -> None:
    v2, v3 = GoGame(9, encoder=2), GoGame(9, encoder=3)
    state = v3.initial_state().play(40).play(41)
    assert v3.observation_shape == (v2.observation_shape[0] + 1, 9, 9)
    obs = v3.encode(state)
    np.testing.assert_array_equal(obs[:-1], v2.encode(v2.replay(state)))
    assert (obs[-1] == 1).all()
    assert (v3.encode(state.play(0))[-1] == 1).all()  # whoever is to move: plane 16 is 0 for White


def test_board_heads_take_any_board_with_gos_action_layout() -> None:
    model = build_net(GoGame(19, encoder=3), CONFIG).eval()
    for size in SIZES:
        game = GoGame(size, encoder=3)
        out = model(torch.from_numpy(game.encode_batch(positions(game, 3, size))))
        assert out.policy_logits.shape == out.action_values.shape == (3, game.num_actions)
        assert out.ownership.shape == (3, size, size) and out.score.shape == (3,)


def test_fc_heads_cannot_claim_several_sizes_and_board_heads_are_for_go() -> None:
    with pytest.raises(ValueError, match="board heads"):
        NetConfig(board_sizes=(9, 19))
    with pytest.raises(ValueError, match="for Go"):
        KlentNet((24, 3, 3), 7, CONFIG)  # 7 actions on a 3x3 board: not one per point and pass


@pytest.mark.parametrize("size", SIZES)
def test_one_onnx_model_serves_every_size_it_lists_as_torch_computes(any_size_model, size: int) -> None:
    model, path = any_size_model
    game = GoGame(size, encoder=3)
    states = positions(game, 6, seed=size)
    evaluation = OnnxEvaluator(path, game).evaluate(states)
    with torch.no_grad():
        expected = model(torch.from_numpy(game.encode_batch(states)))
    masks = np.stack([s.legal_mask() for s in states])
    np.testing.assert_allclose(evaluation.policy_logits[masks], expected.policy_logits.numpy()[masks], atol=1e-4)
    np.testing.assert_allclose(evaluation.action_values[masks], expected.action_values.numpy()[masks], atol=1e-4)
    np.testing.assert_allclose(evaluation.ownership, expected.ownership.numpy(), atol=1e-4)
    np.testing.assert_allclose(evaluation.score, expected.score.numpy(), rtol=1e-4, atol=1e-3)


def test_the_model_names_its_sizes_and_the_engine_refuses_others(any_size_model) -> None:
    _, path = any_size_model
    info = read_model_info(path)
    assert info.game == "go19" and info.board_sizes == SIZES and info.encoder_version == 3
    assert json.loads({p.key: p.value for p in onnx.load(path).metadata_props}[META_BOARD_SIZES]) == list(SIZES)
    with pytest.raises(ModelMismatchError, match="not for go7"):
        OnnxEvaluator(path, GoGame(7, encoder=3))
    assert go_board_sizes(model=path) == list(SIZES)


def test_a_player_with_the_model_plays_19x19_and_9x9(any_size_model) -> None:
    _, path = any_size_model
    for size in (19, 9):
        player = Player.load(GoGame(size), model=path, threads=1)
        decision = player.decide(PlayOptions(simulations=8))
        assert decision.result.simulations >= 8
        player.play(decision.action)  # legal on this size, or it raises


def test_a_distillation_fits_two_sizes_in_turn(tmp_path: Path, gnugo_path: str) -> None:
    """Labels on 9x9 and 5x5 from GNU Go, one board-heads network fitted on both, exported with both sizes."""
    from klent.training.config import load_config
    from klent.training.trainer import Trainer

    sets = []
    for size in (9, 5):
        folder = tmp_path / f"go{size}"
        label(LabelConfig(game=f"go{size}", teacher=f"{gnugo_path} --mode gtp --level 0", depth=None,
                          positions=60, games_per_shard=2, validation_every=2), folder, jobs=1)
        sets.append(str(folder))
    config = load_config(Path(__file__).resolve().parents[2] / "klent" / "training" / "configs" / "go_distill_cpu.toml")
    config = config.replace(game="go9", blocks=1, channels=8, board_sizes=[5, 9],
                            distill=dataclasses.replace(config.distill, data=",".join(sets), positions=32),
                            optim=dataclasses.replace(config.optim, batch_size=16),
                            eval=dataclasses.replace(config.eval, every=2))
    trainer = Trainer(config, tmp_path / "run", threads=1)
    shapes = [trainer.algorithm.collect(trainer.slots, lambda: None, i).obs.shape[-1] for i in range(3)]
    assert shapes == [9, 5, 9]  # the run's own size first, then in turn
    trainer.run(iterations=2, progress=False)
    record = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[-1])
    assert "val_top1" in record and "go5/val_top1" in record
    assert read_model_info(tmp_path / "run" / "latest.onnx").board_sizes == (5, 9)

    wrong = config.replace(board_sizes=[9, 13])
    with pytest.raises(ValueError, match="board_sizes"):
        Trainer(wrong, tmp_path / "wrong", threads=1)


def test_a_board_heads_checkpoint_starts_a_run_on_another_size_it_lists(tmp_path: Path) -> None:
    """`klent train --init`: 13x13 self-play from the 13x13-and-19x19 network, but not on a size
    it does not list, nor across encoder versions."""
    go19 = GoGame(size=19, encoder=3)
    path = tmp_path / "go19.pt"
    save_checkpoint(path, build_net(go19, CONFIG), go19, CONFIG)
    weights = initial_weights(path, GoGame(size=13, encoder=3), CONFIG)
    assert weights.keys() == build_net(GoGame(size=13, encoder=3), CONFIG).state_dict().keys()
    unlisted = dataclasses.replace(CONFIG, board_sizes=(13, 19))
    save_checkpoint(tmp_path / "two.pt", build_net(go19, unlisted), go19, unlisted)
    with pytest.raises(ValueError, match="is a go19 network"):
        initial_weights(tmp_path / "two.pt", GoGame(size=9, encoder=3), unlisted)
    with pytest.raises(ValueError, match="is a go19 network"):
        initial_weights(path, GoGame(size=13, encoder=2), CONFIG)
