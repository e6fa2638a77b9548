"""`klent bench ladder`: one maximum-likelihood rating from matches against rated anchors."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from klent.bench.ladder import CHI2_95_HALF, Rung, expected, fit, log_likelihood, main
from klent.matchplay.match import GameResult
from klent.matchplay.stats import MatchSummary, elo_difference


def rung(anchor: float, wins: int, losses: int, draws: int = 0) -> Rung:
    return Rung(f"elo{anchor:.0f}", anchor, MatchSummary.from_counts(wins, losses, draws), wins + losses + draws)


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


def test_one_rung_gives_the_anchor_plus_the_elo_difference_of_its_score() -> None:
    for wins, losses, draws in [(50, 50, 0), (70, 25, 5), (10, 90, 0)]:
        rating = fit([rung(1500, wins, losses, draws)])
        rate = (wins + draws / 2) / (wins + losses + draws)
        assert rating.elo == pytest.approx(1500 + elo_difference(rate), abs=1e-6)
        assert rating.low < rating.elo < rating.high
        # the bounds are where the log-likelihood has fallen by half chi-square(1)'s 95 % quantile
        games = [rung(1500, wins, losses, draws)]
        peak = log_likelihood(rating.elo, games)
        for bound in (rating.low, rating.high):
            assert log_likelihood(bound, games) == pytest.approx(peak - CHI2_95_HALF, abs=1e-6)


def test_an_even_score_is_rated_at_its_anchor_with_a_symmetric_interval() -> None:
    rating = fit([rung(1700, 50, 50)])
    assert rating.elo == pytest.approx(1700)
    assert 1700 - rating.low == pytest.approx(rating.high - 1700)
    assert 60 < rating.high - 1700 < 80  # 100 games: about +-70 Elo


def test_several_rungs_balance_the_expected_and_the_actual_score() -> None:
    rungs = [rung(1350, 80, 20), rung(1500, 60, 38, 2), rung(1700, 30, 70), rung(2000, 3, 97)]
    rating = fit(rungs)
    played = sum(r.score for r in rungs)
    assert sum(r.summary.games * expected(rating.elo, r.anchor) for r in rungs) == pytest.approx(played, abs=1e-6)
    assert 1500 < rating.elo < 1700
    # more games pin the rating more tightly than the middle rung alone
    alone = fit([rungs[1]])
    assert rating.high - rating.low < alone.high - alone.low


def test_a_clean_sweep_has_one_finite_bound_only() -> None:
    sweep = fit([rung(1500, 100, 0)])
    assert sweep.elo == math.inf and sweep.high == math.inf and 1500 < sweep.low < 2500
    wiped = fit([rung(1500, 0, 100)])
    assert wiped.elo == -math.inf and wiped.low == -math.inf and 500 < wiped.high < 1500


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
