"""`Evaluator` over a live torch `KlentNet`, for self-play and training.

It returns exactly what `klent.engine.network.OnnxEvaluator` returns for the exported model (same
masking, same dtypes), so search and self-play code run unchanged on either; the export parity
test holds the two to 1e-4.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from klent.engine.games.base import Game, State
from klent.engine.network import Evaluation, apply_legal_mask, encode_states
from klent.training.nets import KlentNet


def default_device() -> torch.device:
    """The first GPU when there is one, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TorchEvaluator:
    """Evaluates states of ``game`` with ``model`` in inference mode on ``device``.

    The model is put in eval mode (batch-norm running statistics) on every call, because the
    trainer switches the same module to train mode between self-play phases.
    """

    def __init__(self, model: KlentNet, game: Game, device: str | torch.device | None = None):
        if tuple(model.observation_shape) != tuple(game.observation_shape) or (
            model.num_actions != game.num_actions
        ):
            raise ValueError(
                f"network shaped for {model.observation_shape} -> {model.num_actions} actions "
                f"does not fit {game.name}"
            )
        self.device = torch.device(device) if device is not None else default_device()
        self.model = model.to(self.device)
        self.game = game

    def evaluate(self, states: Sequence[State]) -> Evaluation:
        """Encode ``states`` and evaluate them in one batch."""
        return self.evaluate_encoded(*encode_states(self.game, states))

    def evaluate_encoded(self, obs: np.ndarray, masks: np.ndarray) -> Evaluation:
        """Evaluate encoded observations float32[B, C, H, W] with legal masks bool[B, A].

        A model without an action-value head reports action values of 0, as the ONNX evaluator
        does.
        """
        self.model.eval()
        with torch.inference_mode():
            out = self.model(torch.as_tensor(obs, dtype=torch.float32, device=self.device))
            logits, q, v, ownership, score = (None if t is None else t.float().cpu().numpy() for t in out)
        assert logits is not None
        logits, q = apply_legal_mask(logits, q if q is not None else np.zeros_like(logits), masks)
        return Evaluation(logits, q, v, ownership, score)
