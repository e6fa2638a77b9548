"""One Elo rating from matches against rated anchors: `klent bench ladder FOLDER=RATING ...`.

A ladder (Stockfish at ``UCI_Elo`` 1350, 1500, 1700, 2000; GNU Go levels given a rating) gives a
win rate per rung, and each rung alone gives an Elo difference whose interval is wide and, at
a score of 0 or 1, infinite.  All the games together pin one rating: under the logistic model a
game against an anchor rated A is expected to score p(R) = 1 / (1 + 10^((A - R) / 400)) for a
player rated R (a draw scores one half), and the rating is the R that maximises the likelihood
prod p^s (1 - p)^(1 - s) over every game.  The likelihood is log-concave in R, so its maximum is
the one root of sum(s - p(R)) = 0; the 95 % interval is the likelihood-ratio one, the R where the
log-likelihood has fallen 1.92 (half of chi-square(1)'s 3.84) below its maximum.  Where every
game was won (or lost) there is no finite maximum: the rating is reported as above (below) the
bound that the games still allow.

The anchors' ratings are what the user gives: Stockfish's ``UCI_Elo`` is calibrated at a
longer time control than a benchmark's 0.2 s a move, so the rating is on the anchors' nominal
scale, not CCRL's.

    klent bench ladder runs/strength/chess-gumbel1s-elo1350=1350 runs/strength/chess-gumbel1s-elo1500=1500
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from klent.bench.paired import read_games
from klent.matchplay.match import distinct_games, summarise
from klent.matchplay.stats import MatchSummary

CHI2_95_HALF = 1.920729410347062  # half the 95 % quantile of chi-square with one degree of freedom
SPAN = 4000.0  # ratings searched within this many points of the anchors


@dataclass(frozen=True)
class Rung:
    """One match against one anchor, from engine 1's view."""

    name: str
    anchor: float
    summary: MatchSummary
    distinct: int

    @property
    def score(self) -> float:
        """Points won, a draw counting half."""
        return self.summary.wins + 0.5 * self.summary.draws


@dataclass(frozen=True)
class Rating:
    """The maximum-likelihood rating and its interval; +-inf where the games allow no bound."""

    elo: float
    low: float
    high: float


def read_rung(folder: Path, anchor: float) -> Rung:
    results = list(read_games(folder).values())
    return Rung(folder.name, anchor, summarise(results), distinct_games(results))


def expected(rating: float, anchor: float) -> float:
    return 1.0 / (1.0 + 10.0 ** ((anchor - rating) / 400.0))


def log_likelihood(rating: float, rungs: list[Rung]) -> float:
    """Of every game: a rung's games share p, so its points and its games are all it takes
    (a term whose weight is 0 is left out: p may round to 0 or 1 far from the anchor)."""
    total = 0.0
    for rung in rungs:
        p = expected(rating, rung.anchor)
        won, lost = rung.score, rung.summary.games - rung.score
        total += (won * math.log(p) if won else 0.0) + (lost * math.log1p(-p) if lost else 0.0)
    return total


def _bisect(decreasing: Callable[[float], float], low: float, high: float) -> float:
    """The root of a decreasing function between ``low`` (positive) and ``high`` (negative)."""
    for _ in range(100):
        middle = (low + high) / 2
        if decreasing(middle) > 0:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def fit(rungs: list[Rung]) -> Rating:
    """The rating that best explains every game, with its likelihood-ratio 95 % interval."""
    games = sum(r.summary.games for r in rungs)
    if games == 0:
        raise ValueError("no games to rate")
    score = sum(r.score for r in rungs)
    bottom = min(r.anchor for r in rungs) - SPAN
    top = max(r.anchor for r in rungs) + SPAN
    if 0 < score < games:
        elo = _bisect(lambda x: score - sum(r.summary.games * expected(x, r.anchor) for r in rungs), bottom, top)
    else:
        elo = top if score == games else bottom  # the likelihood rises without end towards it
    peak = log_likelihood(elo, rungs)

    def drop(x: float) -> float:
        return log_likelihood(x, rungs) - (peak - CHI2_95_HALF)

    # A bound beyond the searched span (a handful of games) is no bound at all.
    low = -math.inf if score == 0 or drop(bottom) > 0 else _bisect(lambda x: -drop(x), bottom, elo)
    high = math.inf if score == games or drop(top) > 0 else _bisect(drop, elo, top)
    if score == games:
        elo = math.inf
    elif score == 0:
        elo = -math.inf
    return Rating(elo, low, high)


def parse_rung(text: str) -> tuple[Path, float]:
    folder, sep, rating = text.rpartition("=")
    try:
        if not sep:
            raise ValueError
        return Path(folder), float(rating)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a rung is FOLDER=RATING (a match folder and its anchor's Elo), not {text!r}") from None


def _elo(value: float) -> str:
    return f"{value:+.0f}" if math.isinf(value) else f"{value:.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench ladder", description=__doc__.split("\n")[0])
    parser.add_argument("rungs", type=parse_rung, nargs="+", metavar="FOLDER=RATING",
                        help="a klent match folder (engine 1 is the player rated) and its opponent's Elo")
    args = parser.parse_args(argv)
    try:
        rungs = [read_rung(folder, anchor) for folder, anchor in args.rungs]
        rating = fit(rungs)
    except ValueError as error:
        parser.error(str(error))
    print("| match | anchor | games (distinct) | score | expected at the fit |")
    print("|---|---|---|---|---|")
    for rung in rungs:
        fitted = "" if math.isinf(rating.elo) else f"{expected(rating.elo, rung.anchor):.3f}"
        print(f"| {rung.name} | {rung.anchor:.0f} | {rung.summary.games} ({rung.distinct}) | "
              f"{rung.summary.win_rate:.3f} | {fitted} |")
    print(f"rating {_elo(rating.elo)} (95 % {_elo(rating.low)} to {_elo(rating.high)}) "
          f"from {sum(r.summary.games for r in rungs)} games")
    return 0
