"""Time management: the budget stays within the clock, and simulated games never flag."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from klent.engine.timecontrol import DEFAULT_OVERHEAD, clock_budget, move_budget


def play_clock(
    remaining: float,
    increment: float,
    moves: int,
    lag: float,
    moves_to_go: int | None = None,
    overhead: float = DEFAULT_OVERHEAD,
) -> list[float]:
    """Our clock after each of ``moves`` moves that each cost their budget plus ``lag``.

    With ``moves_to_go``, the control repeats: every ``moves_to_go`` moves the initial time is
    added again (the classical 40 moves in N minutes).
    """
    clock, period, history = remaining, moves_to_go, []
    for _ in range(moves):
        clock -= move_budget(clock, increment, period, overhead) + lag
        history.append(clock)
        clock += increment
        if period is not None:
            period -= 1
            if period == 0:
                clock += remaining
                period = moves_to_go
    return history


def test_bullet_one_minute_survives_long_games() -> None:
    # 1+0 with a real lag of a quarter of Move Overhead: over 200 moves without flagging.
    clocks = play_clock(60.0, 0.0, moves=200, lag=DEFAULT_OVERHEAD / 4)
    assert min(clocks) > 0.0
    # ... while still thinking for real in the opening.
    assert move_budget(60.0) > 1.5


def test_increment_keeps_the_clock_alive_forever() -> None:
    # 1+1 and even 0.5+0.2 with the full overhead as lag: the increment pays for every move.
    assert min(play_clock(60.0, 1.0, moves=500, lag=DEFAULT_OVERHEAD)) > 0.0
    assert min(play_clock(0.5, 0.2, moves=500, lag=DEFAULT_OVERHEAD)) > 0.0


def test_moves_to_go_uses_the_period_well() -> None:
    # 40 moves in 60 s: most of the period is thought about, none of it is lost.
    clocks = play_clock(60.0, 0.0, moves=120, lag=0.02, moves_to_go=40)
    assert min(clocks) > 0.0
    left_at_control = clocks[39]
    assert left_at_control < 0.15 * 60.0
    # The last move before the control may use nearly all that is left.
    assert move_budget(10.0, moves_to_go=1) == pytest.approx(10.0 - 2 * DEFAULT_OVERHEAD)


def test_spent_clock_means_no_thinking() -> None:
    assert move_budget(0.0) == 0.0
    assert move_budget(-3.0, increment=-1.0) == 0.0  # lagging servers send negative clocks
    assert move_budget(0.05, increment=0.0, overhead=0.1) == 0.0


def test_longer_controls_spend_more() -> None:
    budgets = [move_budget(t, inc) for t, inc in ((60, 0), (180, 2), (600, 5), (1800, 30))]
    assert budgets == sorted(budgets)
    assert budgets[-1] > 60.0  # 30+30: about a minute per move


def test_clock_budget_reads_uci_milliseconds() -> None:
    assert clock_budget(None) is None  # no clock, no movetime: no limit
    assert clock_budget(None, movetime_ms=2000, overhead=0.1) == pytest.approx(1.9)
    assert clock_budget(60_000, 1000, overhead=0.1) == move_budget(60.0, 1.0, overhead=0.1)
    assert clock_budget(60_000, None, 0) == move_budget(60.0)  # movestogo 0: sudden death
    assert clock_budget(60_000, None, 1, movetime_ms=500) == pytest.approx(0.4)  # the smaller


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="overhead"):
        move_budget(10.0, overhead=-0.1)
    with pytest.raises(ValueError, match="expected_moves"):
        move_budget(10.0, expected_moves=0)


clock_seconds = st.floats(min_value=-10.0, max_value=10_000.0, allow_nan=False)
increments = st.floats(min_value=0.0, max_value=60.0, allow_nan=False)
moves_to_go = st.one_of(st.none(), st.integers(min_value=-1, max_value=80))
overheads = st.floats(min_value=0.0, max_value=2.0, allow_nan=False)


@given(clock_seconds, increments, moves_to_go, overheads)
def test_budget_never_exceeds_the_clock(remaining, increment, to_go, overhead) -> None:
    budget = move_budget(remaining, increment, to_go, overhead)
    assert 0.0 <= budget <= max(0.0, remaining - overhead)
    if to_go is None:
        assert budget <= max(0.0, (remaining - overhead) / 2) + 1e-9


@given(clock_seconds, clock_seconds, increments, moves_to_go, overheads)
def test_budget_grows_with_the_clock(a, b, increment, to_go, overhead) -> None:
    low, high = sorted((a, b))
    assert move_budget(low, increment, to_go, overhead) <= move_budget(high, increment, to_go, overhead) + 1e-9
