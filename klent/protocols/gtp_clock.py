"""GTP's time commands as the engine's `TimeSettings` (the clocks themselves are the engine's
`GameClock`, `klent.engine.timecontrol`).

GTP's `time_settings main byo_yomi_time byo_yomi_stones` describes Canadian byo-yomi (stones = 0
with byo-yomi time 0 is absolute time; byo-yomi time > 0 with stones = 0 means no limit);
KGS's `kgs-time_settings none | absolute main | byoyomi main period periods | canadian main
period stones` adds Japanese byo-yomi.  `time_left color seconds stones` updates a side's clock:
stones = 0 while in main time, else the stones still to play in the current Canadian period
(or, on KGS with Japanese byo-yomi, the periods left; either way the seconds are those of the
current period).
"""

from __future__ import annotations

from klent.engine.player import TimeSettings
from klent.protocols.gtp_wire import gtp_float, gtp_int


def gtp_time_settings(main: float, period: float, stones: int) -> TimeSettings:
    """`time_settings` arguments (GTP 2 section 4.2); raises ValueError on a negative one."""
    _check_non_negative(main, period, stones)
    if period > 0 and stones == 0:
        return TimeSettings("none")
    if period == 0 and stones == 0:
        return TimeSettings("absolute", main)
    return TimeSettings("canadian", main, period, stones)


def kgs_time_settings(args: list[str]) -> TimeSettings:
    """`kgs-time_settings` arguments; raises ValueError on a malformed or unknown system."""
    if not args:
        raise ValueError("missing time system")
    system, numbers = args[0].lower(), args[1:]
    expected = {"none": 0, "absolute": 1, "byoyomi": 3, "canadian": 3}
    if system not in expected or len(numbers) != expected[system]:
        raise ValueError(f"expected none | absolute M | byoyomi M T P | canadian M T S, got {' '.join(args)!r}")
    if system == "none":
        return TimeSettings("none")
    main = gtp_float(numbers[0])
    if system == "absolute":
        _check_non_negative(main, 0.0, 0)
        return TimeSettings("absolute", main)
    period, count = gtp_float(numbers[1]), gtp_int(numbers[2])
    _check_non_negative(main, period, count)
    if count == 0 or period == 0:
        return TimeSettings("absolute", main)
    return TimeSettings("byoyomi" if system == "byoyomi" else "canadian", main, period, count)


def _check_non_negative(main: float, period: float, stones: int) -> None:
    if main < 0 or period < 0 or stones < 0:
        raise ValueError("time settings must be >= 0")
