"""Symmetry averaging: a network's outputs averaged over images of the board.

A network trained on random rotations and reflections of its positions (klent's trainer turns
each minibatch, as AlphaGo Zero and KataGo do) still answers a position and its images a little
differently.  `SymmetricEvaluator` evaluates every state under the first ``count`` of its game's
board symmetries in one batch, maps each image's outputs back onto the position and averages
them: the policy as the mean of the images' probabilities, action values, state value and score
as means, ownership point by point.  It costs ``count`` network evaluations a position, in one
batch.  What it buys on Go's held-out teacher moves and in games: benchmarks/RESULTS.md,
"Search settings at play".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from klent.engine.games.base import State
from klent.engine.games.symmetry import dihedral
from klent.engine.network import EncodedEvaluator, Evaluation, apply_legal_mask, encode_states, softmax


def inverse(index: int) -> int:
    """The symmetry that undoes symmetry ``index`` of `dihedral` (quarter turns, then a mirror)."""
    return (4 - index) % 4 if index < 4 else index  # a reflection is its own inverse


class SymmetricEvaluator:
    """An `klent.engine.network.Evaluator` whose outputs are ``inner``'s averaged over
    ``count`` board symmetries (1 to the number the game has: 8 for Go, 1 for chess)."""

    def __init__(self, inner: EncodedEvaluator, count: int) -> None:
        self.inner = inner
        self.game = inner.game
        self._table = self.game.symmetries()
        if not 1 <= count <= len(self._table):
            raise ValueError(f"{self.game.name} has {len(self._table)} board symmetries: "
                             f"average over 1 to {len(self._table)}, not {count}")
        self.count = count
        self.info: Any = getattr(inner, "info", None)  # the model's metadata, as `Player` reads it

    def evaluate(self, states: Sequence[State]) -> Evaluation:
        """Encode ``states`` and evaluate them and their images in one batch."""
        return self.evaluate_encoded(*encode_states(self.game, states))

    def evaluate_encoded(self, obs: np.ndarray, masks: np.ndarray) -> Evaluation:
        """The averaged outputs on observations float32[B, C, H, W] with legal masks bool[B, A]."""
        if self.count == 1:
            return self.inner.evaluate_encoded(obs, masks)
        batch, actions = masks.shape
        images = np.concatenate([dihedral(obs, s) for s in range(self.count)])
        image_masks = np.empty((self.count * batch, actions), dtype=np.bool_)
        for s in range(self.count):  # the image of a legal action is legal in the image
            image_masks[s * batch : (s + 1) * batch, self._table[s]] = masks
        out = self.inner.evaluate_encoded(images, image_masks)

        def back(values: np.ndarray) -> np.ndarray:
            """[count, B, A]: each image's per-action outputs read at the position's actions."""
            per_image = values.reshape(self.count, batch, actions)
            return np.stack([per_image[s][:, self._table[s]] for s in range(self.count)])

        probabilities = softmax(back(out.policy_logits)).mean(axis=0)
        with np.errstate(divide="ignore"):  # illegal actions: probability 0, masked below
            logits = np.log(probabilities)
        logits, action_values = apply_legal_mask(logits, back(out.action_values).mean(axis=0), masks)
        ownership = None
        if out.ownership is not None:
            maps = out.ownership.reshape(self.count, batch, *out.ownership.shape[1:])
            ownership = np.stack([dihedral(maps[s], inverse(s)) for s in range(self.count)]).mean(axis=0)
        return Evaluation(
            logits,
            action_values,
            None if out.state_value is None else out.state_value.reshape(self.count, batch).mean(axis=0),
            ownership,
            None if out.score is None else out.score.reshape(self.count, batch).mean(axis=0),
        )
