"""How often a Go model's policy plays its teacher's move, by the board images it averages over.

`klent bench agreement` replays the validation games of a Go labelled set (`klent distill label
--game go9|go13|go19`: games no training run fits), evaluates each stored position with the
model's outputs averaged over each count of board symmetries asked (`klent.engine.symmetric`)
and counts the positions where the policy's most probable move is the teacher's.  The first
count's row is the network alone (1 symmetry); the others say what averaging buys, before any
game is played.  One ONNX Runtime thread, ``--batch`` positions a call.

    klent bench agreement --model weights/go19.onnx --labels data/go19-l1 --symmetries 1 8
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from tqdm import tqdm

from klent.engine.games.base import State
from klent.engine.network import OnnxEvaluator
from klent.engine.symmetric import SymmetricEvaluator


def held_out_moves(folder: Path, limit: int | None = None) -> tuple[str, list[tuple[State, int]]]:
    """The game of a Go labelled set and its validation positions (the first ``limit``), each
    with the teacher's move."""
    from klent.training.distill import shard_states
    from klent.training.shards import LabelConfig, Manifest, read_shard, rules

    manifest = Manifest.read(folder)
    if manifest is None:
        raise ValueError(f"{folder} holds no labelled set")
    config = LabelConfig(**manifest.config)
    if not config.game.startswith("go"):
        raise ValueError(f"{folder} holds {config.game} positions; agreement reads a Go set's teacher moves")
    replay = rules(config.game)
    found: list[tuple[State, int]] = []
    for name in manifest.shards:
        shard = read_shard(folder / name)
        for position, _, state in shard_states(shard, replay, config.is_validation):
            found.append((state, int(shard["teacher_action"][position])))
            if limit is not None and len(found) == limit:
                return config.game, found
    if not found:
        raise ValueError(f"{folder} has no validation position")
    return config.game, found


def agreement_rows(model: str, game_name: str, positions: list[tuple[State, int]], counts: list[int],
                   batch: int) -> Iterator[str]:
    """One line a symmetry count: the share of ``positions`` whose argmax is the teacher's move."""
    import klent.engine.games

    network = OnnxEvaluator(model, game=klent.engine.games.get(game_name), threads=1)
    teacher = np.array([move for _, move in positions])
    for count in counts:
        evaluator = SymmetricEvaluator(network, count)
        chosen = np.empty(len(positions), dtype=np.int64)
        began = time.perf_counter()
        for start in tqdm(range(0, len(positions), batch), desc=f"{count} of 8 symmetries", unit="batch", leave=False):
            states = [state for state, _ in positions[start : start + batch]]
            chosen[start : start + len(states)] = evaluator.evaluate(states).policy_logits.argmax(axis=1)
        seconds = (time.perf_counter() - began) / len(positions)
        yield (f"{count} symmetr{'y' if count == 1 else 'ies'}: top-1 {float((chosen == teacher).mean()):.4f} "
               f"({len(positions)} positions, {seconds * 1000:.1f} ms a position)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench agreement", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a Go ONNX model that plays the set's board size")
    parser.add_argument("--labels", type=Path, required=True, help="a Go labelled set (`klent distill label`)")
    parser.add_argument("--symmetries", type=int, nargs="+", default=[1, 8],
                        help="board images averaged over, one row each (1 to 8; default: 1 8)")
    parser.add_argument("--positions", type=int, default=None, help="the first N validation positions (default: all)")
    parser.add_argument("--batch", type=int, default=64, help="positions a network call (default 64)")
    args = parser.parse_args(argv)
    if any(not 1 <= count <= 8 for count in args.symmetries):
        parser.error("--symmetries counts are 1 to 8")
    if args.batch < 1 or (args.positions is not None and args.positions < 1):
        parser.error("--batch and --positions must be >= 1")
    try:
        game_name, positions = held_out_moves(args.labels, args.positions)
        print(f"{args.model} on {args.labels} ({game_name}):", flush=True)
        for row in agreement_rows(args.model, game_name, positions, args.symmetries, args.batch):
            print(row, flush=True)
    except (OSError, ValueError) as error:
        parser.exit(2, f"klent bench agreement: {error}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
