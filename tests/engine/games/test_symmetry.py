"""Board symmetries agree with the rules and the encoder.

A game replayed through a symmetry's action permutation must be the image of the original at
every move: same legality, observation planes mapped by `dihedral`, same outcome.  The trainer's
augmentation relies on exactly that.
"""

from __future__ import annotations

import numpy as np
import pytest

import klent.engine.games
from klent.engine.games.go import GoGame
from klent.engine.games.symmetry import COUNT, dihedral, point_permutations


def test_tables_are_permutations_with_the_identity_first() -> None:
    table = point_permutations(5, extra_actions=1)
    assert table.shape == (COUNT, 26)
    assert (table[0] == np.arange(26)).all()
    for row in table:
        assert sorted(row.tolist()) == list(range(26)) and row[25] == 25
    assert len({tuple(row) for row in table}) == COUNT  # eight distinct symmetries


def test_dihedral_moves_a_point_where_the_permutation_says() -> None:
    size = 7
    for index in range(COUNT):
        for point in (0, 3, 10, 48):
            board = np.zeros((size, size))
            board[divmod(point, size)] = 1
            image = dihedral(board, index)
            assert image.ravel().argmax() == point_permutations(size)[index, point]


def test_dihedral_rejects_a_bad_index() -> None:
    with pytest.raises(ValueError, match="0..7"):
        dihedral(np.zeros((3, 3)), 8)


@pytest.mark.parametrize("size", [5, 9])
def test_go_games_replayed_through_a_symmetry_are_images(size: int) -> None:
    game = GoGame(size)
    table = game.symmetries()
    rng = np.random.default_rng(size)
    for _ in range(4):
        original = game.initial_state()
        images = [game.initial_state() for _ in range(COUNT)]
        while not original.is_terminal:
            obs, mask = game.encode(original), original.legal_mask()
            for index, image in enumerate(images):
                np.testing.assert_array_equal(game.encode(image), dihedral(obs, index))
                np.testing.assert_array_equal(image.legal_mask()[table[index]], mask)
            legal = original.legal_actions()
            action = int(rng.choice(legal))
            original = original.play(action)
            images = [image.play(int(table[index, action])) for index, image in enumerate(images)]
        assert all(image.is_terminal and image.outcome() == original.outcome() for image in images)


def test_games_without_board_symmetry_have_the_identity_only() -> None:
    chess = klent.engine.games.get("chess")
    assert (chess.symmetries() == np.arange(chess.num_actions)[None]).all()
