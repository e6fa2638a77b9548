"""Go's encoder version 2 (liberty planes) beside version 1, and models of both versions playing."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import klent.engine.games as games
from klent.engine.games.go import GoGame
from klent.engine.games.symmetry import dihedral
from klent.engine.network import ModelMismatchError, OnnxEvaluator
from klent.engine.player import Player
from klent.matchplay.engine_process import GtpProcess
from klent.training.export import export_onnx
from klent.training.nets import NetConfig, build_net, load_checkpoint, save_checkpoint

# A 5x5 position with chains of 1, 2 and 3+ liberties of both colours (X Black, O White):
#   5  X O . . .     A5: 1 liberty (A4)        B5: 2 (B4 C5)
#   4  . . . . .
#   3  . . X X .     C3-D3: 5 (C4 D4 B3 E3 C2)
#   2  . . . O O     D2-E2: 3 (C2 E3 E1)
#   1  O X . X .     A1: 1 (A2)   B1: 2 (B2 C1)   D1: 2 (C1 E1)
ROWS = ["XO...", ".....", "..XX.", "...OO", "OX.X."]
BY_LIBERTIES = {  # colour -> chains' stones by liberty class 1, 2, 3+
    "X": (["A5"], ["B1", "D1"], ["C3", "D3"]),
    "O": (["A1"], ["B5"], ["D2", "E2"]),
}


def position(to_play: int = 0):
    game = GoGame(5, encoder=2)
    flat = "".join(ROWS)
    black = [i for i, c in enumerate(flat) if c == "X"]
    white = [i for i, c in enumerate(flat) if c == "O"]
    return game, game.setup_state(black=black, white=white, to_play=to_play)


def plane(points: list[str]) -> np.ndarray:
    """A 5x5 plane with ones at the GTP vertices ``points``."""
    out = np.zeros((5, 5), dtype=np.float32)
    for vertex in points:
        col = "ABCDE".index(vertex[0])
        out[5 - int(vertex[1:]), col] = 1.0
    return out


def test_liberty_planes_of_a_hand_made_position() -> None:
    for to_play, mover, opponent in ((0, "X", "O"), (1, "O", "X")):
        game, state = position(to_play)
        obs = game.encode(state)
        assert obs.shape == (23, 5, 5)
        version_1 = GoGame(5).encode(state)
        np.testing.assert_array_equal(obs[:17], version_1)  # version 1's planes come first, unchanged
        for index, stones in enumerate(BY_LIBERTIES[mover] + BY_LIBERTIES[opponent]):
            np.testing.assert_array_equal(obs[17 + index], plane(stones), err_msg=f"plane {17 + index}")


def test_liberty_planes_turn_with_the_board() -> None:
    game = GoGame(9, encoder=2)
    table = game.symmetries()
    rng = np.random.default_rng(3)
    moves = []
    state = game.initial_state()
    for _ in range(40):
        legal = np.flatnonzero(state.legal_mask()[:-1])
        moves.append(int(rng.choice(legal)))
        state = state.play(moves[-1])
    for index in range(len(table)):
        turned = game.initial_state()
        for move in moves:
            turned = turned.play(int(table[index, move]))
        np.testing.assert_array_equal(game.encode(turned), dihedral(game.encode(state)[None], index)[0])


def test_games_choose_the_encoder_a_model_names() -> None:
    go = games.get("go9")
    assert go.encoder_version == 1 and go.observation_shape == (17, 9, 9)
    v2 = go.with_encoder(2)
    assert v2.encoder_version == 2 and v2.observation_shape == (23, 9, 9) and v2.komi == go.komi
    assert go.with_encoder(1) is go and v2.with_komi(6.5).encoder_version == 2
    v3 = go.with_encoder(3)
    assert v3.encoder_version == 3 and v3.observation_shape == (24, 9, 9)
    with pytest.raises(ValueError, match="versions"):
        go.with_encoder(4)
    with pytest.raises(ValueError, match="encodes chess with version 1 only"):
        games.get("chess").with_encoder(2)
    with pytest.raises(ValueError, match="encoder version"):
        games.get("go9", encoder=7)


@pytest.fixture(scope="module")
def v2_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    game = games.get("go9", encoder=2)
    model = build_net(game, NetConfig(blocks=1, channels=8)).eval()
    folder = tmp_path_factory.mktemp("v2")
    export_onnx(model, game, folder / "go9.onnx")
    save_checkpoint(folder / "checkpoint.pt", model, game, NetConfig(blocks=1, channels=8))
    return folder / "go9.onnx"


def test_a_version_2_model_plays_beside_version_1_ones(v2_model: Path, untrained_model) -> None:
    evaluator = OnnxEvaluator(v2_model, games.get("go9"))  # given a version-1 game, it adapts
    assert evaluator.game.encoder_version == 2 and evaluator.info.encoder_version == 2
    player = Player(evaluator, seed=0)
    assert player.decide().move
    assert OnnxEvaluator(untrained_model("go9")).game.encoder_version == 1
    loaded = load_checkpoint(v2_model.parent / "checkpoint.pt")
    assert loaded.game.encoder_version == 2 and loaded.model.stem.in_channels == 23
    for model in (v2_model, untrained_model("go9")):  # both play over GTP
        gtp = GtpProcess([sys.executable, "-m", "klent", "gtp", "--model", str(model), "--simulations", "8"])
        try:
            gtp.send("boardsize 9")
            gtp.send("play b E5")
            assert gtp.send("genmove w").lower() not in ("", "e5")
        finally:
            gtp.close()


def test_a_model_of_an_encoder_this_klent_cannot_produce_is_refused(v2_model: Path) -> None:
    import onnx

    proto = onnx.load(v2_model)
    for prop in proto.metadata_props:
        if prop.key == "klent.encoder":
            prop.value = "9"
    path = v2_model.parent / "v9.onnx"
    onnx.save(proto, path)
    with pytest.raises(ModelMismatchError, match="encoder version 9"):
        OnnxEvaluator(path)
