"""Shared test helpers: locating the real engines the tests play against."""

from __future__ import annotations

import os

import pytest

from klent.matchplay.engine_process import find_program


def find_engine(name: str, install: str = "run `make system-deps` (scripts/install-debian-deps.sh)") -> str:
    """Path of an engine binary, found where klent looks (the virtualenv, PATH, /usr/games).

    A missing engine fails the test instead of skipping it: `make test` installs them, so a
    missing one means the set-up is broken and CI must say so.
    """
    path = find_program(name)
    if path is None:
        pytest.fail(f"{name} not found in the virtualenv, on PATH or in /usr/games; {install}")
    return path


@pytest.fixture(scope="session")
def gnugo_path() -> str:
    return find_engine("gnugo")


@pytest.fixture(scope="session")
def stockfish_path() -> str:
    return find_engine("stockfish")


@pytest.fixture(scope="session")
def fairy_path() -> str:
    return find_engine("fairy-stockfish")


@pytest.fixture(scope="session")
def pachi_path() -> str:
    """Pachi, built from source into the virtualenv's bin/ by `make test`'s set-up."""
    return find_engine("pachi", "run `bash scripts/install-pachi.sh` (make test does)")


@pytest.fixture(scope="session")
def syzygy_dir() -> str:
    """The 3- and 4-piece Syzygy tables `make setup` unpacks (scripts/syzygy-tables.sh); missing
    tables fail the test rather than skip it."""
    from klent.engine.tablebase import DEFAULT_SYZYGY_DIR

    if len(list(DEFAULT_SYZYGY_DIR.glob("*.rtbw"))) < 35:
        pytest.fail(f"no Syzygy tables in {DEFAULT_SYZYGY_DIR}; run `make setup` (scripts/syzygy-tables.sh)")
    return str(DEFAULT_SYZYGY_DIR)


@pytest.fixture(scope="session")
def artifacts_dir() -> str:
    """Folder for files a test keeps for people to look at (screenshots, game records)."""
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "test-artifacts")
    os.makedirs(path, exist_ok=True)
    return path


@pytest.fixture
def devices_asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The devices networks are loaded for from now on (`klent.engine.network.device_providers`, where
    every player's, protocol's and server's ``device`` ends)."""
    import klent.engine.network as network

    asked: list[str] = []
    real = network.device_providers

    def recording(device: str) -> list[str]:
        asked.append(device)
        return real(device)

    monkeypatch.setattr(network, "device_providers", recording)
    return asked


@pytest.fixture(scope="session")
def untrained_model(tmp_path_factory: pytest.TempPathFactory):
    """Factory: path of an ONNX model of an untrained small network for a game id.

    ``untrained_model("go9")`` exports a 2-block x 16-channel random network once per session
    (seeded, so every run sees the same network); ``blocks``/``channels`` pick another size.
    """
    import torch

    import klent.engine.games as games
    from klent.training.export import export_onnx
    from klent.training.nets import NetConfig, build_net

    cache: dict[tuple[str, int, int], str] = {}
    folder = tmp_path_factory.mktemp("models")

    def make(game_name: str, blocks: int = 2, channels: int = 16) -> str:
        key = (game_name, blocks, channels)
        if key not in cache:
            torch.manual_seed(0)
            game = games.get(game_name)
            model = build_net(game, NetConfig(blocks=blocks, channels=channels)).eval()
            path = folder / f"{game_name}-{blocks}x{channels}.onnx"
            export_onnx(model, game, path, training_info={"algorithm": "untrained"})
            cache[key] = str(path)
        return cache[key]

    return make


@pytest.fixture(scope="session")
def ownership_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A 9x9 model whose ownership head says Black owns columns A-E and White F-J, whatever
    the position (reported from the side to move's view, as a trained head's), to exercise
    what the protocols do with ownership: a referee's dead stones, passing, analysis.  Its
    policy, action values and score are an untrained net's."""
    import torch
    from torch import nn

    import klent.engine.games as games
    from klent.training.export import export_onnx
    from klent.training.nets import NetConfig, build_net

    class BlackLeftWhiteRight(nn.Module):
        """Pre-tanh ownership: +6 on Black's side for Black to move, flipped for White."""

        def __init__(self, size: int) -> None:
            super().__init__()
            columns = torch.arange(size).repeat(size, 1)
            self.register_buffer("black", torch.where(columns <= 4, 6.0, -6.0))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            black_to_move = x[:, 0]  # the stem copies the side-to-move plane here
            return self.black * (2.0 * black_to_move - 1.0)

    torch.manual_seed(0)
    game = games.get("go9")
    model = build_net(game, NetConfig(blocks=0, channels=2, ownership_head=True, score_head=True)).eval()
    with torch.no_grad():
        model.stem.weight.zero_()
        model.stem.weight[0, game.observation_shape[0] - 1, 1, 1] = 1.0  # plane 16: Black to move
    model.ownership_head = BlackLeftWhiteRight(game.size)
    path = tmp_path_factory.mktemp("ownership-model") / "go9.onnx"
    export_onnx(model, game, path, training_info={"algorithm": "fixed ownership"})
    return str(path)
