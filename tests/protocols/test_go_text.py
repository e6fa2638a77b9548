"""Other Go programs' GTP replies read by `klent.protocols.go_text`."""

from __future__ import annotations

import pytest

from klent.protocols.go_text import pachi_win_rate, score_points


@pytest.mark.parametrize(("text", "points"), [("B+3.5", 3.5), ("W+2", -2.0), ("0", 0.0),
                                              ("W+12.5 (upper bound: -10.5, lower: -14.5)", -12.5),
                                              ("W+R", None), ("B+F", None)])
def test_scores_are_black_s_lead(text: str, points: float | None) -> None:
    assert score_points(text) == points


@pytest.mark.parametrize(("text", "rate"), [("black D6 1202 0.51 0.0", 0.51), ("white pass 10000 1.00 0.0", 1.0),
                                            ("black D6 1202", None), ("black D6 1202 nan 0.0", None),
                                            ("black D6 1202 1.5 0.0", None), ("", None)])
def test_pachis_win_rate_is_its_fourth_field_within_0_and_1(text: str, rate: float | None) -> None:
    assert pachi_win_rate(text) == rate
