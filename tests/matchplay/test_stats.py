"""Match statistics (`klent.matchplay.stats`) against hand-computed values: the Wilson
interval, the Elo difference, the summary, the sign test, the ladder's maximum-likelihood
rating and the reach of a learning curve."""

from __future__ import annotations

import math

import pytest

from klent.matchplay.stats import (
    CHI2_95_HALF,
    MatchSummary,
    elo_difference,
    expected_score,
    fit_pool,
    fit_rating,
    log_likelihood,
    reach_point,
    sign_test,
    wilson_interval,
)


def test_wilson_interval_matches_hand_computation() -> None:
    # 5/10: centre 0.5, half-width 1.96/1.38415 * sqrt(0.025 + 0.0096036) = 0.26341.
    low, high = wilson_interval(5, 10)
    assert low == pytest.approx(0.23659, abs=1e-4) and high == pytest.approx(0.76341, abs=1e-4)
    # 0/10: the interval starts at 0 and is not degenerate (upper bound 0.27753).
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.27753, abs=1e-4)
    # 10/10 mirrors 0/10.
    low, high = wilson_interval(10, 10)
    assert high == 1.0 and low == pytest.approx(1 - 0.27753, abs=1e-4)
    # The ends are exact at any number of games (at 100, rounding once left 3.5e-18).
    for n in (1, 7, 100, 400, 1000):
        assert wilson_interval(0, n)[0] == 0.0 and wilson_interval(n, n)[1] == 1.0


def test_elo_difference_matches_logistic_model() -> None:
    assert elo_difference(0.5) == 0.0
    assert elo_difference(0.75) == pytest.approx(400 * math.log10(3), abs=1e-9)  # 190.85
    assert elo_difference(0.25) == pytest.approx(-400 * math.log10(3), abs=1e-9)
    assert elo_difference(0.0) == -math.inf and elo_difference(1.0) == math.inf


def test_summary_counts_draws_as_half_and_maps_the_interval() -> None:
    summary = MatchSummary.from_counts(wins=6, losses=3, draws=1)
    assert summary.games == 10 and summary.win_rate == pytest.approx(0.65)
    assert summary.elo == pytest.approx(-400 * math.log10(1 / 0.65 - 1))  # +107.5
    low, high = wilson_interval(6.5, 10)
    assert (summary.win_rate_low, summary.win_rate_high) == (low, high)
    assert summary.elo_low == pytest.approx(elo_difference(low))
    assert summary.elo_low < summary.elo < summary.elo_high
    shutout = MatchSummary.from_counts(0, 4, 0)
    assert shutout.to_json()["elo"] is None and shutout.to_json()["elo_high"] is not None
    assert "-inf" in shutout.text()
    assert MatchSummary.from_counts(0, 100, 0).to_json()["elo_low"] is None


def test_sign_test_is_the_exact_binomial() -> None:
    assert sign_test(0, 0) == 1.0 and sign_test(1, 1) == 1.0
    assert sign_test(0, 5) == pytest.approx(2 / 32)
    assert sign_test(10, 0) == pytest.approx(2 / 1024)
    assert sign_test(12, 17) == sign_test(17, 12) == pytest.approx(0.4583, abs=1e-4)


def rung(anchor: float, wins: int, losses: int, draws: int = 0) -> tuple[float, MatchSummary]:
    return anchor, MatchSummary.from_counts(wins, losses, draws)


def test_one_rung_gives_the_anchor_plus_the_elo_difference_of_its_score() -> None:
    for wins, losses, draws in [(50, 50, 0), (70, 25, 5), (10, 90, 0)]:
        rating = fit_rating([rung(1500, wins, losses, draws)])
        rate = (wins + draws / 2) / (wins + losses + draws)
        assert rating.elo == pytest.approx(1500 + elo_difference(rate), abs=1e-6)
        assert rating.low < rating.elo < rating.high
        # the bounds are where the log-likelihood has fallen by half chi-square(1)'s 95 % quantile
        games = [rung(1500, wins, losses, draws)]
        peak = log_likelihood(rating.elo, games)
        for bound in (rating.low, rating.high):
            assert log_likelihood(bound, games) == pytest.approx(peak - CHI2_95_HALF, abs=1e-6)


def test_an_even_score_is_rated_at_its_anchor_with_a_symmetric_interval() -> None:
    rating = fit_rating([rung(1700, 50, 50)])
    assert rating.elo == pytest.approx(1700)
    assert 1700 - rating.low == pytest.approx(rating.high - 1700)
    assert 60 < rating.high - 1700 < 80  # 100 games: about +-70 Elo


def test_several_rungs_balance_the_expected_and_the_actual_score() -> None:
    rungs = [rung(1350, 80, 20), rung(1500, 60, 38, 2), rung(1700, 30, 70), rung(2000, 3, 97)]
    rating = fit_rating(rungs)
    played = sum(summary.score for _, summary in rungs)
    assert sum(s.games * expected_score(rating.elo, a) for a, s in rungs) == pytest.approx(played, abs=1e-6)
    assert 1500 < rating.elo < 1700
    # more games pin the rating more tightly than the middle rung alone
    alone = fit_rating([rungs[1]])
    assert rating.high - rating.low < alone.high - alone.low


def test_a_clean_sweep_has_one_finite_bound_only() -> None:
    sweep = fit_rating([rung(1500, 100, 0)])
    assert sweep.elo == math.inf and sweep.high == math.inf and 1500 < sweep.low < 2500
    wiped = fit_rating([rung(1500, 0, 100)])
    assert wiped.elo == -math.inf and wiped.low == -math.inf and 500 < wiped.high < 1500


def test_a_pool_chain_rates_each_player_by_the_games_that_reach_it() -> None:
    # B met the anchor A; C met only B: C's rating is B's plus their own difference.
    ab, bc = MatchSummary.from_counts(75, 25, 0), MatchSummary.from_counts(30, 70, 0)
    ratings = fit_pool([("B", "A", ab), ("B", "C", bc)], {"A": 1000})
    assert ratings["B"].elo == pytest.approx(1000 + elo_difference(0.75), abs=1e-3)
    assert ratings["C"].elo == pytest.approx(ratings["B"].elo + elo_difference(0.70), abs=1e-3)
    # C's interval carries B's uncertainty as well as its own games'
    b, c = ratings["B"], ratings["C"]
    assert b.low < b.elo < b.high and c.low < c.elo < c.high
    assert c.high - c.low > b.high - b.low


def test_a_pool_player_that_won_every_game_is_unbounded_above() -> None:
    even, sweep = MatchSummary.from_counts(50, 50, 0), MatchSummary.from_counts(20, 0, 0)
    ratings = fit_pool([("B", "A", even), ("C", "B", sweep)], {"A": 0})
    assert ratings["B"].elo == pytest.approx(0, abs=1e-3)
    assert ratings["C"].elo == math.inf and ratings["C"].high == math.inf and 0 < ratings["C"].low < 1000


def test_a_pool_needs_games_that_link_each_player_to_an_anchor() -> None:
    even = MatchSummary.from_counts(5, 5, 0)
    with pytest.raises(ValueError, match="C: no games link it to an anchor"):
        fit_pool([("B", "A", even), ("C", "D", even)], {"A": 0})
    with pytest.raises(ValueError, match="no anchor"):
        fit_pool([("B", "A", even)], {})


def test_reach_point_interpolates_the_first_crossing_in_log_evaluations() -> None:
    assert reach_point([1e3, 1e4, 1e5], [0.2, 0.4, 0.6], 0.5) == pytest.approx(10**4.5)
    assert reach_point([1e3, 1e4, 1e5], [0.3, 0.5, 0.4], 0.5) == pytest.approx(1e4)  # exactly at a point
    assert reach_point([1e3, 1e4, 1e5, 1e6], [0.6, 0.1, 0.2, 0.9], 0.5) == 1e3  # the first one already
    assert reach_point([1e3, 1e4, 1e5], [0.1, 0.6, 0.2], 0.5) == pytest.approx(10**3.8)  # first, not last
    assert reach_point([1e3, 1e4], [0.1, 0.4], 0.5) is None
