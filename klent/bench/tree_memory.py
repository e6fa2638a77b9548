"""Memory of the search tree per node, and whether a memory budget holds.

For each game, a `Player` given a tree budget of ``--memory`` MB (`PlayOptions.memory`: UCI
``Hash``, GTP ``--memory``) analyses the initial position (`Player.analyse`: successive searches
on one tree, as UCI ``go infinite`` and GTP ``lz-analyze`` run them) until the tree is full;
with ``--moves N`` it then plays the best move and analyses again on the reused tree, N times.
It prints the nodes reached, the bytes per node of the tree's arrays (node row and edge rows,
as used) and of the positions (`Forest.state_bytes`, estimated by the tree), the tree's own
count of its bytes (`Forest.nbytes`, which the budget bounds) and the growth of the process's
resident memory (RSS, from before the analysis to the process's peak) against the budget.

Each game runs in a fresh process, after a small search that loads the compiled kernels: in a
process that has already searched, RSS would not grow where the allocator reuses the memory an
earlier tree left behind.  The network is a stand-in with random policy logits and values: the
tree's memory depends on the game's positions and legal moves, not on what the network says,
and a real network's own buffers are not the tree's.

    klent bench tree_memory [--games chess go9] [--memory 256] [--moves 0]
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import resource
import threading
from collections.abc import Sequence

import numpy as np

import klent.engine.games
from klent.engine.games.base import Game, State
from klent.engine.network import Evaluation, apply_legal_mask
from klent.engine.player import Decision, Player, PlayOptions
from klent.engine.search.tree import EDGE_ROW_BYTES, NODE_ROW_BYTES

MB = 2**20


class RandomEvaluator:
    """Random logits and action values over the legal moves (a stand-in network)."""

    def __init__(self, game: Game, seed: int = 0) -> None:
        self.game = game
        self.rng = np.random.default_rng(seed)

    def evaluate(self, states: Sequence[State]) -> Evaluation:
        masks = np.stack([s.legal_mask() for s in states])
        logits = self.rng.normal(size=masks.shape).astype(np.float32)
        values = self.rng.uniform(-0.3, 0.3, size=masks.shape).astype(np.float32)
        return Evaluation(*apply_legal_mask(logits, values, masks), None)


def resident_bytes() -> int:
    """The process's resident memory now (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def peak_resident_bytes() -> int:
    """The most resident memory the process has had (Linux reports it in KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def measure(game_name: str, memory_mb: int, moves: int) -> dict[str, float]:
    """Analyse ``game_name``'s initial position until its tree of ``memory_mb`` MB is full, then
    play the best move and analyse again on the reused tree, ``moves`` times."""
    game = klent.engine.games.get(game_name)
    evaluator = RandomEvaluator(game)
    Player(evaluator, seed=0).decide(PlayOptions(simulations=64))  # kernels and first-call caches
    player = Player(evaluator, PlayOptions(memory=memory_mb * MB), seed=0)
    gc.collect()
    before = resident_bytes()
    searches = 0

    def update(decision: Decision) -> bool:
        nonlocal searches
        searches += 1
        return True

    for move in range(moves + 1):
        # Only the action is kept: a decision holds its search's tree, and the old tree kept
        # alive during the next search would be a second tree in memory.
        action = player.analyse(update, threading.Event(), interval=2.0).action
        if move < moves:
            player.play(action)
    tree = player._movers["search"].tree  # the benchmark reads the player's tree directly: nothing else exposes it
    assert tree is not None
    forest = tree.forest
    nodes = forest.num_nodes
    peak = peak_resident_bytes()
    return {
        "searches": searches,
        "nodes": nodes,
        "edges per node": forest.num_edges_used / nodes,
        "array bytes per node": NODE_ROW_BYTES + forest.num_edges_used * EDGE_ROW_BYTES / nodes,
        "state bytes per node": forest.state_bytes / nodes,
        "accounted bytes per node": forest.nbytes / nodes,
        "peak RSS bytes per node": (peak - before) / nodes,
        "accounted MB": forest.nbytes / MB,
        "peak RSS growth MB": (peak - before) / MB,
        "peak RSS growth / budget": (peak - before) / (memory_mb * MB),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench tree_memory", description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=["chess", "go9"], help="games to measure (default: chess go9)")
    parser.add_argument("--memory", type=int, default=256, help="tree budget in MB (default: 256)")
    parser.add_argument("--moves", type=int, default=0,
                        help="moves played after the first analysis, each followed by an analysis on the reused "
                        "tree (default: 0)")
    args = parser.parse_args(argv)
    if args.memory < 1 or args.moves < 0:
        parser.error("--memory must be >= 1 MB and --moves >= 0")
    context = multiprocessing.get_context("spawn")
    for name in args.games:
        with context.Pool(1) as pool:
            figures = pool.apply(measure, (name, args.memory, args.moves))
        print(f"{name} at --memory {args.memory} MB, {args.moves} moves:")
        for key, value in figures.items():
            print(f"  {key:>24}: {value:,.2f}" if key.endswith("budget") else f"  {key:>24}: {value:,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
