"""The slope of a training run: each kept snapshot against one fixed pool of references.

Neither in-training evaluation shows whether a long run still improves: the win rate against
uniform random play saturates, and the one against the previous evaluation's model hovers
near one half by construction.  Playing every snapshot the run kept (``keep_every``:
``snapshots/iteration-NNNNNN.onnx``) and its ``latest.onnx`` against the same references --
say, earlier snapshots -- gives points on one scale, so a trend or its absence can be read off.
The games are those of `klent bench ab` (greedy play, random opening plies, colours
alternating), pooled over the references; the table is Markdown, ready for a model card, and
each row is printed as soon as it is measured.

    klent bench slope runs/go9 --pool runs/go9/snapshots/iteration-0017*.onnx --since 1700
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from klent.bench.ab import head_to_head
from klent.engine.network import OnnxEvaluator
from klent.matchplay.stats import MatchSummary

SNAPSHOT = re.compile(r"iteration-(\d+)\.onnx")


def snapshots(run: Path, since: int) -> list[tuple[str, Path]]:
    """(label, model) of the run's snapshots after iteration ``since``, in order, then latest."""
    found = sorted(
        (int(match.group(1)), path)
        for path in (run / "snapshots").glob("iteration-*.onnx")
        if (match := SNAPSHOT.fullmatch(path.name))
    )
    chosen = [(f"{iteration:,}", path) for iteration, path in found if iteration > since]
    latest = run / "latest.onnx"
    if latest.is_file():
        iterations = OnnxEvaluator(latest).info.training.get("iterations")
        chosen.append((f"{int(iterations):,} (latest)" if iterations else "latest", latest))
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench slope", description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path, help="training run folder (snapshots/, latest.onnx)")
    parser.add_argument("--pool", type=Path, nargs="+", required=True, help="reference ONNX models")
    parser.add_argument("--since", type=int, default=0, help="only snapshots after this iteration")
    parser.add_argument("--games", type=int, default=200, help="games against each reference")
    parser.add_argument("--opening-plies", type=int, default=4, help="random moves at the start of each game")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for path in args.pool:
        if not path.is_file():
            parser.error(f"no model file {str(path)!r}")
    if args.games < 1:
        parser.error("--games must be at least 1")
    references = {path.resolve() for path in args.pool}
    models = [(label, path) for label, path in snapshots(args.run, args.since) if path.resolve() not in references]
    if not models:
        parser.error(f"{args.run}: no snapshots after iteration {args.since} and no latest.onnx")
    games = args.games * len(args.pool)
    print(f"{args.run} against {', '.join(p.name for p in args.pool)}: {args.games} games each, pooled")
    print("\n| iteration | pooled win rate (95 %) | games |\n|---|---|---|")
    for label, path in models:
        summary = MatchSummary.pooled(head_to_head(path, ref, args.games, args.opening_plies, args.seed)
                                      for ref in args.pool)
        low, high = summary.win_rate_low, summary.win_rate_high
        print(f"| {label} | {summary.win_rate:.3f} ({low:.3f}–{high:.3f}) | {games} |", flush=True)
    return 0
