"""A model's strength curve from matches against rated anchors:
`klent bench strength_curve --model M --scale S SIMULATIONS:FOLDER=RATING ...`.

Each argument is one match folder of the model (engine 1) playing with SIMULATIONS simulations a
move (1: reactive play) against an anchor rated RATING.  The folders of one setting are rated
together (`klent.matchplay.stats.fit_rating`, as `klent bench ladder` does); the points, their
intervals and the model's digest are written to the curve beside the model (or ``--out``),
which `klent uci` reads to play at a chosen ``UCI_Elo`` (`klent.engine.player.strength`).  A
curve whose ratings do not rise with the simulations is refused: more games settle it.

    klent bench strength_curve --model weights/chess.onnx --scale "Stockfish 15.1 UCI_Elo" \\
        --command "benchmarks/strength/chess.sh ..." 1:runs/strength/reactive=1350 64:runs/strength/g64=1350
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path

from klent.bench.ladder import parse_rung
from klent.engine.player import StrengthCurve, StrengthPoint
from klent.engine.player.strength import curve_path, model_digest
from klent.matchplay.records import read_results
from klent.matchplay.results import summarise
from klent.matchplay.stats import fit_rating


def parse_point(text: str) -> tuple[int, Path, float]:
    """``SIMULATIONS:FOLDER=RATING`` as its three parts; argparse's error when malformed."""
    simulations, sep, rung = text.partition(":")
    folder, rating = parse_rung(rung)
    if not sep or not simulations.isdigit() or int(simulations) < 1 or rating is None:
        raise argparse.ArgumentTypeError(
            f"a point is SIMULATIONS:FOLDER=RATING (simulations >= 1; 1 is reactive play), not {text!r}")
    return int(simulations), folder, rating


def build_curve(model: Path, scale: str, command: str, points: list[tuple[int, Path, float]]) -> StrengthCurve:
    """One point per number of simulations, its folders rated together; ValueError when a
    folder cannot be read, a setting won or lost every game, or the ratings do not rise."""
    rungs = defaultdict(list)
    for simulations, folder, anchor in points:
        rungs[simulations].append((anchor, summarise(read_results(folder))))
    measured = []
    for simulations in sorted(rungs):
        rating = fit_rating(rungs[simulations])
        if not math.isfinite(rating.elo):
            raise ValueError(f"{simulations} simulations won or lost every game: no rating; play a nearer anchor")
        games = sum(summary.games for _, summary in rungs[simulations])
        measured.append(StrengthPoint(simulations, round(rating.elo, 1), round(rating.low, 1),
                                      round(rating.high, 1), games))
    return StrengthCurve(model_digest(model), scale, command, tuple(measured))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench strength_curve", description=__doc__.split("\n")[0])
    parser.add_argument("points", type=parse_point, nargs="+", metavar="SIMULATIONS:FOLDER=RATING",
                        help="a match folder of the model at SIMULATIONS a move (1: reactive) and its anchor's Elo")
    parser.add_argument("--model", type=Path, required=True, help="the ONNX model the matches played")
    parser.add_argument("--scale", required=True, help="what the anchors' ratings are, e.g. 'Stockfish 15.1 UCI_Elo'")
    parser.add_argument("--command", default="", help="how the matches were played, kept in the curve")
    parser.add_argument("--out", type=Path, help="where to write the curve (default: beside the model)")
    args = parser.parse_args(argv)
    try:
        curve = build_curve(args.model, args.scale, args.command, args.points)
        out = args.out or curve_path(args.model)
        curve.save(out)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    print("| simulations | games | rating (95 %) |")
    print("|---|---|---|")
    for point in curve.points:
        print(f"| {point.simulations} | {point.games} | {point.elo:.0f} ({point.low:.0f} to {point.high:.0f}) |")
    print(f"UCI_Elo {curve.lowest} to {curve.highest}; written to {out}")
    return 0
