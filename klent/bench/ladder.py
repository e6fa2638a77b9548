"""Ratings from matches against rated anchors: `klent bench ladder FOLDER[=RATING] ...`.

A ladder (Stockfish at ``UCI_Elo`` 1350, 1500, 1700, 2000; GNU Go levels given a rating) gives a
win rate per rung, and each rung alone gives an Elo difference whose interval is wide and, at
a score of 0 or 1, infinite.  All the games together pin one rating: the maximum-likelihood
rating of the logistic model with its likelihood-ratio 95 % interval
(`klent.matchplay.stats.fit_pool`, whose docstring tells how).

``FOLDER=RATING`` rates a match's engine 2 at RATING (an anchor); a ``FOLDER`` without one is a
match between two players that are both fitted, such as Pachi at two playout counts, or Pachi
against GNU Go: every player that is not an anchor gets its rating from all the games at once,
so opponents without a published rating (Pachi's playout levels) join the ladder through the
games they play.  A player is its recorded command line with its UCI options, its search limit
and the match's time a move (`summary.json`), so the same engine in two folders is one player;
its resignation threshold is left out, since it ends lost games sooner and chooses no move (klent
resigns against Pachi, which resigns too, and plays GNU Go out, which never does).  A folder
without a summary has "engine 1" (the same player in all such folders) against an opponent of
its own.

The anchors' ratings are what the user gives: Stockfish's ``UCI_Elo`` is calibrated at a
longer time control than a benchmark's 0.2 s a move, so the rating is on the anchors' nominal
scale, not CCRL's.

    klent bench ladder runs/strength/chess-gumbel1s-elo1350=1350 runs/strength/chess-gumbel1s-elo1500=1500
    klent bench ladder runs/strength/go9-1s-level10=0 runs/strength/go9-1s-pachi1000 runs/strength/pachi1000-level10
"""

from __future__ import annotations

import argparse
import math
import shlex
from dataclasses import dataclass
from pathlib import Path

from klent.matchplay.records import read_results, recorded_config
from klent.matchplay.results import distinct_games, summarise
from klent.matchplay.stats import MatchSummary, Rating, expected_score, fit_pool

RESIGN_FLAG = "--resign-threshold"


@dataclass(frozen=True)
class Match:
    """One match folder: its two players and engine 1's results."""

    name: str
    first: str
    second: str
    summary: MatchSummary
    distinct: int


def player_name(config: dict, who: int) -> str:
    """Engine ``who``'s command line (the program's file name, not its folder), with the UCI
    options, search limit and time a move that the match gave it: two folders' players with
    the same name played alike."""
    command = shlex.split(str(config["engines"][who]))
    words = [Path(command[0]).name, *_without_resignation(command[1:])] if command else ["?"]
    options = (config.get("uci_options") or [{}, {}])[who]
    words += [f"{key}={value}" for key, value in sorted(options.items())]
    limit = (config.get("uci_go") or ["", ""])[who]
    seconds = config.get("time_per_move")
    if limit:
        words.append(f"(go {limit})")
    elif seconds:
        words.append(f"({seconds:g} s a move)")
    return " ".join(words)


def _without_resignation(arguments: list[str]) -> list[str]:
    """``arguments`` less ``--resign-threshold X`` (or ``--resign-threshold=X``)."""
    kept: list[str] = []
    skip = False
    for word in arguments:
        if skip:
            skip = False
        elif word == RESIGN_FLAG:
            skip = True
        elif not word.startswith(RESIGN_FLAG + "="):
            kept.append(word)
    return kept


def read_match(folder: Path) -> Match:
    results = read_results(folder)
    config = recorded_config(folder)
    if config is None:
        first, second = "engine 1", f"engine 2 of {folder.name}"
    else:
        first, second = player_name(config, 0), player_name(config, 1)
    if first == second:
        raise ValueError(f"{folder}: both engines are {first}: a match against itself rates nothing")
    return Match(folder.name, first, second, summarise(results), distinct_games(results))


def parse_rung(text: str) -> tuple[Path, float | None]:
    folder, sep, rating = text.rpartition("=")
    if not sep or "/" in rating:
        return Path(text), None
    try:
        return Path(folder), float(rating)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a rung is FOLDER or FOLDER=RATING (a match folder and its engine 2's Elo), not {text!r}") from None


def _elo(value: float) -> str:
    return f"{value:+.0f}" if math.isinf(value) else f"{value:.0f}"


def _rating(rating: Rating) -> str:
    return f"{_elo(rating.elo)} (95 % {_elo(rating.low)} to {_elo(rating.high)})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench ladder", description=__doc__.split("\n")[0])
    parser.add_argument("rungs", type=parse_rung, nargs="+", metavar="FOLDER[=RATING]",
                        help="a klent match folder, with its engine 2's Elo where that engine is an anchor")
    args = parser.parse_args(argv)
    try:
        matches = [read_match(folder) for folder, _ in args.rungs]
        anchors: dict[str, float] = {}
        for match, (_, anchor) in zip(matches, args.rungs):
            if anchor is None:
                continue
            if anchors.setdefault(match.second, anchor) != anchor:
                raise ValueError(f"{match.second} is rated both {anchors[match.second]:g} and {anchor:g}")
        ratings = fit_pool([(m.first, m.second, m.summary) for m in matches], anchors)
    except ValueError as error:
        parser.error(str(error))
    elo = {**anchors, **{name: rating.elo for name, rating in ratings.items()}}
    print("| match | games (distinct) | score of engine 1 | expected at the fit |")
    print("|---|---|---|---|")
    for match in matches:
        first, second = elo[match.first], elo[match.second]
        fitted = "" if math.isinf(first) or math.isinf(second) else f"{expected_score(first, second):.3f}"
        print(f"| {match.name} | {match.summary.games} ({match.distinct}) | {match.summary.win_rate:.3f} | {fitted} |")
    for name, rating in ratings.items():
        games = sum(m.summary.games for m in matches if name in (m.first, m.second))
        print(f"{name}: rating {_rating(rating)} from {games} games")
    for name, anchor in anchors.items():
        print(f"{name}: anchor {anchor:g}")
    return 0
