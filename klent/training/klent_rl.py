"""KLENT (Ota et al.): self-play, targets and loss, readable top to bottom.

KLENT is model-free: the network gives a policy pi_theta and action values Q_theta, and no
search is run during training.  Everything the algorithm adds on top of plain self-play is in
this file:

1. the improved policy pi'(a|s) ~ exp((Q(s,a) + beta log pi(a|s)) / (alpha + beta)), the
   closed-form maximiser of E_pi'[Q] - beta KL(pi' || pi) + alpha H(pi') (paper eq. 3,
   appendix A); self-play samples its moves from pi';
2. the state-value estimate v(s) = sum_a pi'(a|s) Q(s,a) (eq. 6);
3. lambda-returns over alternating players (eq. 4), the targets of Q_theta;
4. the loss CE(pi', pi_theta) + (Q_theta(S, A) - G)^2 (eq. 7);
5. self-play: a window of moves sampled from pi' in every game slot, and its targets;
6. `Klent`, the algorithm as the trainer runs it (`klent.training.algorithm.Algorithm`),
   optionally with a teacher's labelled positions beside its games: their action values are
   fitted too (`batch_loss`), so that Q_theta, which shapes pi', stays on what a strong engine
   sees while the policy learns from self-play.
The ablation presets of the paper's table 2 come first.

Steps 1-3 and 5 run in numpy on self-play data (float64, log space); step 4 is torch.  The game
slots that self-play continues across iterations are shared with the Gumbel AlphaZero baseline
(`klent.training.selfplay.GameSlots`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from klent.engine.games.go import GoState
from klent.engine.network import EncodedEvaluator, Evaluation
from klent.training.fitting import Batch, Loss
from klent.training.nets import NetOutputs
from klent.training.ownership import final_targets
from klent.training.selfplay import GameSlots, Samples, StepResult, sample_actions

if TYPE_CHECKING:
    from klent.training.distill import Distill

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


def batch_loss(
    outputs: NetOutputs, batch: dict[str, torch.Tensor], teacher_weight: float = 0.0
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """`klent_loss` on a minibatch of `Samples` fields; where the minibatch also holds teacher
    positions (``q_targets``, value weight 0), `klent_loss` over the self-play rows plus
    ``teacher_weight`` times the mean `q_squared_errors` of the teacher's, each a mean over its own
    rows."""
    if "q_targets" not in batch:
        return klent_loss(
            outputs.policy_logits, outputs.action_values, batch["masks"], batch["actions"], batch["policy"],
            batch["returns"],
        )
    own = batch["value_weight"] > 0
    zero = outputs.action_values.sum() * 0.0  # keeps the graph when a minibatch lacks one kind of row
    loss, parts = zero, {"policy_loss": zero.detach(), "value_loss": zero.detach()}
    if own.any():
        loss, parts = klent_loss(
            outputs.policy_logits[own], outputs.action_values[own], batch["masks"][own], batch["actions"][own],
            batch["policy"][own], batch["returns"][own],
        )
    teacher = zero
    if (~own).any():
        teacher = q_squared_errors(outputs.action_values[~own], batch["q_targets"][~own]).mean()
    return loss + teacher_weight * teacher, {**parts, "teacher_q_loss": teacher.detach()}


def q_squared_errors(action_values: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per position, the mean of (Q_theta - Q_teacher)^2 over its labelled moves (``targets``
    NaN elsewhere): each position weighs the same, however many moves it has."""
    labelled = ~torch.isnan(targets)
    errors = torch.where(labelled, action_values - torch.nan_to_num(targets), torch.zeros_like(targets))
    return errors.square().sum(dim=-1) / labelled.sum(dim=-1).clamp(min=1)


# ---------------------------------------------------------------------------------------------
# 5. Self-play
# ---------------------------------------------------------------------------------------------


def collect(
    slots: GameSlots,
    evaluator: EncodedEvaluator,
    config: KlentConfig,
    steps: int,
    resign_threshold: float = 0.0,
    ownership_targets: bool = False,
    reference: EncodedEvaluator | None = None,
) -> Samples:
    """Play ``steps`` moves in every slot with actions sampled from pi' and build the targets.

    pi' takes its KL term against the policy of ``reference`` when one is given (a fixed
    network: the run's start, `klent.training.config.KL_REFERENCES`), else against the evaluator's
    own; the action values are always the evaluator's.

    Network calls: one per move across all slots, plus one at the window end to value the
    states the running games stopped in (their bootstrap v).  With ``resign_threshold`` > 0 a
    mover whose v is below -resign_threshold resigns after its move where its slot allows it
    (see `GameSlots.step`): that move's return is then -1, close to what its Q (about v, below
    -resign_threshold) already said.  With ``ownership_targets`` (Go), the samples of every
    game that ends by the rules inside this window also get its final ownership and score
    (`klent.training.ownership`); the others (games that go on past the window, resign or hit the move
    cap) get NaN.
    """
    count = len(slots)
    shape = (steps, count)
    obs = np.empty((steps, count, *slots.game.observation_shape), dtype=np.float32)
    masks = np.empty((steps, count, slots.game.num_actions), dtype=np.bool_)
    policy = np.empty((steps, count, slots.game.num_actions), dtype=np.float32)
    actions = np.empty(shape, dtype=np.int64)
    values = np.empty((steps + 1, count))
    q_taken = np.empty(shape)
    rewards = np.empty(shape)
    terminal = np.empty(shape, dtype=np.bool_)
    truncated = np.empty(shape, dtype=np.bool_)
    points = int(np.prod(slots.game.observation_shape[1:]))
    ownership = np.full((steps, count, points), np.nan, dtype=np.float32) if ownership_targets else None
    score = np.full(shape, np.nan, dtype=np.float32)
    players = np.empty(shape, dtype=np.int8)
    game_start = np.zeros(count, dtype=np.int64)  # first step of each slot's game in this window
    entropy_sum = kl_sum = 0.0
    game_lengths: list[int] = []
    resignations = would_resign = false_resignations = 0

    for t in range(steps):
        obs[t], masks[t] = slots.observe()
        players[t] = [state.to_play for state in slots.states]
        out = evaluator.evaluate_encoded(obs[t], masks[t])
        prior_logits = _kl_prior(out, reference, obs[t], masks[t])
        pi_improved = improved_policy(prior_logits, out.action_values, masks[t], config)
        values[t] = state_value(pi_improved, out.action_values)
        actions[t] = sample_actions(pi_improved, slots.rng)
        q_taken[t] = out.action_values[np.arange(count), actions[t]]
        policy[t] = pi_improved
        entropy_sum += entropy(pi_improved).sum()
        log_prior = masked_log_softmax(prior_logits, masks[t])
        kl_sum += kl_divergence(pi_improved, log_prior).sum()
        hopeless = values[t] < -resign_threshold if resign_threshold > 0 else None
        result = slots.step(actions[t], hopeless)
        rewards[t], terminal[t], truncated[t] = result.rewards, result.terminal, result.truncated
        if ownership is not None:
            _fill_final_targets(ownership, score, players, game_start, t, result)
        game_lengths += [s.move_number for s in result.final_states if s is not None]
        resignations += int(result.resigned.sum())
        would_resign += int(result.would_resign.sum())
        false_resignations += int(result.false_resignations.sum())

    # Bootstrap v of the states the window stopped in (all running games: finished ones were
    # restarted).  At a move-cap cut the cut-off state has no legal moves to value, so it is
    # valued by the network's own estimate of the move that led there: v(S_{t+1}) = -Q(S_t, A_t).
    end_obs, end_masks = slots.observe()
    end = evaluator.evaluate_encoded(end_obs, end_masks)
    end_prior = _kl_prior(end, reference, end_obs, end_masks)
    values[steps] = state_value(improved_policy(end_prior, end.action_values, end_masks, config), end.action_values)
    returns = lambda_returns(rewards, values, terminal, truncated, -q_taken, config.lam)

    samples = steps * count
    stats = {
        "entropy": entropy_sum / samples,
        "kl": kl_sum / samples,
        "abs_q_error": float(np.abs(q_taken - returns).mean()),
        "games_finished": float(len(game_lengths)),
        "game_length": float(np.mean(game_lengths)) if game_lengths else float("nan"),
    }
    if resign_threshold > 0:
        stats["resigned"] = float(resignations)
        # Of the finished games nobody could resign in which a player judged its position lost:
        # the share that player went on to win (AlphaGo Zero kept this under 5%).
        stats["false_resignation_rate"] = (
            false_resignations / would_resign if would_resign else float("nan")
        )
    return Samples(
        obs=obs.reshape(samples, *obs.shape[2:]),
        masks=masks.reshape(samples, -1),
        actions=actions.reshape(samples),
        policy=policy.reshape(samples, -1),
        returns=returns.astype(np.float32).reshape(samples),
        value_weight=np.ones(samples, dtype=np.float32),
        simulator_evaluations=samples + count,
        stats=stats,
        ownership=None if ownership is None else ownership.reshape(samples, points),
        score=None if ownership is None else score.reshape(samples),
    )


def _kl_prior(
    own: Evaluation, reference: EncodedEvaluator | None, obs: np.ndarray, masks: np.ndarray
) -> np.ndarray:
    """The policy logits pi' takes its KL term against: the reference network's, else the
    evaluator's own (``own``)."""
    return own.policy_logits if reference is None else reference.evaluate_encoded(obs, masks).policy_logits


def _fill_final_targets(
    ownership: np.ndarray,
    score: np.ndarray,
    players: np.ndarray,
    game_start: np.ndarray,
    t: int,
    result: StepResult,
) -> None:
    """After step ``t``: the final ownership and score (`klent.training.ownership.final_targets`) of
    every Go game that ended by its rules, written into its samples of this window; each ended
    game's slot starts a new game at step t + 1."""
    for slot, final in enumerate(result.final_states):
        if final is None:
            continue
        if result.terminal[slot] and not result.resigned[slot]:
            if not isinstance(final, GoState):
                raise TypeError("ownership targets need a Go game")
            owner, komi = final.ownership(), final.game.komi
            for row in range(int(game_start[slot]), t + 1):
                ownership[row, slot], score[row, slot] = final_targets(owner, komi, int(players[row, slot]))
        game_start[slot] = t + 1


# ---------------------------------------------------------------------------------------------
# 6. The algorithm as the trainer runs it
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Klent:
    """KLENT self-play (`klent.training.algorithm.Algorithm`): ``steps`` moves per game slot and
    iteration, sampled from pi' of the current network; ``preset`` names ``config`` in model
    files; ``resign_threshold``, ``ownership_targets`` and ``reference`` as in `collect`;
    ``reference_sha256`` fingerprints the reference's weights (`klent.training.checkpoint.weights_hash`).

    With a ``teacher`` (a run's ``[distill] data``), each iteration's samples also hold that
    distillation's positions of the iteration, whose action values are fitted with the
    distillation's ``q_weight`` (`batch_loss`); their policy target is dropped, so the policy learns from
    self-play alone.  Validation is then the teacher's held-out metrics.
    """

    config: KlentConfig
    preset: str
    steps: int
    resign_threshold: float = 0.0
    ownership_targets: bool = False
    reference: EncodedEvaluator | None = None
    reference_sha256: str = ""
    teacher: Distill | None = None
    plays_games: bool = True

    def collect(self, slots: GameSlots, network: Callable[[], EncodedEvaluator], iteration: int) -> Samples:
        own = collect(
            slots, network(), self.config, self.steps, self.resign_threshold, self.ownership_targets, self.reference
        )
        if self.teacher is None:
            return own
        return with_teacher(own, self.teacher.collect(slots, network, iteration))

    def loss(self, outputs: NetOutputs, batch: Batch) -> Loss:
        return batch_loss(outputs, batch, 0.0 if self.teacher is None else self.teacher.config.q_weight)

    def validate(self, model: torch.nn.Module, device: torch.device) -> dict[str, float]:
        return {} if self.teacher is None else self.teacher.validate(model, device)

    def provenance(self) -> dict[str, str]:
        info = {"algorithm": f"klent:{self.preset}"}
        if self.reference is not None:
            info.update(kl_reference="init", kl_reference_sha256=self.reference_sha256)
        if self.teacher is not None:  # the values are on the teacher's scale
            taught = self.teacher.provenance()
            info.update(labels=taught["labels"], value_scale=taught["value_scale"])
        return info


def with_teacher(own: Samples, teacher: Samples) -> Samples:
    """Self-play samples followed by a teacher's labelled positions: the teacher's rows keep
    their Q targets and drop their policy target and return (value weight 0); the self-play
    rows have no Q targets (NaN).  Ownership and score are kept where both kinds have them."""
    if teacher.q_targets is None:
        raise ValueError("teacher samples need Q targets")
    no_targets = np.full((len(own), teacher.q_targets.shape[1]), np.nan, dtype=np.float32)
    teacher = dataclasses.replace(teacher, policy=np.zeros_like(teacher.policy))
    ownership = score = None
    owners, scores = (own.ownership, teacher.ownership), (own.score, teacher.score)
    if all(array is not None for array in (*owners, *scores)):
        ownership, score = np.concatenate(owners), np.concatenate(scores)
    return Samples(
        obs=np.concatenate([own.obs, teacher.obs]),
        masks=np.concatenate([own.masks, teacher.masks]),
        actions=np.concatenate([own.actions, teacher.actions]),
        policy=np.concatenate([own.policy, teacher.policy]),
        returns=np.concatenate([own.returns, teacher.returns]),
        value_weight=np.concatenate([own.value_weight, np.zeros(len(teacher), dtype=np.float32)]),
        simulator_evaluations=own.simulator_evaluations,
        stats={**own.stats, "teacher_positions": float(len(teacher))},
        q_targets=np.concatenate([no_targets, teacher.q_targets]),
        ownership=ownership,
        score=score,
    )
