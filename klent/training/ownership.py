"""Go's dense targets: the final owner of every point and the final score (KataGo, Wu 2019).

A game result is one bit per game; the final ownership map is 81 on 9x9, and the score says by
how much.  KataGo's table 2 credits these auxiliary targets with about 1.65x fewer evaluations
to equal strength, and they give the engine a referee's view of dead stones at play time.

Targets are from the view of the player to move at the sample, like every value in klent:
+1 = that player's point at the end of the game, -1 = the opponent's, 0 = neither (dame, or a
seki's shared liberties under area scoring).  The score target is the final area score in
points, komi included.  In self-play, games end by two passes under Tromp-Taylor rules, so the
final board itself is the truth (dead stones have been captured); a resigned or move-capped
game has no final ownership and its samples get none (NaN, like a missing Q target).  In a
teacher's labels (`klent.training.teacher`), the teacher's ``final_status_list`` has judged the dead
stones.

Losses: ownership is a per-point binary cross-entropy of P(owner = side to move) = (1 + o) / 2
(KataGo's form), averaged over points; the score a Huber loss in units of the board's side
(9 points on 9x9), so one weight serves every size.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from klent.training.nets import NetOutputs


def final_targets(final_board_owner: np.ndarray, komi: float, player: int) -> tuple[np.ndarray, float]:
    """Ownership (float32[points]) and score of a finished game for ``player`` (0 = Black):
    ``final_board_owner`` is the game's final owner map from Black's view (+1 / -1 / 0)."""
    sign = 1.0 if player == 0 else -1.0
    owner = final_board_owner.reshape(-1).astype(np.float32)
    return owner * sign, float(sign * (owner.sum() - komi))


def ownership_loss(predicted: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per sample, the mean over points of the binary cross-entropy of (1 + o) / 2 against
    (1 + t) / 2; ``predicted`` [B, H, W] (tanh output), ``target`` [B, H*W] in [-1, 1]."""
    probability = ((1.0 + predicted.flatten(1)) / 2.0).clamp(1e-6, 1.0 - 1e-6)
    return F.binary_cross_entropy(probability, (1.0 + target) / 2.0, reduction="none").mean(dim=1)


def score_loss(predicted: torch.Tensor, target: torch.Tensor, board_side: int) -> torch.Tensor:
    """Per sample, Huber loss of the score error in units of ``board_side`` points."""
    return F.huber_loss(predicted / board_side, target / board_side, reduction="none", delta=1.0)


def auxiliary_loss(
    outputs: NetOutputs,
    batch: dict[str, torch.Tensor],
    ownership_weight: float,
    score_weight: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The weighted ownership and score losses over the samples that have targets (rows of
    ``batch["ownership"]`` not NaN); zero for a network without those heads or a batch without
    targets."""
    total = outputs.policy_logits.new_zeros(())
    parts: dict[str, torch.Tensor] = {}
    target = batch.get("ownership")
    if target is None:
        return total, parts
    known = ~torch.isnan(target[:, 0])
    count = known.sum().clamp(min=1)
    if outputs.ownership is not None:
        losses = ownership_loss(outputs.ownership, torch.nan_to_num(target))
        loss = torch.where(known, losses, torch.zeros_like(losses)).sum() / count
        total = total + ownership_weight * loss
        parts["ownership_loss"] = loss.detach()
    if outputs.score is not None:
        side = int(round(target.shape[1] ** 0.5))
        losses = score_loss(outputs.score, torch.nan_to_num(batch["score"]), side)
        loss = torch.where(known, losses, torch.zeros_like(losses)).sum() / count
        total = total + score_weight * loss
        parts["score_loss"] = loss.detach()
    return total, parts
