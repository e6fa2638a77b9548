"""KLENT (Ota et al.): targets and loss, readable top to bottom.

KLENT is model-free: the network gives a policy pi_theta and action values Q_theta, and no
search is run during training.  Everything the algorithm adds on top of plain self-play is in
this file:

1. the improved policy pi'(a|s) ~ exp((Q(s,a) + beta log pi(a|s)) / (alpha + beta)), the
   closed-form maximiser of E_pi'[Q] - beta KL(pi' || pi) + alpha H(pi') (paper eq. 3,
   appendix A); self-play samples its moves from pi';
2. the state-value estimate v(s) = sum_a pi'(a|s) Q(s,a) (eq. 6);
3. lambda-returns over alternating players (eq. 4), the targets of Q_theta;
4. the loss CE(pi', pi_theta) + (Q_theta(S, A) - G)^2 (eq. 7);
5. the ablation presets of the paper's table 2.

Steps 1-3 run in numpy on self-play data (float64, log space); step 4 is torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

# ---------------------------------------------------------------------------------------------
# Hyperparameters and the ablation presets (paper table 2)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KlentConfig:
    """alpha: entropy weight, beta: KL weight, lam: lambda of the lambda-returns."""

    alpha: float = 0.03
    beta: float = 0.1
    lam: float = math.exp(-1 / 8)

    def __post_init__(self) -> None:
        if self.alpha < 0 or self.beta < 0 or self.alpha + self.beta <= 0:
            raise ValueError("KLENT needs alpha >= 0, beta >= 0 and alpha + beta > 0")
        if not 0.0 <= self.lam <= 1.0:
            raise ValueError("KLENT needs 0 <= lambda <= 1")


PRESETS: dict[str, KlentConfig] = {
    "klent": KlentConfig(),
    "kl-only": KlentConfig(alpha=0.0),  # no entropy bonus
    "ent-only": KlentConfig(beta=0.0),  # no KL term: pi' = softmax(Q / alpha), pi_theta ignored
    "one-step": KlentConfig(lam=0.0),  # 1-step TD targets
    "monte-carlo": KlentConfig(lam=1.0),  # game outcomes as targets
}


# ---------------------------------------------------------------------------------------------
# 1-2. Improved policy and state value
# ---------------------------------------------------------------------------------------------


def masked_log_softmax(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """log softmax over the legal actions (``mask`` True); illegal actions get -inf.

    Every row must have at least one legal action (self-play never evaluates a terminal
    state).
    """
    z = np.where(mask, logits.astype(np.float64), -np.inf)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def improved_policy(
    logits: np.ndarray, q: np.ndarray, mask: np.ndarray, config: KlentConfig
) -> np.ndarray:
    """pi'(a|s) for a batch: float64[B, A], zero on illegal actions, rows sum to 1.

    Computed in log space: (Q + beta * log pi) / (alpha + beta) is normalised by log-sum-exp,
    so tiny prior probabilities and the small temperature (alpha + beta = 0.13) neither
    underflow nor overflow.
    """
    log_prior = np.where(mask, masked_log_softmax(logits, mask), 0.0)  # 0, not -inf: beta may be 0
    scores = (q.astype(np.float64) + config.beta * log_prior) / (config.alpha + config.beta)
    return np.exp(masked_log_softmax(scores, mask))


def state_value(pi_improved: np.ndarray, q: np.ndarray) -> np.ndarray:
    """v(s) = sum_a pi'(a|s) Q(s,a), from the view of the side to move (paper eq. 6)."""
    return (pi_improved * q).sum(axis=-1)


def entropy(p: np.ndarray) -> np.ndarray:
    """H(p) per row (0 log 0 = 0)."""
    safe = np.where(p > 0, p, 1.0)
    return -(p * np.log(safe)).sum(axis=-1)


def kl_divergence(p: np.ndarray, log_q: np.ndarray) -> np.ndarray:
    """KL(p || q) per row, with q given as log-probabilities (-inf where p is 0 too)."""
    safe_p = np.where(p > 0, p, 1.0)
    safe_log_q = np.where(p > 0, log_q, 0.0)
    return (p * (np.log(safe_p) - safe_log_q)).sum(axis=-1)


# ---------------------------------------------------------------------------------------------
# 3. Lambda-returns over alternating players
# ---------------------------------------------------------------------------------------------


def lambda_returns(
    rewards: np.ndarray,
    values: np.ndarray,
    terminal: np.ndarray,
    truncated: np.ndarray,
    cut_values: np.ndarray,
    lam: float,
) -> np.ndarray:
    """G_t for a window of T steps of N game slots (time-major arrays), float64[T, N].

    ``rewards[t]``: reward to the player who moved at t (+1 / -1 / 0); ``values[t]`` (T + 1
    rows): v of the state S_t in which move t was chosen, with ``values[T]`` the value of the
    state the window stopped in; ``terminal[t]``: the game ended by its rules after move t;
    ``truncated[t]``: the move cap ended it after move t, and ``cut_values[t]`` is the value of
    that cut-off state from the view of the player who would move there.  After a terminal or
    truncated step the slot holds a new game, so ``values[t + 1]`` belongs to that game and is
    not used for step t.  Every value is from the view of the player to move at its state:

        G_t = r_t + gamma_t * [(1 - lam) * v_{t+1} + lam * G_{t+1}]
        gamma_t = -1 between alternating moves, 0 after a terminal move,
        at a cut (move cap or window end) the return is the bootstrap value: G_{t+1} = v_{t+1}.
    """
    steps = rewards.shape[0]
    returns = np.zeros(rewards.shape, dtype=np.float64)
    next_value = values[steps].astype(np.float64)  # window end: bootstrap from v
    next_return = next_value
    for t in reversed(range(steps)):
        # Where move t cut the game by the move cap, the state after it is valued by the net.
        next_value = np.where(truncated[t], cut_values[t], next_value)
        next_return = np.where(truncated[t], cut_values[t], next_return)
        continued = (1.0 - lam) * next_value + lam * next_return
        returns[t] = rewards[t] - np.where(terminal[t], 0.0, continued)
        next_value = values[t].astype(np.float64)
        next_return = returns[t]
    return returns


# ---------------------------------------------------------------------------------------------
# 4. Loss (paper eq. 7)
# ---------------------------------------------------------------------------------------------


def masked_log_policy(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log pi_theta over legal actions; illegal entries are a large negative number, not -inf,
    so that 0 * log pi stays 0 in the cross-entropy."""
    return F.log_softmax(logits.masked_fill(~mask, -1e9), dim=-1)


def klent_loss(
    logits: torch.Tensor,
    action_values: torch.Tensor,
    mask: torch.Tensor,
    actions: torch.Tensor,
    pi_target: torch.Tensor,
    returns: torch.Tensor,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Mean over the batch of CE(pi', pi_theta) + (Q_theta(S, A) - G)^2.

    ``logits``/``action_values``: raw network outputs [B, A]; ``mask``: legal actions;
    ``actions``: the action taken [B]; ``pi_target``: pi' [B, A]; ``returns``: G [B].
    Returns the loss and its two parts (detached) for logging.
    """
    policy_loss = -(pi_target * masked_log_policy(logits, mask)).sum(dim=-1).mean()
    q_taken = action_values.gather(1, actions[:, None]).squeeze(1)
    value_loss = (q_taken - returns).square().mean()
    loss = policy_loss + value_loss
    return loss, {"policy_loss": policy_loss.detach(), "value_loss": value_loss.detach()}
