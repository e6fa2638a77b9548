"""One Elo rating from matches against rated anchors: `klent bench ladder FOLDER=RATING ...`.

A ladder (Stockfish at ``UCI_Elo`` 1350, 1500, 1700, 2000; GNU Go levels given a rating) gives a
win rate per rung, and each rung alone gives an Elo difference whose interval is wide and, at
a score of 0 or 1, infinite.  All the games together pin one rating: the maximum-likelihood
rating of the logistic model with its likelihood-ratio 95 % interval
(`klent.matchplay.stats.fit_rating`, whose docstring tells how).

The anchors' ratings are what the user gives: Stockfish's ``UCI_Elo`` is calibrated at a
longer time control than a benchmark's 0.2 s a move, so the rating is on the anchors' nominal
scale, not CCRL's.

    klent bench ladder runs/strength/chess-gumbel1s-elo1350=1350 runs/strength/chess-gumbel1s-elo1500=1500
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

from klent.matchplay.records import read_results
from klent.matchplay.results import distinct_games, summarise
from klent.matchplay.stats import MatchSummary, expected_score, fit_rating


@dataclass(frozen=True)
class Rung:
    """One match against one anchor, from engine 1's view."""

    name: str
    anchor: float
    summary: MatchSummary
    distinct: int


def read_rung(folder: Path, anchor: float) -> Rung:
    results = read_results(folder)
    return Rung(folder.name, anchor, summarise(results), distinct_games(results))


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
        rating = fit_rating([(rung.anchor, rung.summary) for rung in rungs])
    except ValueError as error:
        parser.error(str(error))
    print("| match | anchor | games (distinct) | score | expected at the fit |")
    print("|---|---|---|---|---|")
    for rung in rungs:
        fitted = "" if math.isinf(rating.elo) else f"{expected_score(rating.elo, rung.anchor):.3f}"
        print(f"| {rung.name} | {rung.anchor:.0f} | {rung.summary.games} ({rung.distinct}) | "
              f"{rung.summary.win_rate:.3f} | {fitted} |")
    print(f"rating {_elo(rating.elo)} (95 % {_elo(rating.low)} to {_elo(rating.high)}) "
          f"from {sum(r.summary.games for r in rungs)} games")
    return 0
