"""`klent plot --strength`: Elo against the opponent by simulations per move, from match folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from klent.cli import main as klent_main
from klent.matchplay.config import MatchConfig
from klent.matchplay.records import append_game, start_games, write_summary
from klent.matchplay.results import GameResult
from klent.matchplay.stats import MatchSummary
from klent.matchplay.strength import simulations, strength_points

LEVEL10 = "gnugo --mode gtp --level 10"


def match_folder(root: Path, name: str, engine1: str, wins: int, losses: int, options: dict | None = None,
                 opponent: str = LEVEL10, openings: tuple[str, ...] = (), digests: list[str] | None = None) -> Path:
    """A match folder as `klent match` leaves it, written by the match code: engine 1's ``wins``
    then its ``losses``, each game distinct unless ``digests`` says otherwise."""
    out = root / name
    out.mkdir()
    config = MatchConfig(engines=(engine1, opponent), game="chess" if options else "go9", games=wins + losses,
                         out=out, uci_options=(options or {}, {}), openings=openings)
    digests = digests or [f"{name}-{game}" for game in range(wins + losses)]
    results = [GameResult(game=k + 1, first=k % 2, winner=0 if k < wins else 1, reason="resignation", result="",
                          moves=9, record="", digest=digest) for k, digest in enumerate(digests)]
    start_games(config)
    for result in results:
        append_game(config, result)
    write_summary(config, ["klent", "GNU Go"], results)
    return out


def test_points_come_from_engine_ones_simulations_and_the_folder_names_the_player(tmp_path: Path) -> None:
    td = match_folder(tmp_path, "td-td-1000-level10", "klent gtp --mode td --simulations 1000", 30, 70)
    uci = match_folder(tmp_path, "chess-64-skill0", "klent uci", 10, 90, {"Simulations": "64"})
    reactive = match_folder(tmp_path, "go9-reactive-level10", "klent gtp --mode reactive", 50, 50)
    [point] = strength_points([td])[0]
    assert (point.player, point.simulations, point.games, point.distinct, point.folders) == \
        ("td-td-level10", 1000, 100, 100, 1)
    assert point.elo == pytest.approx(-147.2, abs=0.1) and point.elo_low < point.elo < point.elo_high  # 400 log10(3/7)
    [chess], left_out = strength_points([uci, reactive])
    assert (chess.player, chess.simulations) == ("chess-skill0", 64) and left_out == [reactive]
    assert simulations(reactive) is None


def test_the_parts_of_one_match_pool_into_one_point(tmp_path: Path) -> None:
    """A row played in two runs from different openings is one point with both runs' games; a
    game both runs played alike counts once among the distinct; another opponent is another point."""
    engine = "klent gtp --mode td --simulations 10000 --threads 1"
    first = match_folder(tmp_path, "td-s2r-td-10000-level10", engine, 4, 16, openings=("E5 D4",),
                         digests=[f"a{g}" for g in range(19)] + ["same"])
    second = match_folder(tmp_path, "td-s2-td-10000-level10", engine, 30, 50, openings=("C3 G7", "D5 F3"),
                          digests=[f"b{g}" for g in range(79)] + ["same"])
    level0 = match_folder(tmp_path, "td-s3-td-10000-level0", engine, 60, 40, opponent="gnugo --mode gtp --level 0")
    points, _ = strength_points([first, second, level0])
    assert [(p.player, p.games, p.distinct, p.folders) for p in points] == [
        ("td-s2r-td-level10", 100, 99, 2), ("td-s3-td-level0", 100, 100, 1)]
    pooled = MatchSummary.from_counts(wins=34, losses=66, draws=0)
    assert (points[0].elo, points[0].elo_low, points[0].elo_high) == (pooled.elo, pooled.elo_low, pooled.elo_high)


def test_the_figure_and_table_and_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folders = [match_folder(tmp_path, f"gumbel-{n}-level10", f"klent gtp --simulations {n}", w, 100 - w)
               for n, w in ((64, 40), (200, 55), (1000, 60))]
    folders.append(match_folder(tmp_path, "gumbel-reactive-level10", "klent gtp --mode reactive", 30, 70))
    png = tmp_path / "elo.png"
    assert klent_main(["plot", "--strength", *map(str, folders), "-o", str(png)]) == 0
    out = capsys.readouterr().out
    assert png.stat().st_size > 10_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = [line for line in out.splitlines() if line.startswith("gumbel-level10:")]
    assert [row.split(" simulations")[0] for row in rows] == ["gumbel-level10: 64", "gumbel-level10: 200",
                                                               "gumbel-level10: 1,000"]
    assert "gumbel-reactive-level10: engine 1 plays without a simulation count, left out" in out
    assert klent_main(["plot", "--strength", str(folders[-1]), "-o", str(png)]) == 2
    assert klent_main(["plot", "--strength", str(tmp_path / "missing"), "-o", str(png)]) == 2
    (folders[0] / "games.jsonl").unlink()
    assert klent_main(["plot", "--strength", str(folders[0]), "-o", str(png)]) == 2
    err = capsys.readouterr().err
    assert err.count("not a klent match folder") == 2 and "Traceback" not in err
    assert "no summary.json" in err and "no readable games.jsonl" in err


def test_a_results_table_gives_the_points_of_matches_whose_folders_are_gone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "rows.csv"
    table.write_text("player,simulations,wins,losses,draws,distinct,source\n"
                     "TD search vs level 10,1000,12,88,0,100,RESULTS.md, TD search\n"
                     "TD search vs level 10,2000,17,83,0,99,RESULTS.md, TD search\n", encoding="utf-8")
    folder = match_folder(tmp_path, "td-s2-td-10000-level10", "klent gtp --mode td --simulations 10000", 35, 65)
    png = tmp_path / "elo.png"
    assert klent_main(["plot", "--strength", str(table), str(folder), "-o", str(png)]) == 0
    lines = capsys.readouterr().out.splitlines()
    first = MatchSummary.from_counts(wins=12, losses=88, draws=0)
    assert lines[:3] == [
        f"TD search vs level 10: 1,000 simulations, 100 games (100 distinct, from a table), Elo {first.elo:+.0f} "
        f"({first.elo_low:+.0f} to {first.elo_high:+.0f})",
        "TD search vs level 10: 2,000 simulations, 100 games (99 distinct, from a table), Elo -275 (-365 to -186)",
        "td-s2-td-level10: 10,000 simulations, 100 games (100 distinct), Elo -108 (-178 to -37)"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table.write_text("player,simulations,wins\nTD,1000,3\n", encoding="utf-8")
    assert klent_main(["plot", "--strength", str(table), "-o", str(png)]) == 2
    for row in ("TD,1000,3,x,0,3", "TD,1000,3"):  # a number that is not one, a short row
        table.write_text(f"player,simulations,wins,losses,draws,distinct\n{row}\n", encoding="utf-8")
        assert klent_main(["plot", "--strength", str(table), "-o", str(png)]) == 2
    assert klent_main(["plot", "--strength", str(tmp_path / "gone.csv"), "-o", str(png)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("rows.csv: a results table needs the columns losses, draws, distinct")
    assert "rows.csv:2: invalid literal for int()" in err[1] and "rows.csv:2: int() argument must be" in err[2]
    assert "gone.csv: No such file or directory" in err[3]


def test_a_results_table_too_large_or_with_a_field_past_csvs_limit_is_one_line_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A field longer than csv's 131,072 characters was a csv.Error traceback."""
    from klent.matchplay import strength

    table = tmp_path / "rows.csv"
    table.write_text("player,simulations,wins,losses,draws,distinct\nTD,1000,12,88,0,100\n", encoding="utf-8")
    assert [p.simulations for p in strength.table_points(table)] == [1000]
    monkeypatch.setattr(strength, "MAX_TABLE_BYTES", 50)
    with pytest.raises(ValueError, match=f"^{table}: larger than 50 bytes$"):
        strength.table_points(table)
    monkeypatch.undo()
    table.write_text("player,simulations,wins,losses,draws,distinct\n\"" + "x" * 200_000 + "\",1,1,1,1,1\n")
    with pytest.raises(ValueError, match=f"^{table}: not a CSV table .field larger than field limit"):
        strength.table_points(table)
