"""Network evaluators: a batch of states in, masked policy logits and action values out.

Search and self-play call an `Evaluator` and never care whether ONNX Runtime or torch runs
behind it.  Every value is from the view of the side to move, in [-1, 1].  Illegal actions
carry the logit `MASKED_LOGIT` (a large negative number rather than -inf, so that softmax and
log-softmax stay finite) and the action value 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

import numpy as np

from engine.games.base import Game, State

MASKED_LOGIT = np.float32(-1e9)


class Evaluation(NamedTuple):
    """Network outputs for a batch of B states over A actions."""

    policy_logits: np.ndarray  # float32[B, A]; illegal actions = MASKED_LOGIT
    action_values: np.ndarray  # float32[B, A]; illegal actions = 0
    state_value: np.ndarray | None  # float32[B], or None for a policy + action-value model


class Evaluator(Protocol):
    """Anything that evaluates states of one game in batches."""

    game: Game

    def evaluate(self, states: Sequence[State]) -> Evaluation:
        """Evaluate ``states`` (all of ``game``) in one batch."""
        ...


def softmax(logits: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, stable for masked logits."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    weights = np.exp(shifted)
    return weights / weights.sum(axis=-1, keepdims=True)


def state_values(evaluation: Evaluation) -> np.ndarray:
    """V(s) per state: the value head when the model has one, else sum_a pi(a|s) Q(s, a).

    The second form is how a KLENT network (policy + action values only) values a position
    (KLENT paper, appendix H).
    """
    if evaluation.state_value is not None:
        return evaluation.state_value
    pi = softmax(evaluation.policy_logits.astype(np.float64))
    return (pi * evaluation.action_values).sum(axis=-1).astype(np.float32)


def apply_legal_mask(
    logits: np.ndarray, action_values: np.ndarray, masks: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Mask raw network outputs with ``masks`` (bool[B, A]) as the contract above requires."""
    return (
        np.where(masks, logits, MASKED_LOGIT).astype(np.float32),
        np.where(masks, action_values, np.float32(0.0)).astype(np.float32),
    )
