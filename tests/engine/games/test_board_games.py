"""klent/engine/games/board_games.py: the pieces Go, Hex and Othello share, checked on each game, and the
chess-like games' repetition tables."""

from __future__ import annotations

import numpy as np
import pytest

from klent.engine.games.animal_shogi import AnimalShogiGame
from klent.engine.games.base import GameFormatError, IllegalMoveError
from klent.engine.games.gardner import GardnerGame
from klent.engine.games.go import GoGame
from klent.engine.games.hex import HexGame
from klent.engine.games.othello import OthelloGame

GAMES = [GoGame(9), HexGame(11), OthelloGame()]


@pytest.mark.parametrize("game", GAMES, ids=lambda g: g.name)
def test_a_notation_refuses_actions_the_game_does_not_have(game) -> None:
    write = getattr(game, {"go9": "vertex", "hex11": "cell", "othello": "square"}[game.name])
    for action in (-1, game.num_actions):
        with pytest.raises(IllegalMoveError, match=rf"action {action} is not a move of {game.name}"):
            write(action)


@pytest.mark.parametrize("game", GAMES, ids=lambda g: g.name)
def test_a_state_shows_a_read_only_square_board_and_says_what_it_is(game) -> None:
    state = game.initial_state()
    state = state.play(int(np.flatnonzero(state.legal_mask())[0]))
    board = state.board()
    size = int(np.sqrt(board.size))
    assert board.shape == (size, size) and np.count_nonzero(board) >= 1
    with pytest.raises(ValueError):
        board[0, 0] = 1
    assert repr(state) == f"<{type(state).__name__} {game.name} move 1, White to play>"


@pytest.mark.parametrize("game, piece, point", [(GoGame(9), "stone", "B9"), (OthelloGame(), "disc", "b1")],
                         ids=["go9", "othello"])
def test_a_set_up_position_refuses_points_off_the_board_or_given_twice(game, piece, point) -> None:
    with pytest.raises(GameFormatError, match=rf"set-up {piece} 99 is off the"):
        game.setup_state(black=[99])
    with pytest.raises(GameFormatError, match=rf"set-up point {point} is given twice"):
        game.setup_state(black=[1], white=[1])
    with pytest.raises(ValueError, match="to_play"):
        game.setup_state(black=[1], to_play=2)
    state = game.setup_state(black=[1], white=[2], to_play=1)
    assert state.board().ravel()[1] == 1 and state.board().ravel()[2] == -1 and state.to_play == 1


@pytest.mark.parametrize("game", [AnimalShogiGame(max_moves=None), GardnerGame(max_moves=None)], ids=lambda g: g.name)
def test_a_record_indexed_in_repetition_tables_counts_as_the_chain_does(game) -> None:
    """`play_in_record` counts repetitions through `RepetitionTable`s instead of walking the
    chain: on records that repeat positions, leave each other's lines (a takeback), extend a
    record from an older position and search from any of them, every position has the
    repetitions, observation and ending that plain `play` gives it."""
    rng = np.random.default_rng(0)
    start = game.initial_state()

    def shuffle(state, plies: int) -> list[int]:
        """Moves that mostly repeat: the first two legal moves, at random."""
        actions = []
        for _ in range(plies):
            if state.is_terminal:
                break
            legal = np.flatnonzero(state.legal_mask())
            actions.append(int(legal[rng.integers(min(3, legal.size))]))
            state = state.play(actions[-1])
        return actions

    def check(state, actions: list[int]) -> int:
        plain = start
        for action in actions:
            plain = plain.play(action)
        assert (state.repetitions, state.termination) == (plain.repetitions, plain.termination)
        assert np.array_equal(game.encode(state), game.encode(plain))
        return state.repetitions

    records, seen = [], 0
    for _ in range(12):
        base = records[rng.integers(len(records))] if records else (start, [])
        cut = int(rng.integers(len(base[1]) + 1))  # a takeback to any earlier position, or none
        state, actions = start, base[1][:cut]
        for action in actions:
            state = state.play_in_record(action)
        for action in shuffle(state, 60):
            state = state.play_in_record(action)
            actions.append(action)
            seen += check(state, actions)
        records.append((state, actions))
        searched = shuffle(state, 12)  # a search's line from the record's last position
        for ply, action in enumerate(searched, start=1):
            state = state.play(action)
            seen += check(state, actions + searched[:ply])
    assert seen > 0  # the records did repeat positions
