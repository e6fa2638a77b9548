"""klent/bench/td_speed.py: TD search's simulated moves per second beside the bare rules."""

from __future__ import annotations

import re

import numpy as np
import pytest

from klent.bench import td_speed
from klent.engine.games import go_kernels as gk
from klent.engine.games.go import GoGame
from klent.engine.search import td_kernels as tk


def test_both_rules_playouts_play_games_of_the_same_length() -> None:
    # The default policy's lazy draw (td_kernels.random_move) and the draw from the full legal
    # mask are the same distribution over moves, so random games from the empty board have the
    # same mean length (about 110 moves on 9x9 without eye filling, spread about 15).
    game = GoGame(9)
    board = np.zeros(81, dtype=np.int8)
    diag = gk.diagonal_table(9)
    games = 400
    lengths = [
        td_speed.random_playouts(board, 1, game.max_moves, game._nbr, game._zob, diag, games, tk.seed_state(3), lazy)
        / games
        for lazy in (False, True)
    ]
    assert lengths[0] > 60
    assert lengths[1] == pytest.approx(lengths[0], rel=0.04)


def test_the_benchmark_prints_every_rate_and_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    assert td_speed.main(["--seconds", "0.05", "--rounds", "1", "--size", "7"]) == 0
    out = capsys.readouterr().out
    for label in ("rules, legal mask", "rules, default policy", "td search"):
        assert re.search(rf"^{label} +[1-9]\d* moves/s", out, re.MULTILINE), out
    ratios = [float(r) for r in re.findall(r"^ratio .*? ([\d.]+)x", out, re.MULTILINE)]
    assert len(ratios) == 2 and all(r > 0 for r in ratios)
