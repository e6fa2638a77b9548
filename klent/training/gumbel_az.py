"""The Gumbel AlphaZero baseline (Danihelka et al. 2022), as the KLENT paper ran it.

A policy + state-value network (`NetConfig(value_head=True, action_value_head=False)`) plays
itself with Gumbel MCTS of ``simulations`` simulations per move (`klent.engine.search`, the paper's
appendix C: 32).  The move played is the search's choice (Gumbel-Top-k sampling, scale 1, is
the exploration); the policy target is the search's improved policy softmax(logits +
sigma(completed Q)); the value target is the game's outcome from the view of the player to
move.  Game slots, restarts and carried-over games are shared with KLENT self-play
(`klent.training.selfplay.GameSlots`).  As in the paper's Pgx/mctx implementation, a game still
running when the collection window closes gives no value target for that window's samples
(their value weight is 0); a game ended by the move cap is scored by the game's rules (the
baseline has no bootstrap value for it).

Simulator evaluations are counted the paper's way: every state the network is asked about
during self-play, root and search leaves alike.  `GumbelAZ` is the algorithm as the trainer
runs it (`klent.training.algorithm.Algorithm`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
import torch
from pydantic import Field, ValidationError

from klent.engine.games.base import State
from klent.engine.network import Evaluation, Evaluator
from klent.engine.search import GumbelConfig, SearchLimits, search
from klent.engine.settings import Int, check_arguments, one_line, section
from klent.training import klent_rl
from klent.training.fitting import Batch, Loss
from klent.training.nets import NetOutputs
from klent.training.selfplay import GameSlots, Samples


@section
class GumbelAZConfig:
    """Simulations per self-play move, and the search's own settings (Gumbel scale 1 here)."""

    simulations: Annotated[Int, Field(ge=1)] = 32
    search: GumbelConfig = GumbelConfig()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GumbelAZConfig:
        """From a config's ``[gumbel_az]`` table: ``simulations`` plus any `GumbelConfig` field;
        a mistake is a one-line ValueError naming the key."""
        settings = dict(data)
        simulations = settings.pop("simulations", cls.simulations)
        check_arguments("[gumbel_az]", GumbelConfig, settings)
        try:
            return cls(simulations=simulations, search=GumbelConfig(**settings))
        except ValidationError as error:
            raise ValueError(one_line(error, lambda loc: "[gumbel_az] simulations")) from None
        except ValueError as error:  # the search's own checks
            raise ValueError(f"[gumbel_az] {error}") from None


class CountingEvaluator:
    """An `Evaluator` that counts the states it evaluates (the simulator evaluations)."""

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator
        self.game = evaluator.game
        self.count = 0

    def evaluate(self, states: Sequence[State]) -> Evaluation:
        self.count += len(states)
        return self.evaluator.evaluate(states)


def collect(
    slots: GameSlots, evaluator: Evaluator, config: GumbelAZConfig, steps: int
) -> Samples:
    """Play ``steps`` searched moves in every slot; policy and outcome targets."""
    counter = CountingEvaluator(evaluator)
    limits = SearchLimits(simulations=config.simulations)
    count = len(slots)
    game = slots.game
    obs = np.empty((steps, count, *game.observation_shape), dtype=np.float32)
    masks = np.empty((steps, count, game.num_actions), dtype=np.bool_)
    policy = np.empty((steps, count, game.num_actions), dtype=np.float32)
    actions = np.empty((steps, count), dtype=np.int64)
    players = np.empty((steps, count), dtype=np.int64)
    root_values = np.empty((steps, count))
    outcomes = np.zeros((steps, count), dtype=np.float32)
    weights = np.zeros((steps, count), dtype=np.float32)
    open_steps: list[list[int]] = [[] for _ in range(count)]  # this window's steps of each game
    entropy_sum = kl_sum = 0.0
    game_lengths: list[int] = []

    for t in range(steps):
        obs[t], masks[t] = slots.observe()
        players[t] = [state.to_play for state in slots.states]
        results = search(slots.states, counter, limits, config=config.search, rng=slots.rng)
        for i, result in enumerate(results):
            actions[t, i] = result.action
            policy[t, i] = result.improved_policy
            root_values[t, i] = result.value
            entropy_sum += float(klent_rl.entropy(result.improved_policy.astype(np.float64)))
            with np.errstate(divide="ignore"):
                log_prior = np.log(result.prior.astype(np.float64))
            kl_sum += float(klent_rl.kl_divergence(result.improved_policy.astype(np.float64), log_prior))
            open_steps[i].append(t)
        step = slots.step(actions[t])
        for i, final in enumerate(step.final_states):
            if final is None:
                continue
            for s in open_steps[i]:
                outcomes[s, i] = final.reward_for(int(players[s, i]))
                weights[s, i] = 1.0
            open_steps[i] = []
            game_lengths.append(final.move_number)

    samples = steps * count
    scored = weights > 0
    stats = {
        "entropy": entropy_sum / samples,
        "kl": kl_sum / samples,
        "abs_value_error": (
            float(np.abs(root_values - outcomes)[scored].mean()) if scored.any() else float("nan")
        ),
        "games_finished": float(len(game_lengths)),
        "game_length": float(np.mean(game_lengths)) if game_lengths else float("nan"),
    }
    return Samples(
        obs=obs.reshape(samples, *game.observation_shape),
        masks=masks.reshape(samples, -1),
        actions=actions.reshape(samples),
        policy=policy.reshape(samples, -1),
        returns=outcomes.reshape(samples),
        value_weight=weights.reshape(samples),
        simulator_evaluations=counter.count,
        stats=stats,
    )


def batch_loss(
    outputs: NetOutputs, batch: dict[str, torch.Tensor]
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """CE(improved policy, pi_theta) + (V_theta(S) - z)^2 over the samples with an outcome."""
    logits, value = outputs.policy_logits, outputs.state_value
    log_policy = klent_rl.masked_log_policy(logits, batch["masks"])
    policy_loss = -(batch["policy"] * log_policy).sum(dim=-1).mean()
    weight = batch["value_weight"]
    value_loss = (weight * (value - batch["returns"]).square()).sum() / weight.sum().clamp(min=1.0)
    loss = policy_loss + value_loss
    return loss, {"policy_loss": policy_loss.detach(), "value_loss": value_loss.detach()}


@dataclass(frozen=True)
class GumbelAZ:
    """The baseline's self-play (`klent.training.algorithm.Algorithm`): ``steps`` searched moves per
    game slot and iteration."""

    config: GumbelAZConfig
    steps: int
    plays_games: bool = True

    def collect(self, slots: GameSlots, network: Callable[[], Evaluator], iteration: int) -> Samples:
        return collect(slots, network(), self.config, self.steps)

    def loss(self, outputs: NetOutputs, batch: Batch) -> Loss:
        return batch_loss(outputs, batch)

    def validate(self, model: torch.nn.Module, device: torch.device) -> dict[str, float]:
        return {}

    def provenance(self) -> dict[str, str]:
        return {"algorithm": "gumbel-az"}
