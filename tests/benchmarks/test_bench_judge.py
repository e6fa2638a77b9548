"""`klent bench judge`: the Go games engine 1 lost, judged by Pachi (its resignations; where it lost)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from klent.bench.judge import main, where_lost
from klent.engine.games.go import GoGame
from klent.engine.games.sgf import write_sgf
from klent.matchplay.results import GameResult


def record(folder: Path, number: int, vertices: list[str], first: int, winner: int, reason: str,
           black_stones: tuple[int, ...] = ()) -> GameResult:
    """Game ``number`` of a match folder: its SGF from ``vertices`` (after ``black_stones`` set up,
    White to play, if any) and its result line."""
    game = GoGame(9)
    state = game.setup_state(black_stones, to_play=1) if black_stones else game.initial_state()
    for vertex in vertices:
        state = state.play(game.parse_vertex(vertex))
    name = f"game-{number:03d}.sgf"
    (folder / name).write_text(write_sgf(state, result="W+R" if winner == first else "B+R"))
    return GameResult(game=number, first=first, winner=winner, reason=reason, result="", moves=len(vertices),
                      record=name)


def hopeless() -> list[str]:
    """Black passes while White builds walls on columns C and G: Black, to move, is lost."""
    moves = []
    for column in "CG":
        for row in range(1, 10):
            moves += ["pass", f"{column}{row}"]
    return moves


@pytest.fixture()
def match_folder(tmp_path: Path) -> Path:
    results = [
        record(tmp_path, 1, hopeless(), first=0, winner=1, reason="resignation"),  # judged: lost
        record(tmp_path, 2, ["E5", "D4"], first=0, winner=1, reason="resignation"),  # judged: even
        record(tmp_path, 3, ["E5", "D4", "C3"], first=1, winner=0, reason="resignation"),  # engine 1 won
        record(tmp_path, 4, ["E5", "D4"], first=0, winner=1, reason="two passes, referee score"),
    ]
    (tmp_path / "games.jsonl").write_text("".join(json.dumps(asdict(result)) + "\n" for result in results))
    return tmp_path


def test_the_judge_resigns_a_lost_position_and_plays_on_in_an_even_one(
    pachi_path: str, match_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(match_folder), "--judge", f"{pachi_path} -t =2000 threads=1,pondering=0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    games = {int(line.split()[1]): line.split()[2:] for line in lines[1:-1]}
    assert sorted(games) == [1, 2]  # engine 1's resignations only
    assert games[1] == ["b", "36", "resign"]
    colour, moves, move, rate = games[2]
    assert (colour, moves) == ("b", "2") and move.lower() != "resign"
    assert 0.2 < float(rate) < 0.8
    assert lines[-1] == "2 resignations of engine 1; the judge resigned too in 1, played on in 1 " \
                        f"(win rates {float(rate):.2f} to {float(rate):.2f})"


@pytest.mark.parametrize(("vertices", "black_stones", "error"), [
    (["E5"], (), "the record leaves the other side to move"),  # White to move, Black (engine 1) resigned
    (["E5", "D4"], (20, 60), "only games from the empty board are judged"),  # two handicap stones
])
def test_a_record_the_judge_cannot_be_set_up_from_is_a_one_line_error(
    pachi_path: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], vertices: list[str],
    black_stones: tuple[int, ...], error: str
) -> None:
    result = record(tmp_path, 1, vertices, first=0, winner=1, reason="resignation", black_stones=black_stones)
    (tmp_path / "games.jsonl").write_text(json.dumps(asdict(result)) + "\n")
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--judge", f"{pachi_path} -t =500 threads=1,pondering=0"])
    assert error in capsys.readouterr().err


def test_a_folder_that_is_no_match_or_a_judge_that_does_not_start_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--judge", "gnugo --mode gtp"])
    assert "not a klent match folder" in capsys.readouterr().err
    result = record(tmp_path, 1, ["E5", "D4"], first=0, winner=1, reason="resignation")
    (tmp_path / "games.jsonl").write_text(json.dumps(asdict(result)) + "\n")
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--judge", "no-such-judge -t 1"])
    assert "cannot start 'no-such-judge -t 1'" in capsys.readouterr().err


def test_the_trace_finds_where_a_lost_game_was_lost(
    pachi_path: str, match_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every lost game is traced, the resigned and the counted; in the hopeless one Black's win
    rate falls as White's walls grow and stays low to the end."""
    judge = f"{pachi_path} -t =1000 threads=1,pondering=0,resign_threshold=0"
    assert main([str(match_folder), "--trace", "--judge", judge]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {int(line.split()[1]): line.split()[2:] for line in lines[1:4]}
    assert sorted(rows) == [1, 2, 4]  # engine 1 lost these three (game 3 it won)
    colour, moves, first, lost_from, drop, at = rows[1]
    assert (colour, moves) == ("b", "36") and float(first) > 0.3
    assert 5 <= int(lost_from) <= 37 and float(drop) > 0 and 5 <= int(at) <= 35
    assert rows[2] == rows[4] == ["b", "2", "-", "-"]  # no move of Black's after the 4 plies of the opening
    assert lines[4].startswith("3 lost games of engine 1; the judge's win rate stayed below 0.3 from move")
    assert [line.split()[1] for line in lines[-4:]] == ["1-20", "21-40", "41-60", "61"]


def test_where_lost_is_the_move_after_the_last_reading_above_the_line() -> None:
    assert where_lost([(5, 0.5), (7, 0.2), (9, 0.4), (11, 0.1), (13, 0.05)], 0.3) == 11
    assert where_lost([(5, 0.5), (7, 0.2), (9, 0.4)], 0.3) is None
    assert where_lost([(5, 0.1), (7, 0.2)], 0.3) == 5


def test_tracing_with_a_judge_that_resigns_is_a_one_line_error(
    pachi_path: str, match_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([str(match_folder), "--trace", "--judge", f"{pachi_path} -t =1000 threads=1,pondering=0"])
    assert "tracing needs one that reports them and never resigns" in capsys.readouterr().err
