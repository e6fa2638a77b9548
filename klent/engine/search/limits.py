"""How long a search may run: a simulation budget, a time budget and a stop flag.

The budgets are checked before every network batch, so a search overshoots its time budget by
at most one batch (plus the tree bookkeeping of that batch), and a stop flag set from another
thread (UCI ``stop``, a GTP interrupt, an HTTP client going away) ends the search within one
batch as well.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class SearchLimits:
    """Budget of one search call (shared by every root searched in that call).

    ``simulations`` is the number of simulations per root (n of Sequential Halving), ``time``
    a wall-clock budget in seconds for the whole call and ``stop`` an event another thread may
    set.  At least one of ``simulations`` and ``time`` is required, because Sequential Halving
    plans its phases from n; with a time budget the search measures its first round of
    simulations and derives n from the remaining time, at most ``simulations`` (see
    `klent.engine.search.gumbel`).
    ``memory`` bounds the bytes of the search tree (None: unbounded): once it is full the
    search stops as if stopped (UCI ``Hash``, GTP ``--memory``).
    """

    simulations: int | None = None
    time: float | None = None
    stop: threading.Event | None = None
    memory: int | None = None

    def __post_init__(self) -> None:
        if self.simulations is None and self.time is None:
            raise ValueError("search limits need a number of simulations or a time budget")
        if self.simulations is not None and self.simulations < 0:
            raise ValueError(f"simulations must be >= 0, got {self.simulations}")
        if self.time is not None and self.time < 0:
            raise ValueError(f"time budget must be >= 0 seconds, got {self.time}")
        if self.memory is not None and self.memory < 0:
            raise ValueError(f"memory must be >= 0 bytes, got {self.memory}")


class Clock:
    """Elapsed time of one search and whether its limits say it must stop now."""

    def __init__(self, limits: SearchLimits) -> None:
        self.limits = limits
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def remaining(self) -> float:
        """Seconds left of the time budget (infinite without one)."""
        if self.limits.time is None:
            return float("inf")
        return self.limits.time - self.elapsed()

    def must_stop(self) -> bool:
        """True once the stop flag is set or the time budget is spent."""
        stop = self.limits.stop
        return (stop is not None and stop.is_set()) or self.remaining() <= 0.0
