"""Time management: from a game clock to the thinking time of one move.

Every protocol with a clock (UCI ``go wtime .. winc .. movestogo ..``, the lichess bridge, GTP
``time_left``) asks one question: how long may the engine think about this move?  They all
answer it with `move_budget` (UCI and lichess through `clock_budget`, which reads their
milliseconds), so the policy below is the same everywhere.

The policy, for ``remaining`` seconds on our clock, ``increment`` seconds added per move,
``moves_to_go`` moves until the next time control (None: sudden death), and ``overhead``
seconds of lag per move (the time between the clock starting for us and the search starting,
plus between the search ending and the opponent's clock starting: process, pipe, network):

1. Horizon h: ``moves_to_go`` when the control says how many moves it covers, otherwise the
   ``expected_moves`` we still expect to play (30 by default, a typical chess game length left
   to play; a Go front end passes a larger number).
2. Pool: the time we may think during the next h moves, ``remaining + increment * (h - 1)``,
   minus ``overhead`` for each of those moves and one more as a reserve.
3. Budget: an equal share of the pool, ``pool / h``, and never more than half of
   ``remaining - overhead`` in sudden death (h is only a guess there, and an increment larger
   than the clock would otherwise tempt us to spend almost everything on one move); never less
   than 0.

Why this does not lose on time (e.g. at 1+0 bullet): a move costs its budget plus the real
lag, and the budget leaves ``overhead`` for the lag of every one of the next h moves plus one
spare.  If the real lag stays below ``overhead``, the clock after a move is at least
``(remaining * (h - 1) + overhead) / h`` while the pool lasts, so it shrinks geometrically.
Once the pool is spent the budget is 0, which the search treats as "answer after the root
evaluation" (the reactive move), and each move then costs only its lag.  Without increment no
policy survives more than ``remaining / lag`` moves; this one plays 119 moves (each side) at 1+0
if every move really lags the full default overhead (0.1 s), 252 with a quarter of it (the
usual case, since Move Overhead is a safety margin), and never flags when the increment exceeds
the lag (`tests/engine/test_timecontrol.py` simulates these clocks).  At longer controls the same rule
spends about 1/30 of the clock plus almost the whole increment per move, which puts the
thinking into the opening and middle game and slows down as the clock runs low.

Mapping other clocks onto these arguments:

* UCI / lichess: our ``wtime``/``btime``, ``winc``/``binc``, ``movestogo`` (milliseconds to seconds).
* GTP Canadian overtime (``time_left <colour> <time> <stones>`` with stones > 0): the time left
  in the period and ``moves_to_go`` = stones; in main time (stones = 0): sudden death.
* Japanese byo-yomi: in main time, sudden death on the main time (the periods are a spare);
  in byo-yomi, ``remaining`` = one period and ``moves_to_go`` = 1.

Go's clocks (absolute time, Canadian and Japanese byo-yomi) have state of their own: a move in
main time can run into the first period, and a period starts again after its stones.
`GameClock` keeps both sides' clocks under one `TimeSettings` and maps them onto `move_budget`
as above; GTP's ``time_settings``, ``kgs-time_settings`` and ``time_left`` only fill it in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DEFAULT_OVERHEAD = 0.1  # seconds of lag per move assumed when the front end gives no figure
DEFAULT_EXPECTED_MOVES = 30  # moves still to play in sudden death (chess)
SUDDEN_DEATH_MAX_SHARE = 0.5  # at most this share of the usable clock on one move


def move_budget(
    remaining: float,
    increment: float = 0.0,
    moves_to_go: int | None = None,
    overhead: float = DEFAULT_OVERHEAD,
    expected_moves: int = DEFAULT_EXPECTED_MOVES,
) -> float:
    """Seconds of thinking for this move (see the module docstring for the policy).

    Negative clock readings (a lagging server may send them) count as 0; so does a negative
    increment.  ``moves_to_go`` of 0 or less is read as 1 (this move ends the control).

    >>> round(move_budget(60.0), 3)  # 1+0, first move
    1.897
    >>> move_budget(0.5)  # the pool is spent: answer with the root evaluation only
    0.0
    >>> round(move_budget(10.0, moves_to_go=1), 3)  # last move before the control: use it
    9.8
    """
    if overhead < 0:
        raise ValueError(f"overhead must be >= 0 seconds, got {overhead}")
    if expected_moves < 1:
        raise ValueError(f"expected_moves must be >= 1, got {expected_moves}")
    remaining = max(0.0, remaining)
    increment = max(0.0, increment)
    sudden_death = moves_to_go is None
    horizon = expected_moves if moves_to_go is None else max(1, moves_to_go)
    pool = remaining + increment * (horizon - 1) - overhead * (horizon + 1)
    budget = pool / horizon
    usable = remaining - overhead
    if sudden_death:
        usable *= SUDDEN_DEATH_MAX_SHARE
    return max(0.0, min(budget, usable))


def clock_budget(
    clock_ms: float | None,
    increment_ms: float | None = None,
    moves_to_go: int | None = None,
    movetime_ms: float | None = None,
    overhead: float = DEFAULT_OVERHEAD,
) -> float | None:
    """Seconds for this move from a chess clock as UCI's ``go`` and lichess send it, in
    milliseconds: the `move_budget` of our clock (``clock_ms``, ``increment_ms``,
    ``moves_to_go``; 0 moves to go is sudden death) and ``movetime_ms`` less the ``overhead``,
    the smaller where both are given; None where neither is."""
    budgets = []
    if movetime_ms is not None:
        budgets.append(max(0.0, movetime_ms / 1000.0 - overhead))
    if clock_ms is not None:
        budgets.append(move_budget(clock_ms / 1000.0, (increment_ms or 0) / 1000.0, moves_to_go or None, overhead))
    return min(budgets) if budgets else None


TimeSystem = Literal["none", "absolute", "canadian", "byoyomi"]


@dataclass(frozen=True)
class TimeSettings:
    """A time system: main time, then byo-yomi periods of ``period`` seconds.

    ``stones`` is the stones per Canadian period, or the number of Japanese periods.
    """

    system: TimeSystem = "none"
    main: float = 0.0
    period: float = 0.0
    stones: int = 0


@dataclass
class SideClock:
    """What is left on one side's clock: seconds, and stones (0 = still in main time).

    In byo-yomi the seconds are those of the current period, and the stones those still to
    play in it (Canadian) or the periods left (Japanese).
    """

    seconds: float
    stones: int


class GameClock:
    """Both sides' clocks under one `TimeSettings`.

    ``margin`` is the seconds of lag kept per move.  When the controller reports no time left,
    our own thinking time is deducted locally (`spend`).
    """

    def __init__(self, settings: TimeSettings = TimeSettings(), margin: float = 0.5) -> None:
        self.margin = margin
        self.settings = settings
        self.sides: dict[int, SideClock] = {}
        self.reset(settings)

    def reset(self, settings: TimeSettings) -> None:
        """New time settings: both clocks start full."""
        self.settings = settings
        self.sides = {color: self._fresh() for color in (0, 1)}

    def _fresh(self) -> SideClock:
        s = self.settings
        if s.main > 0 or s.system in ("none", "absolute"):
            return SideClock(s.main, 0)
        return SideClock(s.period, s.stones if s.system == "canadian" else 1)

    def time_left(self, color: int, seconds: float, stones: int) -> None:
        """The controller's reading of ``color``'s clock (see `SideClock`)."""
        if seconds < 0 or stones < 0:
            raise ValueError("time and stones must be >= 0")
        self.sides[color] = SideClock(seconds, stones)

    def budget(self, color: int, empty_points: int) -> float | None:
        """Seconds the move of ``color`` may think, or None for no limit.

        Mapped onto `move_budget` as the module docstring describes: in byo-yomi the period's
        stones are the moves to go (Japanese: one move per period); in main time it is sudden
        death on the main time with max(10, empty/2) own moves still expected (the byo-yomi
        periods are a spare).
        """
        s = self.settings
        if s.system == "none":
            return None
        side = self.sides[color]
        if side.stones > 0 and s.system == "canadian":
            return move_budget(side.seconds, moves_to_go=side.stones, overhead=self.margin)
        if side.stones > 0 and s.system == "byoyomi":
            return move_budget(min(side.seconds, s.period), moves_to_go=1, overhead=self.margin)
        expected = max(10, empty_points // 2)
        return move_budget(side.seconds, overhead=self.margin, expected_moves=expected)

    def spend(self, color: int, seconds: float) -> None:
        """Deduct a move's thinking time (until the controller's next `time_left` corrects it)."""
        s = self.settings
        if s.system == "none":
            return
        side = self.sides[color]
        if side.stones == 0:
            side.seconds -= seconds
            if side.seconds >= 0 or s.system == "absolute":
                side.seconds = max(0.0, side.seconds)
                return
            # Main time ran out during this move: the overflow is taken from the first period.
            overflow = -side.seconds
            side.seconds = max(0.0, s.period - overflow)
            side.stones = s.stones if s.system == "canadian" else 1
            seconds = 0.0
        side.seconds -= seconds
        if s.system == "canadian":
            side.stones -= 1
            if side.stones <= 0:  # period complete: a new one starts
                side.seconds, side.stones = s.period, s.stones
        elif s.system == "byoyomi":
            side.seconds = s.period  # a move inside the period resets it
        side.seconds = max(0.0, side.seconds)
