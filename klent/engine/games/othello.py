"""Othello on the 8x8 board.

Rules (what `OthelloState` enforces):

* Black (player 0) moves first from the standard start: White on d4 and e5, Black on d5 and
  e4.  A move puts a disc of the mover's colour on an empty square from which at least one
  straight line (row, column or diagonal) runs over opponent discs to an own disc; every
  such run is flipped.
* A player with no such square must pass, and may pass only then.  The game ends when
  neither player can place a disc (a full board included); the player with more discs wins,
  equal counts are a draw.  No game lasts more than 60 discs plus a few passes, so there is
  no move cap and no truncation.

Coordinates: action ``row * 8 + col`` for a disc, 64 for pass.  Row 0 is the top rank as the
board is drawn, "1" in notation, and column 0 is "a": "a1" is the top-left corner, Black's
four first moves are "d3", "c4", "f5" and "e6".  Text is lower-case on output and
case-insensitive on input, "pass" for the pass.

Observation (encoder version 1, Pgx's Othello observation laid out channels-first): two
planes, the discs of the side to move and the opponent's.  Othello's rules do not depend on
the colour to move (no komi, no first-move rule after the start), so the planes need nothing
else.

The rules commute with all eight rotations and reflections of the board, so a position's
image is as good a training sample as the position itself.  Four of them map the start
position to itself; the other four lead to games from the colour-swapped start, which the
rules treat alike.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from klent.engine.games import othello_kernels as k
from klent.engine.games.base import GameFormatError, IllegalMoveError, State
from klent.engine.games.board_games import BoardGame, BoardState, board_point, read_only_board, setup_board
from klent.engine.games.symmetry import point_permutations

SIZE = k.SIZE
COLUMNS = "abcdefgh"
START_WHITE = (3 * SIZE + 3, 4 * SIZE + 4)  # d4, e5
START_BLACK = (4 * SIZE + 3, 3 * SIZE + 4)  # d5, e4


class OthelloState(BoardState["OthelloGame"]):
    """An immutable Othello position.

    It keeps the legal-action mask of the side to move, computed once when the position is
    made (`play` needs it to reject illegal moves, `is_terminal` to see that nobody can
    move), so asking for the mask costs a copy.  Besides the contract: `board`.
    """

    __slots__ = ("_board", "_mask", "_live")

    def __init__(
        self, game: OthelloGame, board: np.ndarray, mask: np.ndarray, live: bool, to_play: int, move_number: int
    ) -> None:
        # Built only by OthelloGame and play(); the arrays are never written afterwards.
        self._game = game
        self._board = board  # int8[64]: +1 Black, -1 White, 0 empty
        self._mask = mask  # bool[65]: legal actions of the side to move, all False at the end
        self._live = live  # whether any action is legal, i.e. the game is not over
        self._to_play = to_play
        self._move_number = move_number

    @property
    def is_terminal(self) -> bool:
        return not self._live

    def legal_mask(self) -> np.ndarray:
        return self._mask.copy()

    def play(self, action: int) -> OthelloState:
        game = self._game
        action = int(action)
        if not 0 <= action < game.num_actions:
            raise IllegalMoveError(f"illegal move {action}: not an action of othello (0..{k.PASS})")
        if not self._mask[action]:
            raise IllegalMoveError(f"illegal move {game.square(action)}: {self._why_illegal(action)}")
        board = np.empty(k.SQUARES, dtype=np.int8)
        mask = np.empty(game.num_actions, dtype=np.bool_)
        color = 1 if self._to_play == 0 else -1
        live = k.play(self._board, action, color, board, mask)
        return OthelloState(game, board, mask, live, 1 - self._to_play, self._move_number + 1)

    def _why_illegal(self, action: int) -> str:
        if not self._live:
            return "the game is over"
        if action == k.PASS:
            return "pass is legal only when there is no other move"
        if self._board[action] != 0:
            return "the square is occupied"
        return "it flips no disc"

    def outcome(self) -> float:
        if self._live:
            raise ValueError("outcome() of a game that is not over")
        return float(np.sign(int(self._board.sum(dtype=np.int64))))  # Black's discs minus White's

    def board(self) -> np.ndarray:
        """Read-only ``int8[8, 8]`` view: +1 Black, -1 White, 0 empty; row 0 is the top ("a1" at [0, 0])."""
        return read_only_board(self._board, SIZE)


class OthelloGame(BoardGame):
    """Othello rules and encoder (see the module docstring)."""

    name = "othello"
    num_actions = k.SQUARES + 1
    pass_action = k.PASS
    observation_shape = (2, SIZE, SIZE)
    encoder_version = 1

    def initial_state(self) -> OthelloState:
        return self.setup_state(black=START_BLACK, white=START_WHITE)

    def setup_state(self, black: Iterable[int] = (), white: Iterable[int] = (), to_play: int = 0) -> OthelloState:
        """A position with discs on the given squares (``row * 8 + col``) and ``to_play`` to move.

        Any arrangement is accepted (Othello has no illegal placements, only unreachable
        ones); raises `GameFormatError` if a square is off the board or given twice.
        """
        board = setup_board(SIZE, black, white, to_play, self.square, "disc")
        mask = np.empty(self.num_actions, dtype=np.bool_)
        live = k.fill_mask(board, 1 if to_play == 0 else -1, mask)
        return OthelloState(self, board, mask, live, to_play, 0)

    def symmetries(self) -> np.ndarray:
        """The 8 rotations and reflections of the board; pass maps to itself."""
        return point_permutations(SIZE, extra_actions=1)

    # --- encoder ------------------------------------------------------------------------

    def _encode_into(self, state: State, out: np.ndarray) -> None:
        assert isinstance(state, OthelloState)
        k.encode_planes(state._board, 1 if state._to_play == 0 else -1, out)

    # --- notation -----------------------------------------------------------------------

    def square(self, action: int) -> str:
        """Notation of an action: "d3", or "pass"."""
        point = board_point(action, SIZE, k.PASS, self.name)
        return "pass" if point is None else f"{COLUMNS[point[1]]}{point[0] + 1}"

    def parse_square(self, text: str) -> int:
        """Action of a square ("d3", "F5", "pass"); raises `GameFormatError` if malformed."""
        word = text.strip().lower()
        if word == "pass":
            return k.PASS
        if len(word) != 2 or word[0] not in COLUMNS or word[1] not in "12345678":
            raise GameFormatError(f"not a square of the 8x8 board: {text!r}")
        return (int(word[1]) - 1) * SIZE + COLUMNS.index(word[0])

    def action_to_text(self, state: State, action: int) -> str:
        return self.square(action)

    def text_to_action(self, state: State, text: str) -> int:
        """Parse and check a move; `IllegalMoveError` names the move and the reason."""
        assert isinstance(state, OthelloState)
        action = self.parse_square(text)
        if not state._mask[action]:
            raise IllegalMoveError(f"illegal move {self.square(action)}: {state._why_illegal(action)}")
        return action
