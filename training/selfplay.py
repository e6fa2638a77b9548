"""Vectorised self-play: N games side by side, one batched network call per move.

As in the paper's implementation (appendix C), every iteration collects a fixed number of
transitions from each of N game slots; a game that ends is replaced at once by a new one, and a
game still running when the window closes carries over into the next iteration.  Its
lambda-returns in this window bootstrap from v at the window end (`training.klent`).

`GameSlots` is the part shared with the Gumbel AlphaZero baseline (`training.gumbel_az`): it
holds the N games, applies the chosen moves, reports rewards / terminal / truncated flags and
restarts finished games (from the Go-Exploit archive when there is one).  `collect_klent` is
KLENT's move choice and target computation on top of it.

The evaluator only needs ``evaluate_encoded(obs, masks)``: both `training.torch_evaluator.
TorchEvaluator` and `engine.network.OnnxEvaluator` have it, so self-play runs on whichever is
faster (ONNX Runtime usually is on a CPU; see benchmarks/training.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import numpy as np

from engine.games.base import Game, State
from engine.games.go import GoState
from engine.network import Evaluation
from training import klent
from training.archive import StartArchive, replay
from training.ownership import final_targets


class EncodedEvaluator(Protocol):
    """What self-play needs from a network: a batch of encoded states in, masked outputs out."""

    def evaluate_encoded(self, obs: np.ndarray, masks: np.ndarray) -> Evaluation: ...


@dataclass(frozen=True)
class SelfPlayConfig:
    """games: parallel game slots per process; steps: transitions per slot per iteration;
    evaluator: "onnx" or "torch" for the self-play network calls; archive_size: capacity of
    the Go-Exploit start-state archive (0 = every game starts from the initial position);
    archive_initial_prob: lambda_s, the probability of starting from the initial position;
    resign_threshold: KLENT only, a player whose state value v = sum pi' Q is below
    -resign_threshold resigns (0 = never), as in AlphaGo Zero, so that self-play stops spending
    moves on decided games; resign_disabled_fraction: the share of games where nobody may
    resign, which measures how often a resignation would have been wrong."""

    games: int = 64
    steps: int = 64
    evaluator: str = "onnx"
    archive_size: int = 0
    archive_initial_prob: float = 0.1
    resign_threshold: float = 0.0
    resign_disabled_fraction: float = 0.1

    def __post_init__(self) -> None:
        if self.games < 1 or self.steps < 1:
            raise ValueError("self-play needs games >= 1 and steps >= 1")
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
    ownership: np.ndarray | None = None  # float32[M, points]: final owners (training.ownership), NaN rows: none
    score: np.ndarray | None = None  # float32[M]: final score in points, NaN where none

    def __len__(self) -> int:
        return len(self.actions)


def sample_actions(policy: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One action per row drawn from ``policy`` [N, A] (zero-probability actions never)."""
    cdf = np.cumsum(policy, axis=1)
    draws = rng.random(len(policy)) * cdf[:, -1]
    return (cdf > draws[:, None]).argmax(axis=1)


def collect_klent(
    slots: GameSlots,
    evaluator: EncodedEvaluator,
    config: klent.KlentConfig,
    steps: int,
    resign_threshold: float = 0.0,
    ownership_targets: bool = False,
) -> Samples:
    """Play ``steps`` moves in every slot with actions sampled from pi' and build the targets.

    Network calls: one per move across all slots, plus one at the window end to value the
    states the running games stopped in (their bootstrap v).  With ``resign_threshold`` > 0 a
    mover whose v is below -resign_threshold resigns after its move where its slot allows it
    (see `GameSlots.step`): that move's return is then -1, close to what its Q (about v, below
    -resign_threshold) already said.  With ``ownership_targets`` (Go), the samples of every
    game that ends by the rules inside this window also get its final ownership and score
    (`training.ownership`); the others (games that go on past the window, resign or hit the move
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
        pi_improved = klent.improved_policy(out.policy_logits, out.action_values, masks[t], config)
        values[t] = klent.state_value(pi_improved, out.action_values)
        actions[t] = sample_actions(pi_improved, slots.rng)
        q_taken[t] = out.action_values[np.arange(count), actions[t]]
        policy[t] = pi_improved
        entropy_sum += klent.entropy(pi_improved).sum()
        log_prior = klent.masked_log_softmax(out.policy_logits, masks[t])
        kl_sum += klent.kl_divergence(pi_improved, log_prior).sum()
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
    values[steps] = klent.state_value(
        klent.improved_policy(end.policy_logits, end.action_values, end_masks, config),
        end.action_values,
    )
    returns = klent.lambda_returns(rewards, values, terminal, truncated, -q_taken, config.lam)

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


def _fill_final_targets(
    ownership: np.ndarray,
    score: np.ndarray,
    players: np.ndarray,
    game_start: np.ndarray,
    t: int,
    result: StepResult,
) -> None:
    """After step ``t``: the final ownership and score (`training.ownership.final_targets`) of
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
