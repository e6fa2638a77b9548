"""Go clocks as GTP describes them, and the thinking time a move may take on them.

GTP's `time_settings main byo_yomi_time byo_yomi_stones` describes Canadian byo-yomi (stones = 0
with byo-yomi time 0 is absolute time; byo-yomi time > 0 with stones = 0 means no limit);
KGS's `kgs-time_settings none | absolute main | byoyomi main period periods | canadian main
period stones` adds Japanese byo-yomi.  `time_left color seconds stones` updates a side's clock:
stones = 0 while in main time, else the stones still to play in the current Canadian period
(or, on KGS with Japanese byo-yomi, the periods left; either way the seconds are those of the
current period).

`GameClock.budget` turns the engine's clock into seconds for one move with the policy shared by
every protocol (`engine.timecontrol.move_budget`), keeping ``margin`` seconds per move for the
lag between the controller's clock and our search.  When the controller sends no `time_left`,
our own thinking time is deducted locally (`GameClock.spend`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from engine.player import move_budget

TimeSystem = Literal["none", "absolute", "canadian", "byoyomi"]

_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_INT = re.compile(r"[0-9]+")


def gtp_float(text: str) -> float:
    """A GTP float argument: a finite decimal in ASCII digits ("7.5", "-0.5", "30").

    Python's ``float`` also takes "nan", "inf", "1e3", "1_000" and other scripts' digits;
    no controller means those, and a NaN or infinite time or komi would poison every later
    budget or score, so they are refused.  Raises ValueError.  (Here rather than in `gtp`
    because `TimeSettings.from_kgs` parses its own arguments.)
    """
    if _FLOAT.fullmatch(text):
        number = float(text)
        if math.isfinite(number):  # 400 digits match, and float() makes them inf
            return number
    raise ValueError(f"not a decimal number: {text!r}")


def gtp_int(text: str) -> int:
    """A GTP int argument: an unsigned integer in ASCII digits (``int`` would take "1_000"
    and other scripts' digits).  Raises ValueError."""
    if not _INT.fullmatch(text):
        raise ValueError(f"not an unsigned integer: {text!r}")
    return int(text)


@dataclass(frozen=True)
class TimeSettings:
    """A time system: main time, then byo-yomi periods of ``period`` seconds.

    ``stones`` is the stones per Canadian period, or the number of Japanese periods.
    """

    system: TimeSystem = "none"
    main: float = 0.0
    period: float = 0.0
    stones: int = 0

    @classmethod
    def from_gtp(cls, main: float, period: float, stones: int) -> TimeSettings:
        """`time_settings` arguments (GTP 2 section 4.2)."""
        _check_non_negative(main, period, stones)
        if period > 0 and stones == 0:
            return cls("none")
        if period == 0 and stones == 0:
            return cls("absolute", main)
        return cls("canadian", main, period, stones)

    @classmethod
    def from_kgs(cls, args: list[str]) -> TimeSettings:
        """`kgs-time_settings` arguments; raises ValueError on a malformed or unknown system."""
        if not args:
            raise ValueError("missing time system")
        system, numbers = args[0].lower(), args[1:]
        expected = {"none": 0, "absolute": 1, "byoyomi": 3, "canadian": 3}
        if system not in expected or len(numbers) != expected[system]:
            raise ValueError(f"expected none | absolute M | byoyomi M T P | canadian M T S, got {' '.join(args)!r}")
        if system == "none":
            return cls("none")
        main = gtp_float(numbers[0])
        if system == "absolute":
            _check_non_negative(main, 0.0, 0)
            return cls("absolute", main)
        period, count = gtp_float(numbers[1]), gtp_int(numbers[2])
        _check_non_negative(main, period, count)
        if count == 0 or period == 0:
            return cls("absolute", main)
        return cls(system, main, period, count)  # type: ignore[arg-type]


@dataclass
class SideClock:
    """What is left on one side's clock: seconds, and stones (0 = still in main time)."""

    seconds: float
    stones: int


class GameClock:
    """Both sides' clocks under one `TimeSettings`."""

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
        if seconds < 0 or stones < 0:
            raise ValueError("time and stones must be >= 0")
        self.sides[color] = SideClock(seconds, stones)

    def budget(self, color: int, empty_points: int) -> float | None:
        """Seconds the move of ``color`` may think, or None for no limit.

        Mapped onto `engine.timecontrol.move_budget` as its docstring describes: in byo-yomi
        the period's stones are the moves to go (Japanese: one move per period); in main time
        it is sudden death on the main time with max(10, empty/2) own moves still expected
        (the byo-yomi periods are a spare).
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


def _check_non_negative(main: float, period: float, stones: int) -> None:
    if main < 0 or period < 0 or stones < 0:
        raise ValueError("time settings must be >= 0")
