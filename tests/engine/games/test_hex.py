"""Hex rules, swap, encoder, notation and symmetries, against a plain-Python union-find."""

from __future__ import annotations

import numpy as np
import pytest

import klent.engine.games as games
from klent.engine.games.base import GameFormatError, IllegalMoveError
from klent.engine.games.hex import HexGame
from klent.engine.games.symmetry import dihedral, point_permutations

HALF_TURN = 2  # dihedral index of the rotation by 180 degrees


class Connections:
    """Union-find over the cells plus four virtual edge nodes, fed one stone at a time.

    Written from the rules' text, not from the engine: neighbours of (r, c) are (r, c+-1),
    (r+-1, c), (r-1, c+1), (r+1, c-1); Black joins the top and bottom rows, White the left and
    right columns.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        n = size * size
        self.top, self.bottom, self.left, self.right = n, n + 1, n + 2, n + 3
        self.parent = list(range(n + 4))
        self.color: dict[int, int] = {}

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)

    def add(self, row: int, col: int, color: int) -> None:
        size, cell = self.size, row * self.size + col
        self.color[cell] = color
        for dr, dc in ((0, -1), (0, 1), (-1, 0), (1, 0), (-1, 1), (1, -1)):
            r, c = row + dr, col + dc
            if 0 <= r < size and 0 <= c < size and self.color.get(r * size + c) == color:
                self.union(cell, r * size + c)
        if color == 1:
            if row == 0:
                self.union(cell, self.top)
            if row == size - 1:
                self.union(cell, self.bottom)
        else:
            if col == 0:
                self.union(cell, self.left)
            if col == size - 1:
                self.union(cell, self.right)

    def winner(self) -> int:
        if self.find(self.top) == self.find(self.bottom):
            return 1
        if self.find(self.left) == self.find(self.right):
            return -1
        return 0


def test_registry_and_layout() -> None:
    game = games.get("hex11")
    assert isinstance(game, HexGame) and "hex11" in games.GAME_IDS
    assert (game.name, game.size, game.num_actions, game.swap_action) == ("hex11", 11, 122, 121)
    assert game.observation_shape == (4, 11, 11) and game.encoder_version == 1 and not game.swap
    assert game.action_planes is None  # the swap is not a board cell
    small = games.get("HEX5", swap=True)
    assert (small.name, small.num_actions, small.swap) == ("hex5", 26, True)
    for size in (1, 20):
        with pytest.raises(ValueError, match="2..19"):
            HexGame(size)


@pytest.mark.parametrize(("size", "swap", "games_played"), [(11, False, 150), (5, True, 150), (2, False, 20)])
def test_random_games_end_exactly_when_a_chain_connects(size: int, swap: bool, games_played: int) -> None:
    game = HexGame(size, swap=swap)
    rng = np.random.default_rng(size)
    for trial in range(games_played):
        state = game.initial_state()
        reference = Connections(size)
        action = -1  # the last stone played: the swap below mirrors Black's opening stone
        while True:
            assert state.is_terminal == (reference.winner() != 0)
            if state.is_terminal:
                break
            empty = np.flatnonzero(state.board().ravel() == 0)
            expected = np.isin(np.arange(size * size), empty)
            assert (state.legal_mask() == np.append(expected, swap and state.move_number == 1)).all()
            if state.can_swap and trial % 2 == 0:
                row, col = divmod(action, size)  # Black's opening stone
                state = state.play(game.swap_action)
                reference = Connections(size)
                reference.add(col, row, -1)  # mirrored across the long diagonal, and White's
                assert state.board().ravel()[col * size + row] == -1 and state.to_play == 0
                continue
            action = int(rng.choice(empty))
            color = 1 if state.to_play == 0 else -1
            state = state.play(action)
            reference.add(*divmod(action, size), color)
            assert state.board().ravel()[action] == color
        # The player of the last stone won.
        assert state.outcome() == reference.winner() == (1 if state.to_play == 1 else -1)
        assert state.reward_for(1) == -state.outcome()
        assert not state.legal_mask().any()
        assert np.count_nonzero(state.board()) <= size * size


def test_edges_and_notation() -> None:
    game = HexGame(11)
    # a Black column a1..a11 joins top and bottom; the same cells are White's left edge only.
    state = game.initial_state()
    for row in range(1, 12):
        state = state.play(game.text_to_action(state, f"a{row}"))
        if not state.is_terminal:
            state = state.play(game.text_to_action(state, f"k{row}"))  # White's right edge
    assert state.is_terminal and state.outcome() == 1.0 and state.move_number == 21
    # A White row along the top joins left and right; Black's stones below do not connect.
    state = game.initial_state()
    for col in "abcdefghijk":
        state = state.play(game.text_to_action(state, f"{col}3"))  # Black, row 3
        if col == "k":
            break
        state = state.play(game.text_to_action(state, f"{col}1"))  # White, row 1
    assert not state.is_terminal  # Black's row-3 line is a left-right chain, not Black's goal
    state = state.play(game.text_to_action(state, "k1"))
    assert state.is_terminal and state.outcome() == -1.0
    assert [game.parse_cell(t) for t in ("a1", "k1", "A11", "k11", "f6", " Swap ")] == [0, 10, 110, 120, 60, 121]
    assert [game.cell(a) for a in (0, 10, 110, 120, 121)] == ["a1", "k1", "a11", "k11", "swap"]
    for text in ("l1", "a12", "a0", "", "f", "f6x"):
        with pytest.raises(GameFormatError):
            game.parse_cell(text)


def test_illegal_moves_name_the_reason() -> None:
    game = HexGame(5)
    state = game.initial_state().play(12)
    with pytest.raises(IllegalMoveError, match="occupied"):
        game.text_to_action(state, "c3")
    with pytest.raises(IllegalMoveError, match="swap rule"):
        state.play(game.swap_action)
    for action in (-1, 26):
        with pytest.raises(IllegalMoveError, match="not an action"):
            state.play(action)
    state = game.initial_state()
    for row in range(5):  # Black walks down column a while White plays column e
        state = state.play(row * 5)
        if row < 4:
            state = state.play(row * 5 + 4)
    assert state.is_terminal
    with pytest.raises(IllegalMoveError, match="game is over"):
        state.play(int(np.flatnonzero(state.board().ravel() == 0)[0]))
    with pytest.raises(ValueError):
        game.initial_state().outcome()


def test_swap_rule() -> None:
    game = HexGame(11, swap=True)
    start = game.initial_state()
    assert not start.legal_mask()[game.swap_action] and not start.can_swap
    opened = start.play(game.parse_cell("c2"))  # row 1, column 2
    assert opened.legal_mask()[game.swap_action] and opened.legal_mask().sum() == 121
    assert game.encode(opened)[3].all() and not game.encode(start)[3].any()
    swapped = opened.play(game.text_to_action(opened, "swap"))
    board = swapped.board()
    assert board[2, 1] == -1 and np.count_nonzero(board) == 1  # White on b3, Black's c2 gone
    assert swapped.to_play == 0 and swapped.move_number == 2 and not swapped.is_terminal
    assert not swapped.legal_mask()[game.swap_action] and swapped.legal_mask().sum() == 120
    assert not game.encode(swapped)[3].any()
    with pytest.raises(IllegalMoveError, match="swap"):
        swapped.play(game.swap_action)
    # Declining the swap: a stone instead, and the swap is gone for good.
    declined = opened.play(game.parse_cell("f6"))
    assert not declined.legal_mask()[game.swap_action]
    # After the swap the stone is White's for good: White's row 3 joins left and right while
    # Black fills the bottom row, which joins nothing for Black.
    state = swapped
    for col in "acdefghijk":
        state = state.play(game.parse_cell(f"{col}11"))
        state = state.play(game.parse_cell(f"{col}3"))
    assert state.is_terminal and state.outcome() == -1.0
    # Without the option the swap is never legal.
    plain = HexGame(11).initial_state().play(60)
    assert not plain.legal_mask()[121]
    with pytest.raises(IllegalMoveError):
        plain.play(121)


def test_encoder_planes() -> None:
    game = HexGame(5, swap=True)
    start = game.initial_state()
    black_moved = start.play(7)
    white_moved = black_moved.play(13)
    for state in (start, black_moved, white_moved):
        obs = game.encode(state)
        color = 1 if state.to_play == 0 else -1
        assert obs.shape == (4, 5, 5) and obs.dtype == np.float32
        assert (obs[0] == (state.board() == color)).all() and (obs[1] == (state.board() == -color)).all()
        assert (obs[2] == float(state.to_play == 1)).all()
        assert (obs[3] == float(state.can_swap)).all()
    batch = game.encode_batch([start, black_moved, white_moved])
    assert all((batch[i] == game.encode(s)).all() for i, s in enumerate((start, black_moved, white_moved)))


def test_only_the_half_turn_keeps_both_goals() -> None:
    game = HexGame(7, swap=True)
    assert (game.symmetries() == np.arange(game.num_actions)[None]).all()  # see the module docstring
    # The half turn commutes with the rules: a game replayed through it is the image of the
    # original at every move, swap included, and ends the same way.
    turn = np.append(point_permutations(7)[HALF_TURN], game.swap_action)
    rng = np.random.default_rng(11)
    for trial in range(30):
        state, image = game.initial_state(), game.initial_state()
        while not state.is_terminal:
            assert (image.legal_mask()[turn] == state.legal_mask()).all()
            assert (game.encode(image) == dihedral(game.encode(state), HALF_TURN)).all()
            swap = state.can_swap and trial % 3 == 0
            action = game.swap_action if swap else int(rng.choice(state.legal_actions()))
            state, image = state.play(action), image.play(int(turn[action]))
        assert image.is_terminal and image.outcome() == state.outcome()
    # The diagonal mirror keeps the cells' adjacency but swaps the goals: Black's winning
    # column a1..a7 becomes the top row a1..g1, which is no win for Black.
    column = game.initial_state()
    for row in range(7):
        column = column.play(row * 7)
        if row < 6:
            column = column.play(row * 7 + 6)  # White's column g: no win for White either
    assert column.is_terminal and column.outcome() == 1.0
    top_row = game.initial_state()
    for col in range(7):
        top_row = top_row.play(col)
        if col < 6:
            top_row = top_row.play(6 * 7 + col)
    assert not top_row.is_terminal
