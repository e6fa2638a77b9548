"""Othello rules, encoder, notation and symmetries, against published perft counts and a
plain-Python reference move generator."""

from __future__ import annotations

import numpy as np
import pytest

import klent.engine.games as games
from klent.engine.games.base import GameFormatError, IllegalMoveError
from klent.engine.games.othello import OthelloGame, OthelloState
from klent.engine.games.symmetry import COUNT, dihedral

RAYS = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)]


def reference_flips(board: np.ndarray, row: int, col: int, color: int) -> list[tuple[int, int]]:
    """The discs a ``color`` disc on (row, col) of an 8x8 board would flip (plain Python)."""
    if board[row, col] != 0:
        return []
    flips: list[tuple[int, int]] = []
    for dr, dc in RAYS:
        run: list[tuple[int, int]] = []
        r, c = row + dr, col + dc
        while 0 <= r < 8 and 0 <= c < 8 and board[r, c] == -color:
            run.append((r, c))
            r, c = r + dr, c + dc
        if run and 0 <= r < 8 and 0 <= c < 8 and board[r, c] == color:
            flips += run
    return flips


def reference_moves(board: np.ndarray, color: int) -> set[int]:
    return {r * 8 + c for r in range(8) for c in range(8) if reference_flips(board, r, c, color)}


def position(diagram: str, to_play: int = 0) -> OthelloState:
    """A set-up state from eight rows drawn top (rank 1) to bottom: X Black, O White, . empty."""
    cells = "".join(diagram.split())
    assert len(cells) == 64
    black = [p for p, c in enumerate(cells) if c == "X"]
    white = [p for p, c in enumerate(cells) if c == "O"]
    return OthelloGame().setup_state(black, white, to_play)


def test_registry_and_layout() -> None:
    game = games.get("othello")
    assert isinstance(game, OthelloGame)
    assert (game.name, game.num_actions, game.pass_action) == ("othello", 65, 64)
    assert game.observation_shape == (2, 8, 8) and game.encoder_version == 1
    assert game.action_planes is None  # the pass is not a board point
    assert "othello" in games.GAME_IDS


def test_start_position_and_first_moves() -> None:
    game = OthelloGame()
    state = game.initial_state()
    board = state.board()
    assert board[3, 3] == board[4, 4] == -1 and board[3, 4] == board[4, 3] == 1  # d4 e5 White, e4 d5 Black
    assert np.count_nonzero(board) == 4 and state.to_play == 0 and state.move_number == 0
    assert [game.action_to_text(state, a) for a in state.legal_actions()] == ["d3", "c4", "f5", "e6"]
    after = state.play(game.text_to_action(state, "D3"))
    assert after.board()[2, 3] == after.board()[3, 3] == 1  # d3 placed, d4 flipped
    assert after.to_play == 1 and after.move_number == 1
    assert np.count_nonzero(state.board()) == 4  # the parent is untouched


def test_illegal_moves_name_the_reason() -> None:
    game = OthelloGame()
    state = game.initial_state()
    for text, reason in (("d4", "occupied"), ("a1", "flips no disc"), ("pass", "no other move")):
        with pytest.raises(IllegalMoveError, match=reason):
            game.text_to_action(state, text)
        with pytest.raises(IllegalMoveError, match=reason):
            state.play(game.parse_square(text))
    for action in (-1, 65):
        with pytest.raises(IllegalMoveError, match="not an action"):
            state.play(action)
    for text in ("i1", "a9", "a0", "d", "", "d33"):
        with pytest.raises(GameFormatError):
            game.parse_square(text)
    assert [game.parse_square(t) for t in ("a1", "h1", "a8", "H8", " Pass ")] == [0, 7, 56, 63, 64]
    assert [game.square(a) for a in (0, 7, 56, 63, 64)] == ["a1", "h1", "a8", "h8", "pass"]


def test_legal_mask_is_a_copy() -> None:
    state = OthelloGame().initial_state()
    state.legal_mask()[:] = True
    assert state.legal_mask().sum() == 4
    with pytest.raises(ValueError):
        state.board()[0, 0] = 1


def perft(state: OthelloState, depth: int) -> int:
    """Leaf positions ``depth`` moves ahead; a forced pass is one move (bulk count at depth 1)."""
    if depth == 1:
        return int(state.legal_mask().sum())
    return sum(perft(state.play(a), depth - 1) for a in state.legal_actions())


def test_perft_from_the_start_position() -> None:
    # Aart Bik, "Perft for Reversi" (2009), https://aartbik.blogspot.com/2009/02/perft-for-reversi.html
    # (confirmed there against an independent count): leaf nodes from the standard start, where
    # a forced pass counts as a move.  Passes first occur at depth 9 (24 of the depth-8
    # positions must pass, so depth 9 checks that convention); games that end before the full
    # depth, counted as leaves there, occur only from depth 11.
    published = [4, 12, 56, 244, 1396, 8200, 55092, 390216, 3005288]
    state = OthelloGame().initial_state()
    assert [perft(state, depth) for depth in range(1, 10)] == published


def test_forced_pass() -> None:
    game = OthelloGame()
    # Black has no move (no white disc lies between an empty square and a black disc); White
    # can take b1 by playing c1.
    state = position(
        """
        OX......
        ........
        ........
        ........
        ........
        ........
        ........
        ........
        """
    )
    assert state.legal_actions().tolist() == [game.pass_action] and not state.is_terminal
    with pytest.raises(IllegalMoveError, match="flips no disc"):
        state.play(game.parse_square("c1"))
    after = state.play(game.text_to_action(state, "pass"))
    assert after.to_play == 1 and after.move_number == 1 and (after.board() == state.board()).all()
    assert [game.action_to_text(after, a) for a in after.legal_actions()] == ["c1"]
    final = after.play(game.parse_square("c1"))  # no black disc left: nobody can move
    assert final.is_terminal and final.outcome() == -1.0


def test_game_ends_when_neither_side_can_move() -> None:
    game = OthelloGame()
    # A full board: 33 White, 31 Black.
    cells = "O" * 33 + "X" * 31
    full = position("\n".join(cells[i : i + 8] for i in range(0, 64, 8)))
    assert full.is_terminal and not full.legal_mask().any() and full.outcome() == -1.0
    assert full.reward_for(1) == 1.0
    with pytest.raises(IllegalMoveError, match="game is over"):
        full.play(game.pass_action)
    # Empty squares left but no run to flip for either side: over, and a draw on 2-2.
    stuck = position(
        """
        XX......
        ........
        ........
        ........
        ........
        ........
        ........
        ......OO
        """,
        to_play=1,
    )
    assert stuck.is_terminal and stuck.outcome() == 0.0
    with pytest.raises(ValueError):
        game.initial_state().outcome()


def test_random_games_against_the_reference() -> None:
    game = OthelloGame()
    rng = np.random.default_rng(7)
    passes = 0
    for _ in range(40):
        state = game.initial_state()
        while True:
            board = np.array(state.board())
            color = 1 if state.to_play == 0 else -1
            mine, theirs = reference_moves(board, color), reference_moves(board, -color)
            mask = state.legal_mask()
            assert set(np.flatnonzero(mask[:64])) == mine
            assert mask[64] == (not mine and bool(theirs))
            assert state.is_terminal == (not mine and not theirs)
            if state.is_terminal:
                break
            action = int(rng.choice(state.legal_actions()))
            after = state.play(action)
            expected = board.copy()
            if action == game.pass_action:
                passes += 1
            else:
                row, col = divmod(action, 8)
                expected[row, col] = color
                for r, c in reference_flips(board, row, col, color):
                    expected[r, c] = color
            assert (after.board() == expected).all() and after.to_play == 1 - state.to_play
            assert after.move_number == state.move_number + 1
            state = after
        difference = int((state.board() == 1).sum()) - int((state.board() == -1).sum())
        assert state.outcome() == np.sign(difference)
    assert passes > 0  # the random games did exercise forced passes


def test_encoder_is_from_the_side_to_move() -> None:
    game = OthelloGame()
    start = game.initial_state()
    after = start.play(game.parse_square("d3"))
    for state in (start, after):
        color = 1 if state.to_play == 0 else -1
        obs = game.encode(state)
        assert obs.shape == (2, 8, 8) and obs.dtype == np.float32
        assert (obs[0] == (state.board() == color)).all() and (obs[1] == (state.board() == -color)).all()
    batch = game.encode_batch([start, after])
    assert (batch[0] == game.encode(start)).all() and (batch[1] == game.encode(after)).all()


def test_symmetries_map_rules_and_observations() -> None:
    game = OthelloGame()
    table = game.symmetries()
    assert table.shape == (COUNT, 65) and (table[0] == np.arange(65)).all() and (table[:, 64] == 64).all()
    rng = np.random.default_rng(3)
    for _ in range(6):
        state = game.initial_state()
        for _ in range(int(rng.integers(0, 50))):
            if state.is_terminal:
                break
            state = state.play(int(rng.choice(state.legal_actions())))
        board = np.array(state.board())
        for index in range(COUNT):
            turned = dihedral(board, index).ravel()
            image = game.setup_state(np.flatnonzero(turned == 1), np.flatnonzero(turned == -1), state.to_play)
            assert (image.legal_mask()[table[index]] == state.legal_mask()).all()
            assert (game.encode(image) == dihedral(game.encode(state), index)).all()
            if not state.is_terminal:
                action = int(rng.choice(state.legal_actions()))
                moved = np.array(image.play(int(table[index, action])).board())
                assert (moved == dihedral(np.array(state.play(action).board()), index)).all()
