"""`klent bench teacher_cost`: a Go teacher's CPU time per labelled position, by size and level."""

from __future__ import annotations

import pytest

from klent.bench.teacher_cost import main


def test_a_short_game_per_size_and_level_is_timed(gnugo_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sizes", "9", "13", "--levels", "0", "--moves", "12", "--teacher",
                 f"{gnugo_path} --mode gtp --chinese-rules"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert [row[:2] for row in rows] == [["9", "0"], ["13", "0"]]
    for row in rows:
        per_position, first, second, end = map(float, row[2:6])
        assert 0 < per_position < 5 and first >= 0 and second >= 0 and end >= 0
        assert int(row[6].replace(",", "")) == pytest.approx(3600 / per_position, rel=0.1)  # rounded on print


def test_pachis_playouts_are_its_levels(pachi_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Pachi, a teacher without top_moves, is timed on the moves it generates, at the playouts
    that replace {level}; more playouts cost more."""
    assert main(["--sizes", "9", "--levels", "500", "4000", "--moves", "16", "--teacher",
                 f"{pachi_path} -t ={{level}} threads=1,pondering=0,pass_all_alive,resign_threshold=0"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert [row[:2] for row in rows] == [["9", "500"], ["9", "4000"]]
    cheap, dear = (float(row[2]) for row in rows)
    assert 0 < cheap < dear


def test_bad_arguments_are_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--sizes", "21"])
    assert "sizes within 5..19" in capsys.readouterr().err
