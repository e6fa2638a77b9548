"""`klent bench rules` (klent/bench/rules.py): the rules layer's cost per position, timed by
the thread's CPU clock over positions of random playouts played beforehand."""

from __future__ import annotations

import pytest

from klent.bench import rules


def test_each_game_has_a_target_and_its_three_parts_add_up() -> None:
    for name in ("go9", "chess", "othello", "hex11", "gardner", "animal_shogi"):
        result = rules.measure(name, 300)
        assert set(result) == {"legal_mask", "encode", "play", "total"}
        assert all(result[part] >= 0.0 for part in ("legal_mask", "encode", "play"))
        assert result["total"] == pytest.approx(result["legal_mask"] + result["encode"] + result["play"])
        assert result["play"] > 0.0  # every game's play builds a new state: never free
        assert name in rules.TARGETS_US


def test_the_command_fails_when_a_game_is_over_its_target(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert rules.main(["--positions", "200", "--games", "othello"]) == 0
    assert "othello" in capsys.readouterr().out
    monkeypatch.setitem(rules.TARGETS_US, "othello", 1e-6)
    assert rules.main(["--positions", "200", "--games", "othello"]) == 1
    assert "SLOW" in capsys.readouterr().out
