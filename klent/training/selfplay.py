"""Vectorised self-play: N games side by side, one batched network call per move.

As in the paper's implementation (appendix C), every iteration collects a fixed number of
transitions from each of N game slots; a game that ends is replaced at once by a new one, and a
game still running when the window closes carries over into the next iteration.  Its
lambda-returns in this window bootstrap from v at the window end (`klent.training.klent_rl`).

`GameSlots` is what the self-play algorithms share (`klent.training.klent_rl`, `klent.training.gumbel_az`): it
holds the N games, applies the chosen moves, reports rewards / terminal / truncated flags and
restarts finished games (from the Go-Exploit archive when there is one).  Each algorithm's
move choice and targets live in its own module; `Samples` is what every algorithm hands the
trainer to fit.

The evaluator only needs ``evaluate_encoded(obs, masks)``: both `klent.training.torch_evaluator.
TorchEvaluator` and `klent.engine.network.OnnxEvaluator` have it, so self-play runs on whichever is
faster (ONNX Runtime usually is on a CPU; see klent/bench/training.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, NamedTuple

import numpy as np
from pydantic import Field

from klent.engine.games.base import Game, State
from klent.engine.settings import Float, Int, Str, section
from klent.training.archive import StartArchive, replay


@section
class SelfPlayConfig:
    """games: parallel game slots per process; steps: transitions per slot per iteration;
    evaluator: "onnx" or "torch" for the self-play network calls; archive_size: capacity of
    the Go-Exploit start-state archive (0 = every game starts from the initial position);
    archive_initial_prob: lambda_s, the probability of starting from the initial position;
    resign_threshold: KLENT only, a player whose state value v = sum pi' Q is below
    -resign_threshold resigns (0 = never), as in AlphaGo Zero, so that self-play stops spending
    moves on decided games; resign_disabled_fraction: the share of games where nobody may
    resign, which measures how often a resignation would have been wrong."""

    games: Annotated[Int, Field(ge=1)] = 64
    steps: Annotated[Int, Field(ge=1)] = 64
    evaluator: Str = "onnx"
    archive_size: Annotated[Int, Field(ge=0)] = 0
    archive_initial_prob: Annotated[Float, Field(ge=0, le=1)] = 0.1
    resign_threshold: Float = 0.0
    resign_disabled_fraction: Float = 0.1

    def __post_init__(self) -> None:
        if self.evaluator not in ("onnx", "torch"):
            raise ValueError(f"self-play evaluator must be 'onnx' or 'torch', not {self.evaluator!r}")
        if not 0.0 <= self.resign_threshold < 1.0:
            raise ValueError(f"resign_threshold must be in [0, 1), not {self.resign_threshold}")
        if not 0.0 <= self.resign_disabled_fraction <= 1.0:
            raise ValueError(
                f"resign_disabled_fraction must be in [0, 1], not {self.resign_disabled_fraction}"
            )


class StepResult(NamedTuple):
    """What one move in each of the N slots did (arrays of length N)."""

    rewards: np.ndarray  # float64: reward to the player who moved (+1 / -1 / 0)
    terminal: np.ndarray  # bool: the game ended, by its rules or by the mover's resignation
    truncated: np.ndarray  # bool: the move cap ended it (bootstrap, do not trust the result)
    final_states: list[State | None]  # the finished game's last state, None where it goes on
    resigned: np.ndarray  # bool: the mover resigned after this move (its reward is -1)
    would_resign: np.ndarray  # bool: a game nobody could resign ended by its rules, and a
    #   player had judged it lost
    false_resignations: np.ndarray  # bool: ... and such a player won it


class GameSlots:
    """N games played side by side; a finished game is replaced at once by a new one.

    Each slot keeps the actions of its game from the initial position: that is what the start
    archive stores and what a checkpoint saves to resume the games exactly.  With
    ``resign_disabled_fraction`` given, resignation is on: each new game is drawn to be one
    where the players may resign or (with that probability) one where nobody may, and in the
    latter the players who would have resigned are remembered to count false resignations.
    """

    def __init__(
        self,
        game: Game,
        count: int,
        rng: np.random.Generator,
        archive: StartArchive | None,
        resign_disabled_fraction: float | None = None,
    ) -> None:
        self.game = game
        self.rng = rng
        self.archive = archive
        self.resign_disabled_fraction = resign_disabled_fraction
        self.histories: list[list[int]] = []
        self.states: list[State] = []
        self.may_resign: list[bool] = []
        self.would_have_resigned: list[list[int]] = []  # players, in games nobody may resign
        for _ in range(count):
            self._start_new_game()

    def __len__(self) -> int:
        return len(self.states)

    def _start_new_game(self, slot: int | None = None) -> None:
        actions = self.archive.sample_start(self.rng) if self.archive is not None else []
        state = replay(self.game, actions)
        fraction = self.resign_disabled_fraction
        may_resign = fraction is not None and bool(self.rng.random() >= fraction)
        if slot is None:
            self.histories.append(list(actions))
            self.states.append(state)
            self.may_resign.append(may_resign)
            self.would_have_resigned.append([])
        else:
            self.histories[slot] = list(actions)
            self.states[slot] = state
            self.may_resign[slot] = may_resign
            self.would_have_resigned[slot] = []

    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        """Observations float32[N, C, H, W] and legal masks bool[N, A] of the current states."""
        masks = np.stack([state.legal_mask() for state in self.states])
        return self.game.encode_batch(self.states), masks

    def step(self, actions: np.ndarray, hopeless: np.ndarray | None = None) -> StepResult:
        """Play ``actions[i]`` in slot i; finished games are restarted before returning.

        ``hopeless[i]`` says the mover in slot i judges its position lost (resignation on):
        where it may resign, the game ends after this move with reward -1 to the mover;
        elsewhere the mover is remembered as one who would have resigned.
        """
        count = len(self.states)
        rewards = np.zeros(count)
        terminal = np.zeros(count, dtype=np.bool_)
        truncated = np.zeros(count, dtype=np.bool_)
        resigned = np.zeros(count, dtype=np.bool_)
        would_resign = np.zeros(count, dtype=np.bool_)
        false_resignations = np.zeros(count, dtype=np.bool_)
        final_states: list[State | None] = [None] * count
        for i, (state, action) in enumerate(zip(self.states, actions)):
            if self.archive is not None:
                self.archive.add(self.histories[i], len(self.histories[i]))
            mover = state.to_play
            after = state.play(int(action))
            self.histories[i].append(int(action))
            gives_up = hopeless is not None and bool(hopeless[i])
            if gives_up and not self.may_resign[i] and mover not in self.would_have_resigned[i]:
                self.would_have_resigned[i].append(mover)
            resigns = gives_up and self.may_resign[i] and not after.is_terminal
            if not after.is_terminal and not resigns:
                self.states[i] = after
                continue
            final_states[i] = after
            if resigns:
                terminal[i] = resigned[i] = True
                rewards[i] = -1.0
            elif after.is_truncated:
                truncated[i] = True
            else:
                terminal[i] = True
                rewards[i] = after.reward_for(mover)
                doubters = self.would_have_resigned[i]
                would_resign[i] = bool(doubters)
                false_resignations[i] = any(after.reward_for(p) > 0 for p in doubters)
            self._start_new_game(i)
        return StepResult(
            rewards, terminal, truncated, final_states, resigned, would_resign, false_resignations
        )

    def state_dict(self) -> dict:
        """Plain-Python snapshot of the games (and archive) to resume them exactly."""
        data: dict = {
            "histories": [list(h) for h in self.histories],
            "may_resign": list(self.may_resign),
            "would_have_resigned": [list(p) for p in self.would_have_resigned],
        }
        if self.archive is not None:
            data["archive"] = self.archive.state_dict()
        return data

    def load_state_dict(self, data: dict) -> None:
        self.histories = [list(h) for h in data["histories"]]
        self.states = [replay(self.game, h) for h in self.histories]
        # A run saved before resignation existed: its running games are ones nobody may resign.
        count = len(self.histories)
        self.may_resign = list(data.get("may_resign", [False] * count))
        self.would_have_resigned = [list(p) for p in data.get("would_have_resigned", [[]] * count)]
        if self.archive is not None and "archive" in data:
            self.archive.load_state_dict(data["archive"])


@dataclass
class Samples:
    """One iteration's training data, M = steps x games samples (flattened time-major)."""

    obs: np.ndarray  # float32[M, C, H, W]
    masks: np.ndarray  # bool[M, A]
    actions: np.ndarray  # int64[M]
    policy: np.ndarray  # float32[M, A]: the policy target (pi' for KLENT)
    returns: np.ndarray  # float32[M]: the value target (G^lambda for KLENT)
    value_weight: np.ndarray  # float32[M]: 1 where ``returns`` is a target, else 0
    simulator_evaluations: int  # network calls on states made while collecting (the x-axis)
    stats: dict[str, float] = field(default_factory=dict)
    q_targets: np.ndarray | None = None  # float32[M, A]: per-action value targets, NaN where none (distillation)
    ownership: np.ndarray | None = None  # float32[M, points]: final owners (klent.training.ownership), NaN rows: none
    score: np.ndarray | None = None  # float32[M]: final score in points, NaN where none

    def __len__(self) -> int:
        return len(self.actions)


def sample_actions(policy: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One action per row drawn from ``policy`` [N, A] (zero-probability actions never)."""
    cdf = np.cumsum(policy, axis=1)
    draws = rng.random(len(policy)) * cdf[:, -1]
    return (cdf > draws[:, None]).argmax(axis=1)
