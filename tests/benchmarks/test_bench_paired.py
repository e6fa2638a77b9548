"""`klent bench paired`: two match rows from the same openings, compared game by game."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from klent.bench.paired import compare, main, rows
from klent.matchplay.results import GameResult


def write_games(folder: Path, games: list[tuple[int, int, int | None, str]]) -> Path:
    """A match folder whose games ``(number, opening, winner, result)`` have engine 1 first
    (Black) in the odd ones."""
    folder.mkdir()
    lines = [json.dumps(dataclasses.asdict(GameResult(
        game=k, first=(k - 1) % 2, winner=winner, reason="two passes, referee score", result=result, moves=60,
        record=f"game-{k:03d}.sgf", digest=f"{k:016x}", opening=opening))) for k, opening, winner, result in games]
    (folder / "games.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def write_row(folder: Path, games: list[tuple[int, int | None, str]]) -> Path:
    """A match folder without summary.json whose game k (from opening (k-1)//2) ended with
    ``(k, winner, result)``."""
    return write_games(folder, [(k, (k - 1) // 2, winner, result) for k, winner, result in games])


def test_pairs_count_wins_discordant_games_and_margins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # engine 1 is Black (first = 0) in odd games: B+ is its win there, W+ in even games
    a = write_row(tmp_path / "a", [(1, 0, "B+5.5"), (2, 0, "W+2.5"), (3, 1, "W+0.5"), (4, 1, "B+30.5"), (5, 0, "B+1")])
    b = write_row(tmp_path / "b", [(1, 0, "B+2.5"), (2, 1, "B+0.5"), (3, 1, "W+9.5"), (4, 0, "W+3.5")])
    paired = compare([a], [b])
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
        compare([a], [b])
    c = write_row(tmp_path / "c", [(9, 0, "B+1")])
    with pytest.raises(SystemExit):
        main([str(a), str(c)])
    with pytest.raises(SystemExit):
        main([str(a), str(tmp_path / "missing")])


def write_part(folder: Path, engine: str, openings: list[str], games: list[tuple[int, int, int | None, str]]) -> Path:
    """A match folder with its summary.json: engine 1 ``engine`` against one opponent from
    ``openings``, its games as `write_games`'."""
    write_games(folder, games)
    config = {"engines": [engine, "gnugo --level 0"], "game": "go9", "games": len(games), "out": str(folder),
              "komi": 7.5, "openings": openings, "first_opening": 0}
    (folder / "summary.json").write_text(json.dumps({"config": config}))
    return folder


def test_rows_in_parts_from_other_opening_files_pair_by_the_openings_moves(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = ["C3 D4", "E5 F6", "G7 C7"]
    # row a: openings 1-2 of the file in one folder, opening 3 from a file of it alone (numbered 0 there)
    a1 = write_part(tmp_path / "a1", "klent --mode td", file, [(1, 0, 0, "B+1.5"), (2, 0, 1, "B+3.5"),
                                                            (3, 1, 0, "B+2.5"), (4, 1, 0, "W+4.5")])
    a2 = write_part(tmp_path / "a2", "klent --mode td", file[2:], [(1, 0, 1, "W+8.5"), (2, 0, 0, "W+0.5")])
    # row b: the whole file in one folder, game numbers 5 and 6 where a2 has 1 and 2
    b = write_part(tmp_path / "b", "klent --mode dyna2", file, [
        (1, 0, 1, "W+1.5"), (2, 0, 1, "B+6.5"), (3, 1, 0, "B+9.5"), (4, 1, 1, "B+1.5"),
        (5, 2, 0, "B+0.5"), (6, 2, 1, "B+2.5")])
    assert rows([a1, b, a2]) == ([a1, a2], [b])
    paired = compare([a1, a2], [b])
    # by start (opening, first), a wins C3/0, E5/0, E5/1, G7/1 and b wins E5/0, G7/0
    assert (paired.games, paired.first_wins, paired.second_wins) == (6, 4, 2)
    assert (paired.only_first, paired.only_second) == (3, 1)
    # margins for engine 1 in that order, a: +1.5 -3.5 +2.5 +4.5 -8.5 +0.5; b: -1.5 -6.5 +9.5 -1.5 +0.5 -2.5
    assert (paired.first_better_margin, paired.second_better_margin) == (4, 2)
    assert main([str(a1), str(b), str(a2)]) == 0
    assert "6 games both played: a1+a2 won 4, b won 2" in capsys.readouterr().out


def test_folders_that_make_no_two_rows_or_repeat_a_start_are_refused(tmp_path: Path) -> None:
    file = ["C3 D4", "E5 F6"]
    a1 = write_part(tmp_path / "a1", "klent --mode td", file, [(1, 0, 0, "B+1.5"), (2, 0, 1, "B+3.5")])
    again = write_part(tmp_path / "again", "klent --mode td", file, [(1, 0, 0, "B+1.5")])
    b = write_part(tmp_path / "b", "klent --mode dyna2", file, [(1, 0, 1, "W+1.5")])
    c = write_part(tmp_path / "c", "klent --mode search", file, [(1, 0, 1, "W+1.5")])
    with pytest.raises(ValueError, match="3 rows"):
        rows([a1, b, c])
    with pytest.raises(ValueError, match="the start of a game in another part"):
        compare([a1, again], [b])
    bare = write_row(tmp_path / "bare", [(1, 0, "B+5.5")])  # no summary.json: pairs by number only
    with pytest.raises(ValueError, match="no summary.json"):
        rows([a1, bare, b])
    with pytest.raises(ValueError, match="pair by opening"):
        compare([a1, bare], [b])
    for argv in ([str(a1)], [str(a1), str(b), str(c)]):
        with pytest.raises(SystemExit):
            main(argv)


def test_a_folder_that_passes_over_its_openings_twice_pairs_the_nth_game_from_each_start(tmp_path: Path) -> None:
    file = ["C3 D4"]
    # games 1-2 and 3-4 are two passes over the one opening; engine 1 is Black in the odd games
    a = write_part(tmp_path / "a", "klent --mode td", file, [(1, 0, 0, "B+1.5"), (2, 0, 0, "W+3.5"),
                                                          (3, 0, 1, "W+2.5"), (4, 0, 1, "B+4.5")])
    b = write_part(tmp_path / "b", "klent --mode dyna2", file, [(1, 0, 1, "W+1.5"), (2, 0, 0, "W+0.5"),
                                                             (3, 0, 1, "W+9.5"), (4, 0, 0, "W+1.5")])
    paired = compare([a], [b])
    # pairs (a, b) by game: 1-1 a only, 2-2 both, 3-3 neither, 4-4 b only
    assert (paired.games, paired.first_wins, paired.second_wins) == (4, 2, 2)
    assert (paired.only_first, paired.only_second) == (1, 1)
