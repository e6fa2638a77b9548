"""Centred action values: a model whose action values are biased one way for every player gets
them shifted back, so that a position's value and the next position's agree.

    centre("weights/chess.onnx", "/tmp/chess-centred.onnx", games=64)  # -> Centring

Why: a model without a value head values a position as V = sum pi Q (the KLENT paper's V).  For
a calibrated model the value of a position and that of the position after a move are opposite,
V(s) + V(s') = 0 on average over the model's own games.  The chess model distilled from
Stockfish's value of every legal move was not: its Q regresses towards the mean of all legal
moves, most of which lose material, so every side to move looks worse off than it is
(docs/experiments/2026-11-29-chess-action-value-bias.md has the numbers).  In a search, leaf
values then carry that bias with the sign of their depth's parity: a move read one ply deep
gains it, a move read two plies deep loses it, and a move never visited keeps the network's
biased Q.  Adding half the mean back to every action value (clipped to [-1, 1]) removes the
bias where the search mixes depths; the moves' order in a position, and so the policy and
reactive play, do not change.

The offset is measured on the model's games against itself, each move drawn from its policy
(the positions a search's tree holds are the ones the policy leads to), from the initial
position or from given openings and for at most a given number of plies: the bias is not the
same in every phase of a game (largest in the opening and middlegame), so the offset depends on
where it is measured.  It is written into
the model: the graph's action values pass through Add and Clip, and the metadata
``klent.q_offset`` records the offset.  Whether it plays better is a match question
(benchmarks/RESULTS.md, "Chess strength").
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from klent.engine.files import atomic_target
from klent.engine.games.base import State
from klent.engine.network import ACTION_VALUE_OUTPUT, STATE_VALUE_OUTPUT, OnnxEvaluator, softmax, state_values

OFFSET_KEY = "klent.q_offset"


@dataclass(frozen=True)
class Centring:
    """The consistency of a model's values before and after centring."""

    pairs: int  # consecutive positions measured
    mean_sum: float  # mean of V(s) + V(s') before
    below_zero: float  # share of the pairs whose sum is below 0, before
    offset: float  # what was added to every action value

    def summary(self) -> str:
        return (f"V(s) + V(s') averaged {self.mean_sum:+.3f} over {self.pairs} pairs of consecutive positions "
                f"({100 * self.below_zero:.0f} % below 0); action values shifted by {self.offset:+.3f}")


def successive_sums(evaluator: OnnxEvaluator, starts: Sequence[State], plies: int | None,
                    rng: np.random.Generator) -> np.ndarray:
    """V(s) + V(s') for every pair of consecutive positions of the model's games against itself
    from each of ``starts`` (``plies`` moves of each at most, None: to the end), each move drawn
    from its policy, V = sum pi Q as the search computes it; all games advanced together, so
    that each move is one batch."""
    states = [start for start in starts if not start.is_terminal]
    previous: list[float | None] = [None] * len(states)
    sums: list[float] = []
    ply = 0
    while states and (plies is None or ply <= plies):
        evaluation = evaluator.evaluate(states)  # one call values the positions and draws the moves
        values = state_values(evaluation)
        policies = softmax(evaluation.policy_logits.astype(np.float64))
        sums += [before + float(value) for before, value in zip(previous, values) if before is not None]
        following, carried = [], []
        for state, policy, value in zip(states, policies, values):
            after = state.play(int(rng.choice(policy.size, p=policy)))
            if not after.is_terminal:
                following.append(after)
                carried.append(float(value))
        states, previous = following, list(carried)
        ply += 1
    return np.array(sums)


def shifted_model(model: onnx.ModelProto, offset: float) -> onnx.ModelProto:
    """``model`` with ``offset`` added to its action values, clipped to [-1, 1]."""
    shifted = onnx.ModelProto()
    shifted.CopyFrom(model)
    graph = shifted.graph
    producers = [node for node in graph.node if ACTION_VALUE_OUTPUT in node.output]
    if len(producers) != 1:
        raise ValueError(f"the model has no single {ACTION_VALUE_OUTPUT!r} output to shift")
    node = producers[0]
    node.output[list(node.output).index(ACTION_VALUE_OUTPUT)] = "action_values_uncentred"
    graph.initializer.extend([numpy_helper.from_array(np.array(v, np.float32), name)
                              for v, name in ((offset, "q_offset"), (-1.0, "q_min"), (1.0, "q_max"))])
    graph.node.extend([
        helper.make_node("Add", ["action_values_uncentred", "q_offset"], ["action_values_centred"],
                         name="q_offset_add"),
        helper.make_node("Clip", ["action_values_centred", "q_min", "q_max"], [ACTION_VALUE_OUTPUT],
                         name="q_offset_clip"),
    ])
    helper.set_model_props(shifted, {**{p.key: p.value for p in model.metadata_props}, OFFSET_KEY: f"{offset:.6f}"})
    onnx.checker.check_model(shifted)
    return shifted


def centre(source: str | os.PathLike[str], target: str | os.PathLike[str], games: int = 64,
           starts: Sequence[State] = (), plies: int | None = None, seed: int = 0) -> Centring:
    """Write ``source`` with its action values centred to ``target``, measured over ``games``
    games from the initial position or, when given, one game from each of ``starts``, each
    ``plies`` moves long at most; ValueError for a model that has a value head (its V does not
    come from Q), is centred already, or would overwrite itself."""
    if os.path.abspath(source) == os.path.abspath(target):
        raise ValueError(f"{target}: the centred model would overwrite its source")
    if games < 1 or (plies is not None and plies < 1):
        raise ValueError("the numbers of games and plies must be at least 1")
    model = onnx.load(os.fspath(source))
    if any(p.key == OFFSET_KEY for p in model.metadata_props):
        raise ValueError(f"{source} is centred already")
    if any(output.name == STATE_VALUE_OUTPUT for output in model.graph.output):
        raise ValueError(f"{source} has a value head: its positions are valued by it, not by its action values")
    evaluator = OnnxEvaluator(source)
    starts = list(starts) or [evaluator.game.initial_state() for _ in range(games)]
    sums = successive_sums(evaluator, starts, plies, np.random.default_rng(seed))
    if sums.size == 0:
        raise ValueError("the self-play games ended before two positions could be compared")
    offset = float(-sums.mean() / 2)
    with atomic_target(target) as tmp:
        onnx.save(shifted_model(model, offset), os.fspath(tmp))
    return Centring(int(sums.size), float(sums.mean()), float((sums < 0).mean()), offset)
