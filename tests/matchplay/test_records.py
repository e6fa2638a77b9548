"""klent.matchplay.records: a match folder's games.jsonl and summary.json read back within bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from klent.matchplay import records
from klent.matchplay.config import MatchConfig
from klent.matchplay.records import MatchFolderError, read_results, recorded_config
from klent.matchplay.results import GameResult


def test_games_too_large_or_nested_too_deeply_are_a_one_line_error_naming_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = MatchConfig(engines=("a", "b"), out=tmp_path)
    records.start_games(config)
    records.append_game(config, GameResult(game=1, first=0, winner=0, reason="resignation", result="W+R", moves=9,
                                           record="game-001.sgf"))
    assert [r.game for r in read_results(tmp_path)] == [1]
    path = tmp_path / records.GAMES
    monkeypatch.setattr(records, "MAX_GAMES_BYTES", 100)
    with pytest.raises(MatchFolderError, match=f"^{path}: larger than 100 bytes$"):
        read_results(tmp_path)
    monkeypatch.undo()
    with path.open("a") as log:
        log.write("[" * 100_000 + "\n")  # a RecursionError in json's parser
    with pytest.raises(MatchFolderError, match=f"^{path} line 2 is not a game result: nested too deeply$"):
        read_results(tmp_path)


def test_a_summary_too_large_or_nested_too_deeply_is_a_one_line_error_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = MatchConfig(engines=("a", "b"), out=tmp_path)
    records.write_summary(config, ["A", "B"], [])
    assert recorded_config(tmp_path) == records.config_json(config)
    path = tmp_path / records.SUMMARY
    monkeypatch.setattr(records, "MAX_SUMMARY_BYTES", 100)
    with pytest.raises(MatchFolderError, match=f"^{path}: larger than 100 bytes$"):
        recorded_config(tmp_path)
    monkeypatch.undo()
    path.write_text('{"config": ' + '{"a": ' * 100_000)
    with pytest.raises(MatchFolderError, match=f"^{path}: not JSON .nested too deeply.$"):
        recorded_config(tmp_path)
    path.write_text('{"config": [1]}')
    with pytest.raises(MatchFolderError, match=f"^{path} is not a match summary"):
        recorded_config(tmp_path)
