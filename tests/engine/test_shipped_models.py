"""The models klent ships in weights/: each is the default model of its game, has its card and
its training folder beside it, and plays a legal move reactively and with search.  One Go
network may serve several sizes under each size's name (go13.onnx and go19.onnx)."""

from __future__ import annotations

from pathlib import Path

import pytest

import klent.engine.games as games
from klent.engine.player import DEFAULT_WEIGHTS_DIR, Player, PlayOptions, read_model_info

SHIPPED = sorted(path for path in Path(DEFAULT_WEIGHTS_DIR).glob("*.onnx") if ".int8" not in path.name)


def test_the_shipped_models_are_those_the_readme_names() -> None:
    assert {path.stem for path in SHIPPED} == {"go9", "go13", "go19", "chess", "animal_shogi", "gardner"}


@pytest.mark.parametrize("model", SHIPPED, ids=lambda path: path.stem)
def test_a_shipped_model_has_its_card_and_run_and_plays_its_game(model: Path) -> None:
    info = read_model_info(model)
    assert info.serves(model.stem)  # weights/<game>.onnx is the default model of <game>
    card = model.with_suffix(".md").read_text(encoding="utf-8")
    assert card.startswith(f"# weights/{model.name}")
    run = model.parent / "training" / info.game  # a network serving several sizes: its one run
    assert all((run / name).is_file() for name in ("checkpoint.pt", "config.toml", "metrics.jsonl"))
    game = games.get(model.stem)
    player = Player.load(game, threads=1, seed=0)  # found by its game alone
    for options in (PlayOptions(mode="reactive"), PlayOptions(mode="search", simulations=16)):
        decision = player.decide(options)
        assert player.state.legal_mask()[decision.action]
