"""Match statistics, all of them: score, win rate with a Wilson 95% interval, the Elo
difference, the sign test of paired games, the maximum-likelihood rating against rated
anchors (of one player, or of a pool), and where a learning curve first reaches a score.

A draw counts half a win.  The Wilson score interval is used rather than the normal
approximation because matches are short and win rates near 0 or 1 are common (an untrained
net against GNU Go): Wilson stays inside [0, 1] and is not degenerate at 0 or n wins.  The Elo
difference maps a win rate p through the logistic model, Elo = -400 log10(1/p - 1), and its
interval maps the Wilson bounds the same way (the map is monotonic); p = 0 or 1 gives an
infinite difference, reported as such.

A ladder of rated anchors (`fit_rating`) gives one rating from all its games: under the same
logistic model a game against an anchor rated A is expected to score p(R) = 1 / (1 + 10^((A -
R) / 400)) for a player rated R, and the rating is the R that maximises the likelihood prod
p^s (1 - p)^(1 - s) over every game.  The likelihood is log-concave in R, so its maximum is
the one root of sum(s - p(R)) = 0; the 95 % interval is the likelihood-ratio one, the R where
the log-likelihood has fallen 1.92 (half of chi-square(1)'s 3.84) below its maximum.  Where
every game was won (or lost) there is no finite maximum: the rating is reported as above
(below) the bound that the games still allow.

A pool of players (`fit_pool`: a program against several opponents that are not rated, which
play each other or it, and at least one anchor that is) is fitted the same way: the ratings
together maximise the likelihood of every game, found by coordinate ascent (each player's best
rating against the others' current ones, in turn; the likelihood is concave, so this reaches
its one maximum).  A player's interval is its profile likelihood-ratio one: the ratings at which
the likelihood, with the other players refitted, has fallen 1.92 below its maximum.  With one
player and its anchors this is the ladder above.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

Z95 = 1.959963984540054  # two-sided 95% normal quantile
CHI2_95_HALF = 1.920729410347062  # half the 95 % quantile of chi-square with one degree of freedom
SPAN = 4000.0  # ratings searched within this many points of the anchors
MAX_SWEEPS = 1000  # rounds of coordinate ascent at most when several players are fitted at once
TOLERANCE = 1e-4  # Elo: coordinate ascent stops when no rating moves more
BOUND_STEPS = 40  # bisections of an interval bound (each refits the pool): 8,000 / 2^40 Elo


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

    @property
    def score(self) -> float:
        """Points won, a draw counting half."""
        return self.wins + 0.5 * self.draws

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

    @classmethod
    def from_rewards(cls, rewards: Iterable[float]) -> MatchSummary:
        """The summary of games given as the first engine's rewards (+1, 0, -1)."""
        values = [float(r) for r in rewards]
        return cls.from_counts(sum(r > 0 for r in values), sum(r < 0 for r in values), sum(r == 0 for r in values))

    @classmethod
    def pooled(cls, summaries: Iterable[MatchSummary]) -> MatchSummary:
        """One summary of all the games of ``summaries``."""
        parts = list(summaries)
        return cls.from_counts(sum(s.wins for s in parts), sum(s.losses for s in parts), sum(s.draws for s in parts))

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


def sign_test(first: int, second: int) -> float:
    """Two-sided exact binomial p of ``first`` against ``second`` pairs, each side equally
    likely to take a pair under the null hypothesis (ties left out beforehand)."""
    n, k = first + second, min(first, second)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


@dataclass(frozen=True)
class Rating:
    """The maximum-likelihood rating and its interval; +-inf where the games allow no bound."""

    elo: float
    low: float
    high: float


def expected_score(rating: float, anchor: float) -> float:
    """The logistic model's expected score of a player rated ``rating`` against ``anchor``."""
    return 1.0 / (1.0 + 10.0 ** ((anchor - rating) / 400.0))


def log_likelihood(rating: float, rungs: Sequence[tuple[float, MatchSummary]]) -> float:
    """Of every game of the ``(anchor rating, summary)`` rungs: a rung's games share p, so its
    points and its games are all it takes (a term whose weight is 0 is left out: p may round to
    0 or 1 far from the anchor)."""
    total = 0.0
    for anchor, summary in rungs:
        p = expected_score(rating, anchor)
        won, lost = summary.score, summary.games - summary.score
        total += (won * math.log(p) if won else 0.0) + (lost * math.log1p(-p) if lost else 0.0)
    return total


def _bisect(decreasing: Callable[[float], float], low: float, high: float, steps: int = 100) -> float:
    """The root of a decreasing function between ``low`` (positive) and ``high`` (negative)."""
    for _ in range(steps):
        middle = (low + high) / 2
        if decreasing(middle) > 0:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def fit_rating(rungs: Sequence[tuple[float, MatchSummary]]) -> Rating:
    """The rating that best explains every game of the ``(anchor rating, summary)`` rungs, with
    its likelihood-ratio 95 % interval (the module docstring)."""
    anchors = {f"anchor {i}": anchor for i, (anchor, _) in enumerate(rungs)}
    return fit_pool([("player", f"anchor {i}", summary) for i, (_, summary) in enumerate(rungs)],
                    anchors)["player"]


def fit_pool(matches: Sequence[tuple[str, str, MatchSummary]], anchors: Mapping[str, float]) -> dict[str, Rating]:
    """The ratings of every player of ``matches`` (first player, second player, the first's
    results) that ``anchors`` does not rate, all fitted at once to every game, each with its
    profile likelihood-ratio 95 % interval (the module docstring)."""
    if not anchors:
        raise ValueError("no anchor: rate at least one player")
    if sum(summary.games for _, _, summary in matches) == 0:
        raise ValueError("no games to rate")
    players = {name for first, second, _ in matches for name in (first, second)}
    free = sorted(players - set(anchors))
    if not free:
        raise ValueError("every player is an anchor: no rating to fit")
    _check_linked(matches, anchors, free)
    bottom, top = min(anchors.values()) - SPAN, max(anchors.values()) + SPAN
    views: dict[str, list[tuple[str, MatchSummary]]] = {name: [] for name in free}
    for first, second, summary in matches:
        if first in views:
            views[first].append((second, summary))
        if second in views:
            views[second].append((first, MatchSummary.from_counts(summary.losses, summary.wins, summary.draws)))

    def maximise(ratings: dict[str, float], held: str | None = None) -> dict[str, float]:
        # Coordinate ascent on a concave likelihood: each player in turn to its best rating
        # against the others' current ones, until no rating moves.
        ratings = dict(ratings)
        for _ in range(MAX_SWEEPS):
            moved = 0.0
            for name in free:
                if name == held:
                    continue
                best = _best_rating([(ratings[other], summary) for other, summary in views[name]], bottom, top)
                moved = max(moved, abs(best - ratings[name]))
                ratings[name] = best
            if moved < TOLERANCE:
                break
        return ratings

    def likelihood(ratings: dict[str, float]) -> float:
        return sum(log_likelihood(ratings[first], [(ratings[second], summary)]) for first, second, summary in matches)

    fitted = maximise({**anchors, **{name: (bottom + top) / 2 for name in free}})
    peak = likelihood(fitted)
    result = {}
    for name in free:
        def drop(x: float, name: str = name) -> float:
            return likelihood(maximise({**fitted, name: x}, held=name)) - (peak - CHI2_95_HALF)

        elo = fitted[name]
        # A bound beyond the searched span (all won, all lost, a handful of games) is no bound.
        low = -math.inf if elo <= bottom or drop(bottom) > 0 else _bisect(lambda x: -drop(x), bottom, elo, BOUND_STEPS)
        high = math.inf if elo >= top or drop(top) > 0 else _bisect(drop, elo, top, BOUND_STEPS)
        elo = math.inf if elo >= top else -math.inf if elo <= bottom else elo
        result[name] = Rating(elo, low, high)
    return result


def _best_rating(rungs: Sequence[tuple[float, MatchSummary]], bottom: float, top: float) -> float:
    """The rating that maximises the likelihood of ``(opponent rating, summary)`` rungs, within
    [``bottom``, ``top``]: the end it rises towards where every game was won or lost."""
    games = sum(summary.games for _, summary in rungs)
    score = sum(summary.score for _, summary in rungs)
    if score >= games:
        return top
    if score <= 0:
        return bottom
    return _bisect(lambda x: score - sum(s.games * expected_score(x, a) for a, s in rungs), bottom, top)


def _check_linked(matches: Sequence[tuple[str, str, MatchSummary]], anchors: Mapping[str, float],
                  free: Sequence[str]) -> None:
    """A ValueError naming a player whose games do not reach an anchor: nothing rates it."""
    linked = set(anchors)
    grew = True
    while grew:
        grew = False
        for first, second, summary in matches:
            if summary.games and (first in linked) != (second in linked):
                linked |= {first, second}
                grew = True
    for name in free:
        if name not in linked:
            raise ValueError(f"{name}: no games link it to an anchor")


def reach_point(evaluations: Sequence[float], scores: Sequence[float], target: float) -> float | None:
    """The simulator evaluations at which a learning curve first reaches ``target``: at the
    first point scoring at least ``target``, interpolated linearly in log evaluations from the
    point before it (the first point itself when it already scores enough); None if none does."""
    for i, (x, y) in enumerate(zip(evaluations, scores)):
        if y >= target:
            if i == 0:
                return float(x)
            x0, y0 = evaluations[i - 1], scores[i - 1]
            share = (target - y0) / (y - y0)
            return float(math.exp(math.log(x0) + share * (math.log(x) - math.log(x0))))
    return None
