"""Head-to-head of two trained models: the yardstick of training A/B runs.

A training lever (a board-symmetry augmentation, another network size, ...) is measured by
training two runs on the same budget, one with and one without it, and playing their models
against each other.  Both play as the engine's reactive player does (`klent.engine.player`: the
argmax of the policy, and in Go the move rules every protocol applies -- no pass that loses the
count on the board, no filling of one's own eyes), so a model is measured as users meet it;
the first ``--opening-plies`` moves of every game are uniformly random, so that two
deterministic players do not repeat the same two games; colours alternate.  Prints the first
model's wins, losses and draws, its win rate with a Wilson 95% interval and the Elo
difference.

Greedy play between weak models is not transitive, and one snapshot's strength swings from
one export to the next, so a single opponent can mislead.  Given several opponents (a pool of
fixed references, e.g. earlier snapshots of a run), the first model plays ``--games`` against
each, and the pooled result is printed after the per-opponent ones.

``random`` in place of an opponent's file is the uniformly random legal mover: the floor a
model of a new board (a zero-shot transfer, an early snapshot) is first measured against.

``--game`` plays another game than the first model's own: a Go size that models with board
heads serve (a network trained on 13x13 and 19x19 against one trained on 13x13 alone).

    klent bench ab runs/ab/s1/latest.onnx runs/ab/s0/latest.onnx --games 400
    klent bench ab runs/go9/latest.onnx runs/go9/snapshots/*.onnx --games 200
    klent bench ab /tmp/gateau-chess.onnx random --games 100
    klent bench ab runs/mixed/latest.onnx runs/only13/latest.onnx --game go13
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np

import klent.engine.games
from klent.engine.games.base import State
from klent.engine.network import OnnxEvaluator
from klent.engine.player import Player, PlayOptions
from klent.matchplay.stats import MatchSummary
from klent.training.metrics import Agent, play_games, random_agent


def reactive_agent(evaluator: OnnxEvaluator) -> Agent:
    """The engine's reactive move in each state (one network call; Go's move rules for Go).

    Unbatched, unlike the trainer's greedy agent: the rules judge one position at a time.
    """
    player = Player(evaluator, PlayOptions(mode="reactive"))

    def choose(states: Sequence[State]) -> np.ndarray:
        actions = []
        for state in states:
            player.set_position(state)
            actions.append(player.decide().action)
        return np.array(actions, dtype=np.int64)

    return choose


RANDOM = "random"  # the opponent name of the uniformly random legal mover


def head_to_head(
    first: Path, second: Path, games: int, opening_plies: int, seed: int, game_id: str | None = None
) -> MatchSummary:
    """``first``'s results against ``second`` (an ONNX model of the same game, or `RANDOM`) at
    ``game_id`` (default: ``first``'s own game)."""
    game = None if game_id is None else klent.engine.games.get(game_id)
    one = OnnxEvaluator(first, game=game)
    rng = np.random.default_rng(seed)
    if str(second) == RANDOM:
        opponent = random_agent(np.random.default_rng([seed, 1]))
    else:
        two = OnnxEvaluator(second, game=game)
        if one.game.name != two.game.name:
            raise ValueError(f"{first} plays {one.game.name} but {second} plays {two.game.name}")
        opponent = reactive_agent(two)
    return MatchSummary.from_rewards(play_games(one.game, reactive_agent(one), opponent, games, rng, opening_plies))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench ab", description=__doc__.split("\n")[0])
    parser.add_argument("first", type=Path, help="ONNX model the summary is about")
    parser.add_argument("second", type=Path, nargs="+",
                        help=f"ONNX model(s) it plays against; {RANDOM!r}: the uniformly random legal mover")
    parser.add_argument("--games", type=int, default=400, help="games per opponent, colours alternating")
    parser.add_argument("--opening-plies", type=int, default=4, help="random moves at the start of each game")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--game", help="game to play (default: the first model's); a Go size both models serve")
    args = parser.parse_args(argv)
    for path in (args.first, *args.second):
        if not path.is_file() and (path is args.first or str(path) != RANDOM):
            parser.error(f"no model file {str(path)!r}")
    if args.games < 1:
        parser.error("--games must be at least 1")
    summaries = []
    for opponent in args.second:
        print(f"{args.first} vs {opponent}: {args.games} games, {args.opening_plies} random opening plies")
        try:
            summaries.append(head_to_head(args.first, opponent, args.games, args.opening_plies, args.seed, args.game))
        except ValueError as error:  # an unknown game, or a model that does not serve it
            parser.error(str(error))
        print(summaries[-1].text())
    if len(summaries) > 1:
        print(f"pooled over {len(summaries)} opponents: {MatchSummary.pooled(summaries).text()}")
    return 0
