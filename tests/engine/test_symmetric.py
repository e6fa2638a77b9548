"""Symmetry averaging (`klent.engine.symmetric`): outputs averaged over images of the board."""

from __future__ import annotations

import numpy as np
import pytest

from klent.engine.games.base import State
from klent.engine.games.symmetry import COUNT, dihedral
from klent.engine.network import Evaluation, OnnxEvaluator, encode_states, softmax
from klent.engine.symmetric import SymmetricEvaluator, inverse

GO9 = "weights/go9.onnx"  # a shipped model with ownership and score heads


def _go9_position() -> tuple[OnnxEvaluator, State]:
    """The shipped 9x9 network, and a position of its game (its encoder's)."""
    network = OnnxEvaluator(GO9, threads=1)
    game = network.game
    state = game.initial_state()
    for move in ("C3", "E5", "G7", "C7", "D4"):
        state = state.play(game.text_to_action(state, move))
    return network, state


def _image(obs: np.ndarray, masks: np.ndarray, table: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    """The observations and legal masks of the positions turned by symmetry ``s``."""
    image_masks = np.empty_like(masks)
    image_masks[:, table[s]] = masks
    return dihedral(obs, s), image_masks


def test_inverse_undoes_each_symmetry() -> None:
    planes = np.arange(2 * 5 * 5).reshape(2, 5, 5)
    for s in range(COUNT):
        assert np.array_equal(dihedral(dihedral(planes, s), inverse(s)), planes)
        assert not s or not np.array_equal(dihedral(planes, s), planes)


def test_the_average_over_all_eight_images_turns_with_the_board() -> None:
    """One network call is not equivariant (its policy on a turned board differs from the
    turned policy); the average over the whole group is, exactly, for every output."""
    network, state = _go9_position()
    game = network.game
    averaged = SymmetricEvaluator(network, COUNT)
    table = game.symmetries()
    obs, masks = encode_states(game, [state])
    base, plain = averaged.evaluate_encoded(obs, masks), network.evaluate_encoded(obs, masks)
    assert base.ownership is not None and base.score is not None
    plain_gap = 0.0
    for s in range(1, COUNT):
        image_obs, image_masks = _image(obs, masks, table, s)
        turned = averaged.evaluate_encoded(image_obs, image_masks)
        np.testing.assert_allclose(turned.policy_logits[:, table[s]], base.policy_logits, atol=1e-4)
        np.testing.assert_allclose(turned.action_values[:, table[s]], base.action_values, atol=1e-5)
        np.testing.assert_allclose(turned.ownership, dihedral(base.ownership, s), atol=1e-5)
        np.testing.assert_allclose(turned.score, base.score, atol=1e-4)
        plain_turned = network.evaluate_encoded(image_obs, image_masks)
        plain_gap = max(plain_gap, float(np.abs(plain_turned.policy_logits[:, table[s]] - plain.policy_logits).max()))
    assert plain_gap > 1e-3


def test_the_policy_is_the_mean_of_the_images_probabilities() -> None:
    network, state = _go9_position()
    game = network.game
    table = game.symmetries()
    obs, masks = encode_states(game, [state, state.play(game.text_to_action(state, "F3"))])
    images: list[Evaluation] = [network.evaluate_encoded(*_image(obs, masks, table, s)) for s in range(4)]
    expected = np.mean([softmax(e.policy_logits)[:, table[s]] for s, e in enumerate(images)], axis=0)
    got = SymmetricEvaluator(network, 4).evaluate_encoded(obs, masks)
    np.testing.assert_allclose(softmax(got.policy_logits), expected, atol=1e-5)
    assert (softmax(got.policy_logits)[~masks] == 0).all()
    np.testing.assert_allclose(got.action_values, np.mean([e.action_values[:, table[s]] for s, e in enumerate(images)],
                                                          axis=0), atol=1e-6)


def test_one_image_is_the_network_itself_and_a_game_without_symmetries_has_only_that(untrained_model) -> None:
    network, state = _go9_position()
    one, plain = SymmetricEvaluator(network, 1).evaluate([state]), network.evaluate([state])
    np.testing.assert_array_equal(one.policy_logits, plain.policy_logits)
    chess = OnnxEvaluator(untrained_model("chess"), threads=1)
    with pytest.raises(ValueError, match="chess has 1 board symmetries"):
        SymmetricEvaluator(chess, 2)
    with pytest.raises(ValueError, match="not 9"):
        SymmetricEvaluator(network, 9)
