"""`klent bench <name> [options]`: run one benchmark of klent/bench/ and print its figures."""

from __future__ import annotations

import argparse
import importlib

from klent.cli import CommandError

BENCHMARKS = {
    "rules": "play + legal_mask + encode per position (Go, chess, Othello, Hex, Gardner, Animal Shogi)",
    "search": "ONNX Runtime positions/s vs Gumbel search simulations/s (--compare A B: two models side by side)",
    "training": "self-play + training throughput vs the network-only bound",
    "server": "HTTP requests/s and latency with request batching vs one at a time",
    "ab": "head-to-head of two trained models (training A/B runs)",
    "paired": "two klent match rows from the same openings compared game by game (wins, margins, sign test)",
    "ladder": "one Elo rating, with its interval, from matches against rated anchors (FOLDER=ELO ...)",
    "strength_curve": "a model's rating by simulations a move, written beside it for UCI_Elo (SIMS:FOLDER=ELO ...)",
    "slope": "a training run's snapshots against a fixed pool of references",
    "soak": "minutes of mixed HTTP traffic at `klent serve`: RSS over time, errors, latency",
    "chess_regret": "value a chess model's moves give away by play setting (teacher labels, or a match's blunders)",
    "tree_memory": "search-tree bytes per node and process RSS growth against a memory budget (chess, go9)",
    "teacher_cost": "a Go teacher's CPU seconds per labelled position, by board size and level",
    "analysis_speed": "visits/s of klent analysis (KataGo's protocol) beside klent gtp's kata-analyze",
    "endings": "tablebase endings against Stockfish: KRvKR draws kept, KQvK/KRvK/KPvK wins mated",
    "judge": "a judge engine on the Go games engine 1 lost: would it resign there too, where was the game lost",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=sorted(BENCHMARKS), help="; ".join(f"{k}: {v}" for k, v in BENCHMARKS.items()))
    parser.add_argument(
        "options", nargs=argparse.REMAINDER, help="passed to the benchmark (see `klent bench NAME --help`)"
    )


def run(args: argparse.Namespace) -> int:
    try:
        module = importlib.import_module(f"klent.bench.{args.name}")
    except ModuleNotFoundError as error:
        raise CommandError(f"benchmark {args.name!r} is not available: {error}") from None
    return int(module.main(args.options))
