"""`klent bench chess_regret`: the value a chess model's moves give away, by play setting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import klent.engine.games
from klent.bench.chess_regret import blunder_rows, held_out_positions, parse_setting, regret_rows
from klent.engine.player import Player
from klent.training import teacher


def test_settings_are_read_as_play_options() -> None:
    assert parse_setting("reactive").mode == "reactive"
    searched = parse_setting("gumbel:64")
    assert (searched.mode, searched.simulations, searched.rescale_floor, searched.wave_size) == ("search", 64, None,
                                                                                                 None)
    assert parse_setting("gumbel:256:2").rescale_floor == 2.0
    tuned = parse_setting("gumbel:256:2:4")
    assert (tuned.rescale_floor, tuned.wave_size) == (2.0, 4)
    for bad in ("gumbel", "gumbel:x", "gumbel:64:2:0", "gumbel:64:2:1.5", "gumbel:64:2:4:1", "search:64",
                "gumbel:64:0"):
        with pytest.raises(ValueError):
            parse_setting(bad)


def test_held_out_positions_are_the_validation_games_with_every_labelled_move_and_training_ones_apart(
    tmp_path: Path, stockfish_path: str, untrained_model
) -> None:
    folder = tmp_path / "labels"
    config = teacher.LabelConfig(teacher=stockfish_path, positions=120, depth=2, max_plies=30,
                                 games_per_shard=2, validation_every=2, opening_plies=4)
    teacher.label(config, folder, jobs=1)
    manifest = teacher.Manifest.read(folder)
    assert manifest is not None and manifest.validation_positions > 0
    positions = held_out_positions(folder, count=10**6)  # more than there are: all of them
    # all but the positions with a single legal move, which have nothing to choose between
    assert 0 < len(positions) <= manifest.validation_positions
    for state, values in positions:
        assert len(values) > 1 and all(state.legal_mask()[action] for action in values)
        assert all(-1.0 <= v <= 1.0 for v in values.values())
    trained_on = held_out_positions(folder, count=10**6, training=True)
    assert 0 < len(trained_on) <= manifest.train_positions
    # positions are stored once in a set, so the two splits share none
    assert not {state.fen() for state, _ in positions} & {state.fen() for state, _ in trained_on}
    player = Player.load(klent.engine.games.get("chess"), untrained_model("chess"), threads=1)
    rows = list(regret_rows(player, positions, ["reactive", "gumbel:4", "reactive"]))
    regrets = [float(row.split("regret ")[1].split(",")[0]) for row in rows]
    assert all(0.0 <= regret <= 2.0 for regret in regrets) and f"({len(positions)} positions)" in rows[0]
    assert "paired" not in rows[0]
    # each later row: its regret minus the first's, position by position; the mean of the
    # differences is the difference of the means, and a setting against itself differs by 0
    paired = float(rows[1].split("paired: ")[1].split(" ")[0])
    assert abs(paired - (regrets[1] - regrets[0])) <= 2e-4
    assert rows[2].endswith("minus reactive's, paired: +0.0000 (standard error 0.0000)")


def test_a_hung_queen_is_a_blunder_and_nothing_else_is(tmp_path: Path, stockfish_path: str, untrained_model) -> None:
    """1. e4 d5 2. Qg4?? gives the queen to Bxg4: engine 1 (White) blundered once; the same
    move as part of an opening is no one's blunder."""
    folder = tmp_path / "match"
    folder.mkdir()
    (folder / "game-001.pgn").write_text('[Result "*"]\n\n1. e4 d5 2. Qg4 Bxg4 *\n')
    start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
    # game 1 from no opening; game 2 from an opening whose own blunder (2. Qg4??) is not engine 1's
    (folder / "game-002.pgn").write_text('[Result "*"]\n\n1. e4 d5 2. Qg4 Bxg4 3. d3 *\n')
    (folder / "summary.json").write_text(json.dumps({"config": {"openings": [f"{start} moves e2e4 d7d5 d1g4"]}}))
    unfinished = {"winner": None, "reason": "", "result": "*", "moves": 0}
    games = [{"game": 1, "first": 0, "record": "game-001.pgn", "opening": None, **unfinished},
             {"game": 2, "first": 0, "record": "game-002.pgn", "opening": 0, **unfinished}]
    (folder / "games.jsonl").write_text("".join(json.dumps(game) + "\n" for game in games))
    player = Player.load(klent.engine.games.get("chess"), untrained_model("chess"), threads=1)
    rows = list(blunder_rows(player, folder, games=10, depth=6, blunder=0.3, settings=["reactive"]))
    assert rows[0].startswith("1 blunders") and "in 2 games" in rows[0]
    assert rows[1].strip().startswith("reactive: blunders again in") and "of 1," in rows[1]
