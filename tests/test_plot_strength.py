"""`klent plot --strength`: Elo against the opponent by simulations per move, from match folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from klent.cli import main as klent_main
from klent.commands.plot import strength_point
from matchplay.match import MatchConfig, _write_summary
from matchplay.stats import MatchSummary


def match_folder(root: Path, name: str, engine1: str, wins: int, losses: int, options: dict | None = None) -> Path:
    """A match folder as `klent match` leaves it (its summary.json written by the match code)."""
    out = root / name
    out.mkdir()
    config = MatchConfig(engines=(engine1, "gnugo --mode gtp --level 10"), game="chess" if options else "go9",
                         out=out, uci_options=(options or {}, {}))
    _write_summary(config, ["klent", "GNU Go"], [], MatchSummary.from_counts(wins=wins, losses=losses, draws=0))
    return out


def test_points_come_from_engine_ones_simulations_and_the_folder_names_the_player(tmp_path: Path) -> None:
    td = match_folder(tmp_path, "td-td-1000-level10", "klent gtp --mode td --simulations 1000", 30, 70)
    uci = match_folder(tmp_path, "chess-64-skill0", "klent uci", 10, 90, {"Simulations": "64"})
    reactive = match_folder(tmp_path, "go9-reactive-level10", "klent gtp --mode reactive", 50, 50)
    point = strength_point(td)
    assert point is not None and (point.player, point.simulations, point.games) == ("td-td-level10", 1000, 100)
    assert point.elo == pytest.approx(-147.2, abs=0.1) and point.elo_low < point.elo < point.elo_high  # 400 log10(3/7)
    chess = strength_point(uci)
    assert chess is not None and (chess.player, chess.simulations) == ("chess-skill0", 64)
    assert strength_point(reactive) is None


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
    err = capsys.readouterr().err
    assert "not a klent match folder" in err and "Traceback" not in err
