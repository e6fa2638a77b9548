"""`klent bench ladder`: maximum-likelihood ratings from matches against rated anchors and
between unrated players (`klent.matchplay.stats.fit_pool`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from klent.bench.ladder import main
from klent.matchplay.results import GameResult


def write_match(folder: Path, winners: list[int | None], engines: tuple[str, str] | None = None) -> Path:
    """A match folder whose game k was won by engine ``winners[k-1]`` (0 is engine 1), with a
    summary recording the ``engines`` command lines where given."""
    folder.mkdir()
    if engines is not None:
        config = {"engines": list(engines), "time_per_move": 10.0, "uci_options": [{}, {}], "uci_go": ["", ""]}
        (folder / "summary.json").write_text(json.dumps({"config": config}))
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
    assert "| elo1350 | 6 (3) | 0.750 |" in out and "| elo1700 | 6 (3) | 0.250 |" in out
    assert "engine 1: rating 1525 (95 % " in out and "from 12 games" in out


def test_unrated_opponents_join_the_ladder_through_their_games(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    klent, gnugo, pachi = "/v/bin/klent gtp --time 1", "/usr/games/gnugo --level 10", "/v/bin/pachi -t =1000"
    # klent plays GNU Go out and resigns against Pachi: the same player, as `benchmarks/strength/go.sh` runs them
    anchor = write_match(tmp_path / "klent-gnugo", [0, 0, 0, 1] * 5,
                         (f"{klent} --resign-threshold 0", gnugo))  # 0.75
    unrated = write_match(tmp_path / "klent-pachi", [0, 1, 1, 1] * 5,
                          (f"{klent} --resign-threshold=0.05", pachi))  # 0.25
    assert main([f"{anchor}=0", str(unrated)]) == 0
    out = capsys.readouterr().out
    assert "klent gtp --time 1 (10 s a move): rating 191 (95 % " in out
    assert "pachi -t =1000 (10 s a move): rating 382 (95 % " in out
    assert "gnugo --level 10 (10 s a move): anchor 0" in out


def test_one_player_rated_twice_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    engines = ("klent uci", "stockfish")
    first, second = write_match(tmp_path / "a", [0, 1], engines), write_match(tmp_path / "b", [0, 1], engines)
    with pytest.raises(SystemExit) as exit_info:
        main([f"{first}=1350", f"{second}=1500"])
    assert exit_info.value.code == 2
    assert "stockfish (10 s a move) is rated both 1350 and 1500" in capsys.readouterr().err


def test_a_malformed_rung_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["folder=strong"])
    assert exit_info.value.code == 2
    assert "a rung is FOLDER or FOLDER=RATING" in capsys.readouterr().err


def test_a_folder_without_games_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([f"{tmp_path}=1500"])
    assert exit_info.value.code == 2
    assert "no readable games.jsonl" in capsys.readouterr().err
