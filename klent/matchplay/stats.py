"""Match statistics: score, win rate with a Wilson 95% interval, and the Elo difference.

A draw counts half a win.  The Wilson score interval is used rather than the normal
approximation because matches are short and win rates near 0 or 1 are common (an untrained
net against GNU Go): Wilson stays inside [0, 1] and is not degenerate at 0 or n wins.  The Elo
difference maps a win rate p through the logistic model, Elo = -400 log10(1/p - 1), and its
interval maps the Wilson bounds the same way (the map is monotonic); p = 0 or 1 gives an
infinite difference, reported as such.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

Z95 = 1.959963984540054  # two-sided 95% normal quantile


def wilson_interval(score: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``score / n`` (``score`` may be fractional)."""
    if n <= 0:
        return 0.0, 1.0
    p = score / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # At no wins (or all) the bound is exactly 0 (or 1); rounding would leave a residue of
    # about 1e-18 there, which the Elo map turns into a finite -7,000 instead of -infinity.
    low = 0.0 if score <= 0 else max(0.0, centre - half)
    high = 1.0 if score >= n else min(1.0, centre + half)
    return low, high


def elo_difference(p: float) -> float:
    """Elo difference for an expected score ``p`` in [0, 1] (+-inf at the ends)."""
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / p - 1.0)


@dataclass(frozen=True)
class MatchSummary:
    """Results from the first engine's view."""

    games: int
    wins: int
    losses: int
    draws: int
    win_rate: float  # (wins + draws/2) / games
    win_rate_low: float  # Wilson 95% interval
    win_rate_high: float
    elo: float
    elo_low: float
    elo_high: float

    @classmethod
    def from_counts(cls, wins: int, losses: int, draws: int) -> MatchSummary:
        games = wins + losses + draws
        score = wins + 0.5 * draws
        rate = score / games if games else 0.5
        low, high = wilson_interval(score, games)
        return cls(
            games=games,
            wins=wins,
            losses=losses,
            draws=draws,
            win_rate=rate,
            win_rate_low=low,
            win_rate_high=high,
            elo=elo_difference(rate),
            elo_low=elo_difference(low),
            elo_high=elo_difference(high),
        )

    def to_json(self) -> dict[str, float | int | None]:
        """A JSON-safe dict: infinite Elo values become None (JSON has no infinity)."""
        return {k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in asdict(self).items()}

    def text(self) -> str:
        """Two human-readable lines."""
        return (
            f"{self.games} games: +{self.wins} -{self.losses} ={self.draws}  "
            f"win rate {self.win_rate:.3f} (95% {self.win_rate_low:.3f}..{self.win_rate_high:.3f})\n"
            f"Elo difference {_elo_text(self.elo)} (95% {_elo_text(self.elo_low)}..{_elo_text(self.elo_high)})"
        )


def _elo_text(value: float) -> str:
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return f"{value:+.0f}"
