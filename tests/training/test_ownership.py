"""Go's ownership and score targets (klent/training/ownership.py), from self-play and in the loss."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from klent.engine.games.go import GoGame
from klent.engine.network import Evaluation, apply_legal_mask
from klent.training import klent_rl
from klent.training.archive import StartArchive
from klent.training.fitting import symmetry_image
from klent.training.nets import NetConfig, NetOutputs, build_net
from klent.training.ownership import auxiliary_loss, final_targets
from klent.training.selfplay import GameSlots

B, W, E = 1, -1, 0

# Every stone of a 5x5 game, Black's on the left, White's on the right; White's lone stone at
# the left edge and the Black wall share the liberties above and below it (a seki under area
# scoring: the stones count, the shared liberties count for no one).  Black's stone in the
# lower right corner is captured by White's last move (D1) before the two passes.
BOARD = [
    [E, B, W, E, E],
    [B, B, W, E, E],
    [E, B, W, W, W],
    [W, B, W, E, W],
    [E, B, W, W, B],
]
# By hand: Black 6 stones + 1 point; White 9 stones + 4 + 3 points (after the capture); 2 dame.
OWNER_BY_HAND = [
    [B, B, W, W, W],
    [B, B, W, W, W],
    [E, B, W, W, W],
    [W, B, W, W, W],
    [E, B, W, W, W],
]


def final_state(komi: float = 0.5):
    """The game that ends in ``BOARD`` (after White's capture and two passes), from the empty
    board, so that self-play can restart from its positions."""
    game = GoGame(5, komi=komi)
    flat = np.array(BOARD).ravel()
    black = [p for p in np.flatnonzero(flat == B).tolist()]
    white = [p for p in np.flatnonzero(flat == W).tolist() if p != 4 * 5 + 3] + [4 * 5 + 3]
    black += [game.pass_action] * (len(white) - len(black))  # White's last move captures
    state = game.initial_state()
    for b, w in zip(black, white):
        state = state.play(b).play(w)
    state = state.play(game.pass_action).play(game.pass_action)
    assert state.is_terminal
    return game, state


def test_targets_equal_a_hand_scored_final_position_with_a_capture_and_a_seki() -> None:
    game, state = final_state(komi=0.5)
    np.testing.assert_array_equal(state.ownership(), OWNER_BY_HAND)
    black, score_black = final_targets(state.ownership(), game.komi, player=0)
    white, score_white = final_targets(state.ownership(), game.komi, player=1)
    np.testing.assert_array_equal(black, np.array(OWNER_BY_HAND).ravel())
    np.testing.assert_array_equal(white, -np.array(OWNER_BY_HAND).ravel())
    assert score_black == 7 - 16 - 0.5 == state.score()
    assert score_white == 16 - 7 + 0.5
    assert state.outcome() == -1 and np.sign(score_black) == state.outcome()


class PassingEvaluator:
    """Every move is a pass (by far the highest logit), so each game lasts two moves."""

    def __init__(self, game: GoGame) -> None:
        self.game = game

    def evaluate_encoded(self, obs: np.ndarray, masks: np.ndarray) -> Evaluation:
        logits = np.zeros(masks.shape, np.float32)
        logits[:, self.game.pass_action] = 50.0
        return Evaluation(*apply_legal_mask(logits, np.zeros(masks.shape, np.float32), masks), None)


def test_self_play_samples_get_their_finished_games_final_ownership_and_score() -> None:
    """Games restarted from a stored position end by two passes: each of their samples gets
    that final board's ownership from its mover's view; the games still running at the end of
    the window get none."""
    game, state = final_state()

    class FixedStart(StartArchive):
        """Every game starts before the two passes (self-play's own states are not stored)."""

        def add(self, actions: list[int], length: int) -> None:
            pass

    archive = FixedStart(capacity=1, initial_prob=0.0)
    StartArchive.add(archive, state.moves(), len(state.moves()) - 2)
    slots = GameSlots(game, 3, np.random.default_rng(0), archive)
    samples = klent_rl.collect(slots, PassingEvaluator(game), klent_rl.KlentConfig(), steps=5, ownership_targets=True)
    assert samples.ownership is not None and samples.score is not None
    ownership = samples.ownership.reshape(5, 3, 25)
    score = samples.score.reshape(5, 3)
    known = ~np.isnan(score)
    # Two-move games from step 0: steps 0-1 and 2-3 end by the rules; step 4's game runs on.
    np.testing.assert_array_equal(known, np.array([[True] * 3] * 4 + [[False] * 3]))
    assert np.isnan(ownership[4]).all()
    black = np.array(OWNER_BY_HAND, dtype=np.float32).ravel()
    for step in range(4):
        mover = state.previous.previous.to_play if step % 2 == 0 else 1 - state.previous.previous.to_play
        sign = 1.0 if mover == 0 else -1.0
        for slot in range(3):
            np.testing.assert_array_equal(ownership[step, slot], sign * black)
            assert score[step, slot] == sign * state.score()
    plain = klent_rl.collect(GameSlots(game, 2, np.random.default_rng(0), None), PassingEvaluator(game),
                          klent_rl.KlentConfig(), steps=2)
    assert plain.ownership is None and plain.score is None


def test_auxiliary_loss_counts_only_samples_with_targets_and_learns_them() -> None:
    torch.manual_seed(0)
    game, state = final_state()
    model = build_net(game, NetConfig(blocks=1, channels=8, ownership_head=True, score_head=True))
    obs = torch.from_numpy(game.encode_batch([state.previous.previous] * 4))
    target, score = final_targets(state.ownership(), game.komi, state.previous.previous.to_play)
    ownership = torch.from_numpy(np.stack([target] * 2 + [np.full(25, np.nan, np.float32)] * 2))
    batch = {"ownership": ownership, "score": torch.tensor([score, score, np.nan, np.nan])}
    loss, parts = auxiliary_loss(model(obs), batch, 1.0, 1.0)
    assert torch.isfinite(loss) and set(parts) == {"ownership_loss", "score_loss"}
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(100):
        loss, parts = auxiliary_loss(model(obs), batch, 1.0, 1.0)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()
    with torch.no_grad():
        out = model(obs)
    assert out.ownership is not None and out.score is not None
    learnt = out.ownership[0].flatten().detach().numpy()
    assert (np.sign(learnt.round(1)) == target).mean() > 0.9
    assert abs(float(out.score[0]) - score) < 1.5
    without = build_net(game, NetConfig(blocks=1, channels=8))
    assert auxiliary_loss(without(obs), batch, 1.0, 1.0)[1] == {}
    assert float(auxiliary_loss(model(obs), {}, 1.0, 1.0)[0]) == 0.0


def test_symmetry_image_moves_ownership_with_the_board() -> None:
    game, state = final_state()
    table = game.symmetries()
    owner = state.ownership().ravel().astype(np.float32)
    arrays = {"obs": game.encode_batch([state]), "masks": state.legal_mask()[None], "actions": np.array([0]),
              "ownership": owner[None], "score": np.array([1.5], np.float32)}
    batch = {name: torch.from_numpy(array) for name, array in arrays.items()}
    for index in range(1, len(table)):
        image = symmetry_image(batch, index, torch.from_numpy(table[index]))
        turned = np.empty(25, np.float32)
        turned[table[index][:25]] = owner
        np.testing.assert_array_equal(image["ownership"][0].numpy(), turned)
        assert float(image["score"][0]) == 1.5


def test_net_outputs_convert_to_float32() -> None:
    zeros = torch.zeros(2, 3, dtype=torch.bfloat16)
    half = NetOutputs(zeros, None, None, torch.zeros(2, 2, 2, dtype=torch.bfloat16), None)
    converted = half.as_float()
    assert converted.policy_logits.dtype == torch.float32 and converted.ownership.dtype == torch.float32
    assert converted.action_values is None


def test_validation_scores_the_ownership_and_score_predictions() -> None:
    """A model that predicts the true owner of every point but one per position, and a score
    two points off, scores (owned points - 1 per position) / owned points and 2.0."""
    from klent.training.distill import LabelledSet, validation_metrics
    from klent.training.packed import PackedPlanes

    game, state = final_state()
    owner = np.array(OWNER_BY_HAND, dtype=np.int8).ravel()
    count = 3
    data = LabelledSet(
        obs=PackedPlanes.from_array(np.zeros((count, *game.observation_shape), np.float32)),
        legal=np.stack([np.packbits(np.ones(game.num_actions, bool))] * count),
        label_start=np.arange(count + 1),
        action=np.zeros(count, np.int64),
        value=np.ones(count, np.float32),
        validation=np.ones(count, bool),
        ownership=np.stack([owner] * count),
        score=np.full(count, -9.5, np.float32),
    )

    class Predictor(torch.nn.Module):
        config = NetConfig(ownership_head=True, score_head=True)

        def forward(self, obs: torch.Tensor) -> NetOutputs:
            batch = len(obs)
            wrong = torch.from_numpy(owner.astype(np.float32)).repeat(batch, 1)
            wrong[:, 0] = -wrong[:, 0]  # the top-left point's owner is wrong
            return NetOutputs(torch.zeros(batch, game.num_actions), torch.zeros(batch, game.num_actions), None,
                              wrong.reshape(batch, 5, 5) * 0.9, torch.full((batch,), -7.5))

    metrics = validation_metrics(Predictor(), data, game.num_actions, torch.device("cpu"))
    decided = int((owner != 0).sum())
    assert metrics["val_ownership"] == pytest.approx((decided - 1) / decided)
    assert metrics["val_score_mae"] == pytest.approx(2.0)
