"""Hex on a rhombic board from 2x2 to 19x19 (``hex11`` is the usual one), with an optional swap.

Rules (what `HexState` enforces):

* Black (player 0) moves first; a move is a stone on any empty cell.  Black wins by joining
  the top and bottom edges (rows 1 and ``size``) with a chain of its stones, White (player 1)
  by joining the left and right edges (columns "a" and the last letter).  The game ends on
  the move that completes such a chain.  A full board always holds exactly one, so there are
  no draws, no passes and no move cap.
* With ``swap=True`` (the pie rule, in Hex's swap-pieces form as HexGui, LittleGolem and Pgx
  play it) White's first move may be "swap": Black's stone on (row, col) is replaced by a
  White stone on (col, row), its mirror image across the long diagonal, and Black moves
  next.  That is the position Black would face had the two players changed colours, written
  without changing who is Black, so player 0 stays Black and the goals stay put.  Black
  then gains nothing by opening with a strong cell, which is what makes Hex fair.

Coordinates: action ``row * size + col`` for a cell, ``size * size`` for the swap (always
in the action layout, legal only as above, like Pgx).  Row 0 is the top row, "1" in
notation, and column 0 is "a": "a1" is the top-left corner, "k11" the bottom-right on
11x11.  Each row is drawn half a cell to the right of the one above, so the neighbours of
(row, col) are (row, col +- 1), (row +- 1, col), (row - 1, col + 1) and (row + 1, col - 1):
the acute corners "a1" and "k11" touch two cells, the obtuse corners "k1" and "a11" three.
Text is lower-case on output and case-insensitive on input.

Observation (encoder version 1, Pgx's Hex observation laid out channels-first): the stones
of the side to move, the opponent's stones, a plane of ones when White is to move (the
edges to join depend on the colour), a plane of ones when the swap is legal.  Actions are
board cells as they stand for both colours; the board is not transposed for White.

Symmetries: the board's automorphisms are the half turn and the two reflections across the
diagonals, but the reflections exchange the top-bottom and left-right edges, so the only one
that keeps each player's goal is the half turn (`symmetry.dihedral` index 2).  The contract
numbers symmetry tables by dihedral index (row s acts on observations as ``dihedral(obs,
s)``), and index 1, the quarter turn, is no symmetry of Hex, so `symmetries` keeps the
identity alone (the test suite checks the half turn against the rules).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from klent.engine.games import hex_kernels as k
from klent.engine.games.base import GameFormatError, IllegalMoveError, State
from klent.engine.games.board_games import BoardGame, BoardState, board_point, read_only_board

COLUMNS = "abcdefghijklmnopqrs"
MIN_SIZE, MAX_SIZE = 2, 19


@cache
def _neighbours(size: int) -> np.ndarray:
    """Neighbour table shared by every game of one board size."""
    return k.neighbour_table(size)


class HexState(BoardState["HexGame"]):
    """An immutable Hex position: the stones, whose move it is and the winner so far.

    Besides the contract: `board`.  States are made by `HexGame.initial_state` and `play`.
    """

    __slots__ = ("_board", "_winner")

    def __init__(self, game: HexGame, board: np.ndarray, to_play: int, move_number: int, winner: int) -> None:
        # Built only by HexGame and play(); the board is never written afterwards.
        self._game = game
        self._board = board  # int8[size * size]: +1 Black, -1 White, 0 empty
        self._to_play = to_play
        self._move_number = move_number
        self._winner = winner  # +1 Black has connected, -1 White has, 0 nobody yet

    @property
    def is_terminal(self) -> bool:
        return self._winner != 0

    @property
    def can_swap(self) -> bool:
        """Whether "swap" is legal: White's first move in a game created with ``swap=True``."""
        return self._game.swap and self._move_number == 1

    def legal_mask(self) -> np.ndarray:
        game = self._game
        mask = np.zeros(game.num_actions, dtype=np.bool_)
        if self._winner == 0:
            np.equal(self._board, 0, out=mask[: game.swap_action])
            mask[game.swap_action] = self.can_swap
        return mask

    def play(self, action: int) -> HexState:
        game = self._game
        action = int(action)
        if not 0 <= action < game.num_actions:
            raise IllegalMoveError(f"illegal move {action}: not an action of {game.name} (0..{game.swap_action})")
        if self._winner != 0:
            raise IllegalMoveError(f"illegal move {game.cell(action)}: the game is over")
        if action == game.swap_action:
            if not self.can_swap:
                raise IllegalMoveError("illegal move swap: only White's first move in a game with the swap rule")
            row, col = divmod(int(np.flatnonzero(self._board)[0]), game.size)
            board = np.zeros_like(self._board)
            board[col * game.size + row] = -1
            return HexState(game, board, 0, self._move_number + 1, 0)
        if self._board[action] != 0:
            raise IllegalMoveError(f"illegal move {game.cell(action)}: the cell is occupied")
        color = 1 if self._to_play == 0 else -1
        board = np.empty_like(self._board)
        won = k.play_stone(self._board, action, color, game.size, game._nbr, board)
        return HexState(game, board, 1 - self._to_play, self._move_number + 1, color if won else 0)

    def outcome(self) -> float:
        if self._winner == 0:
            raise ValueError("outcome() of a game that is not over")
        return float(self._winner)

    def board(self) -> np.ndarray:
        """Read-only ``int8[size, size]`` view: +1 Black, -1 White, 0 empty; row 0 is the top."""
        return read_only_board(self._board, self._game.size)


class HexGame(BoardGame):
    """Hex rules for one board size, with or without the swap (see the module docstring).

    ``name`` is ``f"hex{size}"``: the swap action is in the layout either way, so one model
    serves both.
    """

    encoder_version = 1

    def __init__(self, size: int, swap: bool = False) -> None:
        if not isinstance(size, int) or not MIN_SIZE <= size <= MAX_SIZE:
            raise ValueError(f"Hex board size must be {MIN_SIZE}..{MAX_SIZE}, not {size!r}")
        self.size = size
        self.swap = bool(swap)
        self.name = f"hex{size}"
        self.num_actions = size * size + 1
        self.swap_action = size * size
        self.observation_shape = (4, size, size)
        self._nbr = _neighbours(size)

    def initial_state(self) -> HexState:
        return HexState(self, np.zeros(self.size * self.size, dtype=np.int8), 0, 0, 0)

    # --- encoder ------------------------------------------------------------------------

    def _encode_into(self, state: State, out: np.ndarray) -> None:
        assert isinstance(state, HexState) and state._game.size == self.size
        k.encode_planes(state._board, 1 if state._to_play == 0 else -1, state.can_swap, out)

    # --- notation -----------------------------------------------------------------------

    def cell(self, action: int) -> str:
        """Notation of an action: "f6" (column letter, row number from the top), or "swap"."""
        point = board_point(action, self.size, self.swap_action, self.name)
        return "swap" if point is None else f"{COLUMNS[point[1]]}{point[0] + 1}"

    def parse_cell(self, text: str) -> int:
        """Action of a cell ("f6", "K11", "swap"); raises `GameFormatError` if malformed."""
        word = text.strip().lower()
        if word == "swap":
            return self.swap_action
        col = COLUMNS.find(word[:1]) if word else -1
        digits = word[1:]
        number = int(digits) if digits.isascii() and digits.isdigit() else 0
        if not 0 <= col < self.size or not 1 <= number <= self.size:
            raise GameFormatError(f"not a cell of a {self.size}x{self.size} Hex board: {text!r}")
        return (number - 1) * self.size + col

    def action_to_text(self, state: State, action: int) -> str:
        return self.cell(action)

    def text_to_action(self, state: State, text: str) -> int:
        """Parse and check a move; `IllegalMoveError` names the move and the reason."""
        assert isinstance(state, HexState)
        action = self.parse_cell(text)
        if not state.legal_mask()[action]:
            state.play(action)  # raises IllegalMoveError naming the move and the reason
            raise AssertionError(f"legal_mask and play disagree on {self.cell(action)}")
        return action
