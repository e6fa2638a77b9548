"""Vectorised self-play (klent/training/selfplay.py), the start archive and the Gumbel AZ collector."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

import klent.engine.games as games
from klent.engine.games.base import State
from klent.engine.games.countup import CountUpGame, CountUpState
from klent.engine.network import Evaluation, apply_legal_mask
from klent.training import gumbel_az, klent_rl
from klent.training.archive import StartArchive, replay
from klent.training.metrics import match_score, play_games, random_agent
from klent.training.selfplay import GameSlots, sample_actions


class ConstantEvaluator:
    """Uniform policy and the same action value everywhere; counts the states it sees."""

    def __init__(self, game, q: float = 0.5, state_value: float | None = None) -> None:
        self.game = game
        self.q = q
        self.state_value = state_value
        self.count = 0

    def evaluate_encoded(self, obs: np.ndarray, masks: np.ndarray) -> Evaluation:
        self.count += len(obs)
        logits, q = apply_legal_mask(
            np.zeros(masks.shape, np.float32), np.full(masks.shape, self.q, np.float32), masks
        )
        v = None if self.state_value is None else np.full(len(obs), self.state_value, np.float32)
        return Evaluation(logits, q, v)

    def evaluate(self, states: Sequence[State]) -> Evaluation:
        masks = np.stack([s.legal_mask() for s in states])
        return self.evaluate_encoded(self.game.encode_batch(states), masks)


class CappedCountUpState(CountUpState):
    """Count-up whose games are cut after ``cap`` moves (to exercise truncation)."""

    __slots__ = ()
    cap = 3

    @property
    def is_terminal(self) -> bool:
        return super().is_terminal or self.is_truncated

    @property
    def is_truncated(self) -> bool:
        return self.count < self._game.target and self.move_number >= self.cap

    def legal_mask(self) -> np.ndarray:
        return np.full(self._game.num_actions, not self.is_terminal, dtype=np.bool_)

    def play(self, action: int) -> CappedCountUpState:
        after = super().play(action)
        return CappedCountUpState(self._game, after.count, after.move_number)

    def outcome(self) -> float:
        return 0.0 if self.is_truncated else super().outcome()


class CappedCountUp(CountUpGame):
    def initial_state(self) -> CappedCountUpState:
        return CappedCountUpState(self, 0, 0)


def test_sample_actions_follows_the_distribution_and_never_picks_zero_mass() -> None:
    rng = np.random.default_rng(0)
    policy = np.tile(np.array([0.0, 0.2, 0.0, 0.8]), (40_000, 1))
    actions = sample_actions(policy, rng)
    assert set(np.unique(actions)) == {1, 3}
    assert abs((actions == 3).mean() - 0.8) < 0.01


def test_slots_restart_finished_games_and_carry_running_ones_over() -> None:
    game = games.get("countup")
    slots = GameSlots(game, 2, np.random.default_rng(0), archive=None)
    # Slot 0 always adds 2, slot 1 always adds 1: slot 0 finishes after 4 moves (0-2-4-6-8).
    results = [slots.step(np.array([1, 0])) for _ in range(4)]
    assert [bool(r.terminal[0]) for r in results] == [False, False, False, True]
    assert results[3].rewards[0] == 1.0  # the mover reached the target: +1 for the mover
    assert results[3].final_states[0].count == 8
    assert slots.states[0].count == 0 and slots.histories[0] == []  # restarted at once
    assert slots.states[1].count == 4 and slots.histories[1] == [0, 0, 0, 0]  # still running
    snapshot = slots.state_dict()
    other = GameSlots(game, 2, np.random.default_rng(1), archive=None)
    other.load_state_dict(snapshot)
    assert [s.count for s in other.states] == [0, 4] and other.states[1].to_play == 0


def test_a_hopeless_mover_resigns_where_its_game_allows_it() -> None:
    game = games.get("countup")
    everyone = GameSlots(game, 2, np.random.default_rng(0), archive=None, resign_disabled_fraction=0.0)
    result = everyone.step(np.array([1, 1]), hopeless=np.array([True, False]))
    assert result.resigned.tolist() == [True, False] and result.terminal.tolist() == [True, False]
    assert result.rewards.tolist() == [-1.0, 0.0] and result.final_states[0].count == 2
    assert everyone.states[0].count == 0 and everyone.states[1].count == 2  # slot 0 restarted

    nobody = GameSlots(game, 1, np.random.default_rng(0), archive=None, resign_disabled_fraction=1.0)
    # Both players add 2 (0-2-4-6-8): player 1 despairs on its first move, then its second move
    # reaches 7 and wins.  It would have resigned a game it won.
    steps = [nobody.step(np.array([1]), hopeless=np.array([i == 1])) for i in range(4)]
    assert not any(r.resigned[0] for r in steps) and not any(r.terminal[0] for r in steps[:3])
    assert nobody.would_have_resigned == [[]]  # the game ended and a new one began
    assert steps[3].terminal[0] and steps[3].rewards[0] == 1.0
    assert steps[3].would_resign[0] and steps[3].false_resignations[0]


def test_resignation_state_survives_a_checkpoint() -> None:
    game = games.get("countup")
    slots = GameSlots(game, 8, np.random.default_rng(4), archive=None, resign_disabled_fraction=0.5)
    assert 0 < sum(slots.may_resign) < 8  # drawn per game
    slots.step(np.zeros(8, dtype=np.int64), hopeless=np.ones(8, dtype=np.bool_))
    restored = GameSlots(game, 8, np.random.default_rng(9), archive=None, resign_disabled_fraction=0.5)
    restored.load_state_dict(slots.state_dict())
    assert restored.may_resign == slots.may_resign
    assert restored.would_have_resigned == slots.would_have_resigned
    assert any(slots.would_have_resigned)


def test_collect_klent_with_resignation_ends_lost_games_and_counts_false_ones() -> None:
    game = CappedCountUp(target=50, max_step=2)  # nobody wins by the rules
    config = klent_rl.PRESETS["monte-carlo"]
    allowed = GameSlots(game, 16, np.random.default_rng(1), archive=None, resign_disabled_fraction=0.0)
    despairing = ConstantEvaluator(game, q=-0.95)
    samples = klent_rl.collect(allowed, despairing, config, steps=12, resign_threshold=0.9)
    # Every mover sees v = -0.95 and resigns after its move: every return is -1.
    assert samples.stats["resigned"] == 12 * 16 and (samples.returns == -1.0).all()
    assert np.isnan(samples.stats["false_resignation_rate"])  # no game nobody could resign

    confident = GameSlots(game, 16, np.random.default_rng(1), archive=None, resign_disabled_fraction=0.0)
    hopeful = ConstantEvaluator(game, q=-0.5)
    samples = klent_rl.collect(confident, hopeful, config, steps=12, resign_threshold=0.9)
    assert samples.stats["resigned"] == 0

    real = games.get("countup")
    forbidden = GameSlots(real, 16, np.random.default_rng(1), archive=None, resign_disabled_fraction=1.0)
    samples = klent_rl.collect(
        forbidden, ConstantEvaluator(real, q=-0.95), config, steps=12, resign_threshold=0.9
    )
    assert samples.stats["resigned"] == 0 and samples.stats["games_finished"] > 0
    assert samples.stats["false_resignation_rate"] == 1.0  # both players despaired; one won


def test_collect_klent_shapes_counts_and_monte_carlo_returns() -> None:
    game = games.get("countup")
    evaluator = ConstantEvaluator(game, q=0.5)
    slots = GameSlots(game, 16, np.random.default_rng(3), archive=None)
    config = klent_rl.PRESETS["monte-carlo"]  # lambda = 1: returns are outcomes or bootstraps
    samples = klent_rl.collect(slots, evaluator, config, steps=12)
    assert len(samples) == 12 * 16 and samples.obs.shape == (192, *game.observation_shape)
    assert samples.simulator_evaluations == evaluator.count == 12 * 16 + 16  # + window-end v
    np.testing.assert_allclose(samples.policy.sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(samples.policy, 0.5)  # uniform prior and equal Q: pi' uniform
    # A finished game's samples get +-1; the running games' last moves bootstrap from
    # v = sum pi' Q = 0.5 of the state the window stopped in, sign-flipped move by move.
    assert set(np.round(np.abs(samples.returns), 6)) == {1.0, 0.5}
    assert samples.stats["games_finished"] > 0 and samples.stats["entropy"] == pytest.approx(
        np.log(2)
    )
    # The carried-over games continue in the next window.
    histories = [list(h) for h in slots.histories]
    klent_rl.collect(slots, evaluator, config, steps=1)
    continued = sum(h[: len(old)] == old and len(h) == len(old) + 1
                    for h, old in zip(slots.histories, histories))
    assert continued >= 1


class LeaningEvaluator(ConstantEvaluator):
    """Equal action values, and a policy that gives the first action probability ``first``."""

    def __init__(self, game, first: float) -> None:
        super().__init__(game, q=0.5)
        self.logits = np.log([first, 1.0 - first]).astype(np.float32)

    def evaluate_encoded(self, obs: np.ndarray, masks: np.ndarray) -> Evaluation:
        plain = super().evaluate_encoded(obs, masks)
        logits, q = apply_legal_mask(np.tile(self.logits, (len(obs), 1)), plain.action_values, masks)
        return Evaluation(logits, q, None)


def test_collect_klent_takes_the_kl_term_against_a_reference_network_when_given_one() -> None:
    game = games.get("countup")
    assert game.num_actions == 2
    config = klent_rl.KlentConfig()
    exponent = config.beta / (config.alpha + config.beta)  # equal Q: pi' ~ prior ** exponent
    for reference in (None, LeaningEvaluator(game, first=0.8)):
        own = LeaningEvaluator(game, first=0.3)
        slots = GameSlots(game, 4, np.random.default_rng(0), archive=None)
        samples = klent_rl.collect(slots, own, config, steps=5, reference=reference)
        prior = np.array([0.3, 0.7]) if reference is None else np.array([0.8, 0.2])
        expected = prior**exponent / (prior**exponent).sum()
        live = samples.masks.any(axis=1)
        np.testing.assert_allclose(samples.policy[live], np.tile(expected, (live.sum(), 1)), rtol=1e-5)
        # The KL logged is to the prior pi' was drawn towards; the simulator evaluations are
        # the states played, whichever networks looked at them.
        kl = float((expected * np.log(expected / prior)).sum())
        assert samples.stats["kl"] == pytest.approx(kl, rel=1e-5)
        assert samples.simulator_evaluations == own.count == 5 * 4 + 4
        if reference is not None:
            assert reference.count == own.count  # every state, and the window-end ones


def test_collect_klent_bootstraps_a_truncated_game_from_the_action_value() -> None:
    game = CappedCountUp(target=50, max_step=2)  # nobody reaches 50 in 3 moves: always cut
    slots = GameSlots(game, 4, np.random.default_rng(0), archive=None)
    samples = klent_rl.collect(slots, ConstantEvaluator(game, q=0.25), klent_rl.KlentConfig(), steps=6)
    returns = samples.returns.reshape(6, 4)
    # Moves 3 and 6 of each slot are cut: G = Q(S, A) = 0.25.  The moves before them bootstrap
    # through the sign flip: G = -((1 - lam) v + lam G') with v = 0.25.
    lam = klent_rl.KlentConfig().lam
    g2 = 0.25
    g1 = -((1 - lam) * 0.25 + lam * g2)
    g0 = -((1 - lam) * 0.25 + lam * g1)
    np.testing.assert_allclose(returns, np.tile([g0, g1, g2, g0, g1, g2], (4, 1)).T, rtol=1e-6)


def test_start_archive_is_circular_and_mixes_in_the_initial_state() -> None:
    archive = StartArchive(capacity=3, initial_prob=0.0)
    history = [1, 0, 1, 1]
    for length in range(4):
        archive.add(history, length)
    assert len(archive) == 3  # the state after 0 moves was overwritten
    rng = np.random.default_rng(0)
    starts = {tuple(archive.sample_start(rng)) for _ in range(200)}
    assert starts == {(1,), (1, 0), (1, 0, 1)}
    always_initial = StartArchive(capacity=3, initial_prob=1.0)
    always_initial.add(history, 2)
    assert always_initial.sample_start(rng) == []
    restored = StartArchive(capacity=3, initial_prob=0.0)
    restored.load_state_dict(archive.state_dict())
    assert {tuple(restored.sample_start(rng)) for _ in range(200)} == starts


def test_slots_with_an_archive_start_games_from_visited_states() -> None:
    game = games.get("countup")
    archive = StartArchive(capacity=1000, initial_prob=0.1)
    slots = GameSlots(game, 8, np.random.default_rng(5), archive)
    klent_rl.collect(slots, ConstantEvaluator(game), klent_rl.KlentConfig(), steps=30)
    assert len(archive) == 240  # every visited state (all non-terminal when visited)
    starts = [archive.sample_start(np.random.default_rng(i)) for i in range(100)]
    assert 0 < sum(not s for s in starts) < 30  # the initial state ~10% of the time
    for start in starts:
        assert not replay(game, start).is_terminal


def test_gumbel_az_targets_and_simulator_evaluations() -> None:
    game = games.get("countup")
    evaluator = ConstantEvaluator(game, q=0.0, state_value=0.0)
    slots = GameSlots(game, 8, np.random.default_rng(0), archive=None)
    config = gumbel_az.GumbelAZConfig(simulations=4)
    samples = gumbel_az.collect(slots, evaluator, config, steps=10)
    # Every state the network saw: one root per move plus the non-terminal search leaves.
    assert samples.simulator_evaluations == evaluator.count
    assert 80 < samples.simulator_evaluations <= 80 * (1 + 4)
    np.testing.assert_allclose(samples.policy.sum(axis=1), 1.0, rtol=1e-5)
    scored = samples.value_weight > 0
    assert scored.any() and not scored.all()  # the window cuts the last games short
    assert set(np.unique(samples.returns[scored])) <= {-1.0, 1.0}
    assert (samples.returns[~scored] == 0).all()
    # Count-up: the player who made the last move won, so the winner's samples get +1.
    obs_counts = samples.obs.reshape(len(samples), -1).argmax(axis=1)
    wins_from_5 = scored & (obs_counts == 5) & (samples.actions == 1)
    assert (samples.returns[wins_from_5] == 1.0).all()


def test_play_games_alternates_colours_and_scores_draws_half() -> None:
    game = games.get("countup")
    rng = np.random.default_rng(0)

    def perfect(states: Sequence[State]) -> np.ndarray:
        # Table 10: move to 1, 4 or 7 (the losing counts for the opponent).
        return np.array([{0: 0, 2: 1, 3: 0, 5: 1}.get(s.count, 0) for s in states])

    rewards = play_games(game, perfect, random_agent(rng), 64, rng)
    assert (rewards[0::2] == 1).all()  # always wins moving first; second, only if random errs
    assert 0.75 <= match_score(rewards) < 1.0
    assert match_score(play_games(game, perfect, perfect, 10, rng)) == 0.5  # first player wins
