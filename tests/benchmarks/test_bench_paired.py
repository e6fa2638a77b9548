"""`klent bench paired`: two match rows from the same openings, compared game by game."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from benchmarks.paired import compare, main, sign_test
from matchplay.match import GameResult


def write_row(folder: Path, games: list[tuple[int, int | None, str]]) -> Path:
    """A match folder whose game k (from opening (k-1)//2, engine 1 first in the odd ones)
    ended with ``(k, winner, result)``."""
    folder.mkdir()
    lines = [json.dumps(dataclasses.asdict(GameResult(
        game=k, first=(k - 1) % 2, winner=winner, reason="two passes, referee score", result=result, moves=60,
        record=f"game-{k:03d}.sgf", digest=f"{k:016x}", opening=(k - 1) // 2))) for k, winner, result in games]
    (folder / "games.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_pairs_count_wins_discordant_games_and_margins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # engine 1 is Black (first = 0) in odd games: B+ is its win there, W+ in even games
    a = write_row(tmp_path / "a", [(1, 0, "B+5.5"), (2, 0, "W+2.5"), (3, 1, "W+0.5"), (4, 1, "B+30.5"), (5, 0, "B+1")])
    b = write_row(tmp_path / "b", [(1, 0, "B+2.5"), (2, 1, "B+0.5"), (3, 1, "W+9.5"), (4, 0, "W+3.5")])
    paired = compare(a, b)
    assert (paired.games, paired.first_wins, paired.second_wins) == (4, 2, 2)  # game 5 has no pair
    assert (paired.only_first, paired.only_second) == (1, 1)  # game 2 to a, game 4 to b
    # margins for engine 1: a +5.5 +2.5 -0.5 -30.5; b +2.5 -0.5 -9.5 +3.5
    assert (paired.first_better_margin, paired.second_better_margin) == (3, 1)
    assert main([str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "4 games both played: a won 2, b won 2" in out and "better referee margin: 3 games a, 1 games b" in out


def test_rows_from_other_openings_or_nothing_in_common_are_refused(tmp_path: Path) -> None:
    a = write_row(tmp_path / "a", [(1, 0, "B+5.5"), (2, 0, "W+2.5")])
    b = write_row(tmp_path / "b", [(1, 0, "B+2.5")])
    shifted = [json.loads(line) for line in (b / "games.jsonl").read_text().splitlines()]
    shifted[0]["opening"] = 7
    (b / "games.jsonl").write_text(json.dumps(shifted[0]) + "\n")
    with pytest.raises(ValueError, match="another opening or colour"):
        compare(a, b)
    c = write_row(tmp_path / "c", [(9, 0, "B+1")])
    with pytest.raises(SystemExit):
        main([str(a), str(c)])
    with pytest.raises(SystemExit):
        main([str(a), str(tmp_path / "missing")])


def test_sign_test_is_the_exact_binomial() -> None:
    assert sign_test(0, 0) == 1.0 and sign_test(1, 1) == 1.0
    assert sign_test(0, 5) == pytest.approx(2 / 32)
    assert sign_test(10, 0) == pytest.approx(2 / 1024)
    assert sign_test(12, 17) == sign_test(17, 12) == pytest.approx(0.4583, abs=1e-4)
