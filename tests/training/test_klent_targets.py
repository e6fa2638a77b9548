"""KLENT's targets and loss (klent/training/klent_rl.py), and its convergence on count-up (appendix L)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from torch import nn

import klent.engine.games as games
from klent.engine.games.countup import CountUpGame, CountUpState
from klent.engine.network import MASKED_LOGIT, softmax
from klent.training import klent_rl
from klent.training.fitting import fit
from klent.training.nets import NetOutputs
from klent.training.selfplay import GameSlots
from klent.training.torch_evaluator import TorchEvaluator

# ---------------------------------------------------------------------------------------------
# Improved policy
# ---------------------------------------------------------------------------------------------


def objective(p: np.ndarray, q: np.ndarray, prior: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """E_p[Q] - beta KL(p || prior) + alpha H(p) for rows of candidate distributions p."""
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = np.where(p > 0, np.log(p), 0.0)
    return (p * q).sum(-1) - beta * (p * (logp - np.log(prior))).sum(-1) - alpha * (p * logp).sum(-1)


def simplex_grid(step: float) -> np.ndarray:
    """Every distribution over 3 actions with probabilities on a grid of ``step``."""
    ticks = np.arange(0.0, 1.0 + step / 2, step)
    a, b = np.meshgrid(ticks, ticks, indexing="ij")
    keep = a + b <= 1.0 + 1e-12
    a, b = a[keep], b[keep]
    return np.stack([a, b, np.clip(1.0 - a - b, 0.0, 1.0)], axis=1)


@pytest.mark.parametrize(
    ("alpha", "beta"), [(0.03, 0.1), (1.0, 0.1), (0.0, 0.1), (0.03, 0.0), (0.3, 0.5)]
)
def test_improved_policy_maximises_the_regularised_objective(alpha: float, beta: float) -> None:
    rng = np.random.default_rng(7)
    config = klent_rl.KlentConfig(alpha=alpha, beta=beta)
    for _ in range(3):
        # Three legal actions and one illegal one (masked logit, arbitrary Q).
        logits = np.append(rng.normal(size=3) * 2, MASKED_LOGIT)
        q = np.append(rng.uniform(-1, 1, size=3) * 0.2, 0.9)
        mask = np.array([True, True, True, False])
        closed = klent_rl.improved_policy(logits[None], q[None], mask[None], config)[0]
        assert closed[3] == 0.0 and closed.sum() == pytest.approx(1.0)
        grid = simplex_grid(0.002)
        prior = softmax(logits[:3].astype(np.float64))
        best = grid[np.argmax(objective(grid, q[:3], prior, alpha, beta))]
        assert np.abs(best - closed[:3]).max() <= 0.01
        assert objective(closed[None, :3], q[:3], prior, alpha, beta)[0] >= objective(
            best[None], q[:3], prior, alpha, beta
        )[0] - 1e-9


def test_improved_policy_special_cases_and_extremes() -> None:
    q = np.array([[0.5, -0.2, 0.1]])
    logits = np.array([[3.0, -1.0, 0.0]])
    mask = np.ones((1, 3), dtype=bool)
    # beta = 0 (ent-only): softmax(Q / alpha), the network's policy is ignored.
    ent_only = klent_rl.improved_policy(logits, q, mask, klent_rl.PRESETS["ent-only"])
    np.testing.assert_allclose(ent_only, softmax(q / 0.03), rtol=1e-9)
    # Default: softmax((Q + beta log pi) / (alpha + beta)).
    log_pi = np.log(softmax(logits))
    expected = softmax((q + 0.1 * log_pi) / 0.13)
    np.testing.assert_allclose(klent_rl.improved_policy(logits, q, mask, klent_rl.KlentConfig()), expected)
    # Tiny priors (log pi ~ -1e4) and a masked action neither overflow nor give NaN.
    logits = np.array([[0.0, -1e4, MASKED_LOGIT]], dtype=np.float32)
    mask = np.array([[True, True, False]])
    p = klent_rl.improved_policy(logits, np.array([[-1.0, 1.0, 0.0]]), mask, klent_rl.KlentConfig())
    assert np.isfinite(p).all() and p[0, 2] == 0.0 and p.sum() == pytest.approx(1.0)
    assert p[0, 0] > 0.999  # the prior's 1e4 nats outweigh a Q advantage of 2


def test_state_value_entropy_and_kl() -> None:
    p = np.array([[0.25, 0.75, 0.0]])
    q = np.array([[1.0, -1.0, 0.7]])
    assert klent_rl.state_value(p, q)[0] == pytest.approx(-0.5)
    assert klent_rl.entropy(p)[0] == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)))
    log_q = np.log(np.array([[0.5, 0.5, 1e-300]]))
    expected = 0.25 * math.log(0.25 / 0.5) + 0.75 * math.log(0.75 / 0.5)
    assert klent_rl.kl_divergence(p, log_q)[0] == pytest.approx(expected)


def test_ablation_presets_are_table_2() -> None:
    lam = math.exp(-1 / 8)
    table = {
        "klent": (0.03, 0.1, lam),
        "kl-only": (0.0, 0.1, lam),
        "ent-only": (0.03, 0.0, lam),
        "one-step": (0.03, 0.1, 0.0),
        "monte-carlo": (0.03, 0.1, 1.0),
    }
    assert {k: (c.alpha, c.beta, c.lam) for k, c in klent_rl.PRESETS.items()} == table
    with pytest.raises(ValueError):
        klent_rl.KlentConfig(alpha=0.0, beta=0.0)


# ---------------------------------------------------------------------------------------------
# Lambda-returns
# ---------------------------------------------------------------------------------------------


def column(values: list[float]) -> np.ndarray:
    return np.array(values, dtype=np.float64)[:, None]


def flags(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=bool)[:, None]


def test_lambda_returns_of_a_finished_game() -> None:
    """Three moves, the third wins: the sign flips at every move, the end is not bootstrapped."""
    lam = 0.5
    v0, v1, v2 = 0.2, -0.4, 0.6
    returns = klent_rl.lambda_returns(
        rewards=column([0, 0, 1]),
        values=column([v0, v1, v2, 0.9]),  # 0.9: the next game's first state, never used
        terminal=flags([0, 0, 1]),
        truncated=flags([0, 0, 0]),
        cut_values=column([0, 0, 0]),
        lam=lam,
    )[:, 0]
    g2 = 1.0
    g1 = -((1 - lam) * v2 + lam * g2)  # = -(0.3 + 0.5) = -0.8
    g0 = -((1 - lam) * v1 + lam * g1)  # = -(-0.2 - 0.4) = 0.6
    np.testing.assert_allclose(returns, [g0, g1, g2])
    np.testing.assert_allclose(returns, [0.6, -0.8, 1.0])


def test_lambda_returns_bootstrap_at_window_end_and_at_truncation() -> None:
    lam = 0.25
    # Slot 0: a game running through the whole window, bootstrapped from v at the end.
    # Slot 1: a game cut by the move cap after step 1 (valued -0.3 for the player to move
    # there), then a new game whose first move loses at step 2, then one more running move.
    rewards = np.array([[0, 0], [0, 0], [0, -1], [0, 0]], dtype=np.float64)
    values = np.array([[0.1, 0.5], [0.2, 0.6], [0.3, 0.7], [0.4, 0.8], [-0.5, 0.25]])
    terminal = np.array([[0, 0], [0, 0], [0, 1], [0, 0]], dtype=bool)
    truncated = np.array([[0, 0], [0, 1], [0, 0], [0, 0]], dtype=bool)
    cut_values = np.array([[0, 0], [0, -0.3], [0, 0], [0, 0]], dtype=np.float64)
    g = klent_rl.lambda_returns(rewards, values, terminal, truncated, cut_values, lam)

    end = -0.5
    g3 = -end  # one step before the window end: -( (1-lam) v_T + lam v_T )
    g2 = -((1 - lam) * 0.4 + lam * g3)
    g1 = -((1 - lam) * 0.3 + lam * g2)
    g0 = -((1 - lam) * 0.2 + lam * g1)
    np.testing.assert_allclose(g[:, 0], [g0, g1, g2, g3])

    h3 = -0.25  # the new game's running move, bootstrapped at the window end
    h2 = -1.0  # a losing terminal move: the reward alone
    h1 = 0.3  # cut: -v(cut-off state)
    h0 = -((1 - lam) * 0.6 + lam * h1)
    np.testing.assert_allclose(g[:, 1], [h0, h1, h2, h3])


@pytest.mark.parametrize("lam", [0.0, 1.0])
def test_one_step_and_monte_carlo_limits(lam: float) -> None:
    values = column([0.1, -0.2, 0.3, 0.0])
    g = klent_rl.lambda_returns(
        column([0, 0, -1]), values, flags([0, 0, 1]), flags([0, 0, 0]), column([0, 0, 0]), lam
    )[:, 0]
    if lam == 0.0:  # one-step TD: G_t = r_t - v_{t+1}
        np.testing.assert_allclose(g, [0.2, -0.3, -1.0])
    else:  # Monte Carlo: the outcome from each mover's view
        np.testing.assert_allclose(g, [-1.0, 1.0, -1.0])


# ---------------------------------------------------------------------------------------------
# Loss
# ---------------------------------------------------------------------------------------------


def test_loss_is_cross_entropy_plus_squared_error() -> None:
    logits = torch.tensor([[1.0, 2.0, 50.0], [0.0, 0.0, 0.0]], requires_grad=True)
    q = torch.tensor([[0.5, -0.5, 0.9], [0.1, 0.2, 0.3]], requires_grad=True)
    mask = torch.tensor([[True, True, False], [True, True, True]])
    actions = torch.tensor([1, 2])
    target = torch.tensor([[0.3, 0.7, 0.0], [0.2, 0.3, 0.5]])
    returns = torch.tensor([0.5, -1.0])
    loss, parts = klent_rl.klent_loss(logits, q, mask, actions, target, returns)

    log_p0 = torch.log_softmax(torch.tensor([1.0, 2.0]), 0)
    ce0 = -(0.3 * log_p0[0] + 0.7 * log_p0[1])
    ce1 = -(torch.tensor([0.2, 0.3, 0.5]) * math.log(1 / 3)).sum()
    mse = ((-0.5 - 0.5) ** 2 + (0.3 + 1.0) ** 2) / 2
    assert float(parts["policy_loss"]) == pytest.approx(float(ce0 + ce1) / 2, rel=1e-6)
    assert float(parts["value_loss"]) == pytest.approx(mse, rel=1e-6)
    loss.backward()
    assert float(loss.detach()) == pytest.approx(float(ce0 + ce1) / 2 + mse, rel=1e-6)
    assert logits.grad[0, 2] == 0.0  # an illegal action's logit gets no gradient
    assert q.grad[0, 0] == 0.0 and q.grad[0, 1] != 0.0  # only the action taken is regressed


def test_teacher_rows_regress_every_labelled_action_value_and_leave_the_policy_alone() -> None:
    logits = torch.tensor([[1.0, 2.0, 0.0], [0.5, 0.0, 3.0]], requires_grad=True)
    q = torch.tensor([[0.5, -0.5, 0.9], [0.1, 0.2, 0.3]], requires_grad=True)
    nan = float("nan")
    batch = {
        "masks": torch.tensor([[True, True, True], [True, True, True]]),
        "actions": torch.tensor([1, 0]),
        "policy": torch.tensor([[0.3, 0.7, 0.0], [0.0, 0.0, 0.0]]),
        "returns": torch.tensor([0.5, 0.0]),
        "value_weight": torch.tensor([1.0, 0.0]),
        "q_targets": torch.tensor([[nan, nan, nan], [0.3, nan, -0.1]]),
    }
    loss, parts = klent_rl.batch_loss(NetOutputs(logits, q, None, None, None), batch, teacher_weight=2.0)

    own, own_parts = klent_rl.klent_loss(logits[:1], q[:1], batch["masks"][:1], batch["actions"][:1],
                                         batch["policy"][:1], batch["returns"][:1])
    teacher = ((0.1 - 0.3) ** 2 + (0.3 + 0.1) ** 2) / 2  # the two labelled moves, the third unlabelled
    assert float(parts["teacher_q_loss"]) == pytest.approx(teacher, rel=1e-6)
    assert float(parts["value_loss"]) == pytest.approx(float(own_parts["value_loss"]), rel=1e-6)
    assert float(loss.detach()) == pytest.approx(float(own.detach()) + 2.0 * teacher, rel=1e-6)
    loss.backward()
    assert torch.all(logits.grad[1] == 0.0)  # the teacher's row trains no policy
    assert q.grad[1, 1] == 0.0 and q.grad[1, 0] != 0.0 and q.grad[1, 2] != 0.0
    assert q.grad[0, 0] == 0.0 and q.grad[0, 1] != 0.0  # self-play: only the action taken


def test_a_minibatch_of_teacher_rows_alone_has_a_finite_loss() -> None:
    logits = torch.zeros(1, 2, requires_grad=True)
    q = torch.zeros(1, 2, requires_grad=True)
    batch = {
        "masks": torch.ones(1, 2, dtype=torch.bool), "actions": torch.tensor([0]), "policy": torch.zeros(1, 2),
        "returns": torch.zeros(1), "value_weight": torch.zeros(1), "q_targets": torch.tensor([[1.0, -1.0]]),
    }
    loss, parts = klent_rl.batch_loss(NetOutputs(logits, q, None, None, None), batch, teacher_weight=1.0)
    loss.backward()
    assert float(loss.detach()) == pytest.approx(1.0)
    assert float(parts["policy_loss"]) == 0.0 and float(parts["value_loss"]) == 0.0


def test_teacher_samples_follow_the_games_with_their_q_targets_and_no_policy() -> None:
    game = games.get("countup")
    slots = GameSlots(game, 2, np.random.default_rng(0), archive=None)
    model = TabularNet(game)
    own = klent_rl.collect(slots, TorchEvaluator(model, game, "cpu"), klent_rl.KlentConfig(), steps=3)
    taught = klent_rl.collect(slots, TorchEvaluator(model, game, "cpu"), klent_rl.KlentConfig(), steps=1)
    targets = np.full((len(taught), game.num_actions), np.nan, dtype=np.float32)
    targets[:, 0] = 0.25
    taught = dataclasses.replace(taught, q_targets=targets, value_weight=np.zeros(len(taught), dtype=np.float32))
    both = klent_rl.with_teacher(own, taught)
    assert len(both) == len(own) + len(taught) == 8
    assert np.isnan(both.q_targets[: len(own)]).all() and (both.q_targets[len(own):, 0] == 0.25).all()
    assert (both.policy[len(own):] == 0).all() and np.array_equal(both.policy[: len(own)], own.policy)
    assert both.value_weight.tolist() == [1.0] * 6 + [0.0] * 2
    assert both.stats["teacher_positions"] == 2.0
    with pytest.raises(ValueError, match="Q targets"):
        klent_rl.with_teacher(own, own)


# ---------------------------------------------------------------------------------------------
# Convergence on count-up (paper appendix L)
# ---------------------------------------------------------------------------------------------


def quantal_response_equilibrium(game: CountUpGame, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """pi(a|s) ~ exp(Q(s,a) / alpha) with Q = Q^pi, by backward induction over the counter."""
    policy = np.zeros((game.target, game.num_actions))
    q = np.zeros((game.target, game.num_actions))
    value = np.zeros(game.target)
    for s in reversed(range(game.target)):
        for a in range(game.num_actions):
            after = s + a + 1
            q[s, a] = 1.0 if after >= game.target else -value[after]
        weights = np.exp((q[s] - q[s].max()) / alpha)
        policy[s] = weights / weights.sum()
        value[s] = policy[s] @ q[s]
    return policy, q


class TabularNet(nn.Module):
    """One logit and one action value per (counter, action): no function approximation.

    Appendix L is a statement about the algorithm, so the test gives it a model that can
    represent the equilibrium exactly (the ResNet's 2-plane heads see a 1x1 board through two
    features only); the ResNet is trained end to end in tests/training/test_trainer.py.
    """

    def __init__(self, game: CountUpGame) -> None:
        super().__init__()
        self.observation_shape = game.observation_shape
        self.num_actions = game.num_actions
        inputs = int(np.prod(game.observation_shape))
        self.policy = nn.Linear(inputs, game.num_actions)
        self.action_values = nn.Linear(inputs, game.num_actions)

    def forward(self, obs: torch.Tensor) -> NetOutputs:
        x = obs.flatten(1)
        return NetOutputs(self.policy(x), torch.tanh(self.action_values(x)), None, None, None)


@pytest.fixture
def one_thread():
    """Tiny matrices: one torch thread is faster than two that wait for each other."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def train_countup(config: klent_rl.KlentConfig, iterations: int, seed: int = 0) -> np.ndarray:
    """KLENT self-play + fitting on count-up; the learned pi_theta(a | counter) for 0..6."""
    torch.manual_seed(seed)
    game = games.get("countup")
    model = TabularNet(game)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    evaluator = TorchEvaluator(model, game, "cpu")
    slots = GameSlots(game, 128, np.random.default_rng(seed), archive=None)
    for _ in range(iterations):
        samples = klent_rl.collect(slots, evaluator, config, steps=8)
        fit(model, optimizer, samples, klent_rl.batch_loss, 256, 1, torch.device("cpu"))
    states = [CountUpState(game, count, count % 2) for count in range(game.target)]
    return softmax(evaluator.evaluate(states).policy_logits.astype(np.float64))


def test_countup_converges_to_the_quantal_response_equilibrium(one_thread: None) -> None:
    learned = train_countup(klent_rl.KlentConfig(alpha=1.0), iterations=300)
    qre, _ = quantal_response_equilibrium(games.get("countup"), alpha=1.0)
    assert np.abs(learned - qre).max() <= 0.05, np.round(np.c_[learned, qre], 3)


def test_countup_default_alpha_plays_the_optimal_strategy_of_table_10(one_thread: None) -> None:
    learned = train_countup(klent_rl.KlentConfig(), iterations=150, seed=1)
    # Win from 0 with +1, from 2 with +2, from 3 with +1, from 5 with +2 (actions: +1 -> 0).
    for count, best in {0: 0, 2: 1, 3: 0, 5: 1}.items():
        assert learned[count].argmax() == best, np.round(learned, 3)
        assert learned[count, best] > 0.8, np.round(learned, 3)
    # The QRE at alpha = 0.03 is (nearly) that strategy, as the paper's figure 13 shows.
    qre, _ = quantal_response_equilibrium(games.get("countup"), alpha=0.03)
    assert {s: int(qre[s].argmax()) for s in (0, 2, 3, 5)} == {0: 0, 2: 1, 3: 0, 5: 1}
