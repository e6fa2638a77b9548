"""`klent bench ladder`: one maximum-likelihood rating from matches against rated anchors
(`klent.matchplay.stats.fit_rating`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from klent.bench.ladder import main
from klent.matchplay.results import GameResult


def write_match(folder: Path, winners: list[int | None]) -> Path:
    """A match folder whose game k was won by engine ``winners[k-1]`` (0 is the rated player)."""
    folder.mkdir()
    lines = [json.dumps(dataclasses.asdict(GameResult(
        game=k, first=(k - 1) % 2, winner=w, reason="checkmate" if w is not None else "stalemate",
        result="1/2-1/2" if w is None else ("1-0" if w == (k - 1) % 2 else "0-1"), moves=80,
        record=f"game-{k:03d}.pgn", digest=f"{k % 3:016x}", opening=(k - 1) // 2)))
        for k, w in enumerate(winners, start=1)]
    (folder / "games.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_the_command_reads_match_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    low = write_match(tmp_path / "elo1350", [0, 0, 0, 1, None, 0])
    high = write_match(tmp_path / "elo1700", [1, 1, 0, 1, 1, None])
    assert main([f"{low}=1350", f"{high}=1700"]) == 0
    out = capsys.readouterr().out
    assert "| elo1350 | 1350 | 6 (3) | 0.750 |" in out and "| elo1700 | 1700 | 6 (3) | 0.250 |" in out
    assert "from 12 games" in out


@pytest.mark.parametrize("argument", ["no-rating-here", "folder=strong"])
def test_a_malformed_rung_is_a_one_line_error(argument: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([argument])
    assert exit_info.value.code == 2
    assert "a rung is FOLDER=RATING" in capsys.readouterr().err


def test_a_folder_without_games_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([f"{tmp_path}=1500"])
    assert exit_info.value.code == 2
    assert "no readable games.jsonl" in capsys.readouterr().err
