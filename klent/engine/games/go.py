"""Go on any board from 5x5 to 19x19: Tromp-Taylor area scoring, positional superko.

Rules (what `GoState` enforces):

* Black (player 0) moves first; a move is a stone on an empty point or a pass.
* Enemy groups left without liberties are removed; a move that would leave its own group
  without liberties and captures nothing (suicide, single or multi-stone) is illegal.
* Positional superko: a move may not recreate any whole-board position that occurred earlier
  in the game (since the start position; side to move does not matter).  A pass is always
  legal while the game is running.
* ``GoGame(fill_own_eyes=False)``, a training rule and not Go's: a stone may not fill one of
  its own single-point eyes (`go_kernels.own_eye`, the playout rule of classical Go programs).
  Self-play under it ends by passing instead of filling eyes until groups die; the engine's
  players keep the real rules and avoid such moves on their own (`klent.engine.go_rules`).
* ``GoGame(early_pass=False)``, a training rule too: a pass is legal only when no stone can be
  played.  Self-play under it plays every game out until the dead stones are captured, so
  Tromp-Taylor's count is the count a referee who removes dead stones would give; with passes
  allowed, a network that learnt a referee's habits (passing with dead stones on the board)
  teaches its action values that such stones live.
* Two consecutive passes end the game, and so does the move cap (``max_moves``, default
  ``2 * size * size``); a capped game is scored like any other but ``is_truncated`` is True.
* Score (Tromp-Taylor area): Black's stones and empty points reaching only Black, minus the
  same for White, minus komi.  ``outcome()`` is its sign from Black's view; a draw needs an
  integer komi.

Coordinates: action ``row * size + col`` for a stone, ``size * size`` for pass.  Row 0 is the
top line of the board as it is drawn (GTP row number ``size``), column 0 is GTP column "A";
so ``board()[0, 0]`` is the top-left corner and GTP "A1" is ``board()[size - 1, 0]``.  Text
uses GTP vertices ("D4", no letter I, "pass"), case-insensitive on input.

Observation (encoder version 1, AlphaGo Zero): 17 planes; planes 0-7 hold the stones of the
side to move in the current and the 7 previous positions (current first, positions before
the start of the game are empty), planes 8-15 the opponent's stones in the same positions,
plane 16 is all ones when Black is to move and all zeros when White is.  Each state keeps its
last 8 boards, so encoding is one compiled loop.  Encoder version 2 (``GoGame(..., encoder=2)``)
adds KataGo's liberty features as planes 17-22: the side to move's stones whose chain has 1, 2
and 3 or more liberties, then the opponent's (Wu 2019 credits them with about 1.55x fewer
evaluations to equal strength).  Encoder version 3 adds one plane of ones over the board
(KataGo's "on board" feature): a fully convolutional network pads its convolutions with zeros,
and only this plane lets it tell the edge from empty points whoever is to move, so one network
plays every board size.  A game object encodes one version; a model file names its version,
and the engine builds the game for it (`with_encoder`), so models of every version play.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from klent.engine.games import go_kernels as k
from klent.engine.games.base import GameFormatError, IllegalMoveError, Setup, SetupError, State
from klent.engine.games.board_games import BoardGame, BoardState, board_point, read_only_board, setup_board
from klent.engine.games.symmetry import point_permutations

COLUMNS = "ABCDEFGHJKLMNOPQRST"  # GTP columns: no "I"
MIN_SIZE, MAX_SIZE = 5, 19
MAX_KOMI = 150.0  # |komi| klent plays with: far beyond any real komi, and finite scores stay exact
_REASONS = {
    k.OCCUPIED: "the point is occupied",
    k.SUICIDE: "suicide",
    k.SUPERKO: "it repeats an earlier position (superko)",
}


def score_text(score: float) -> str:
    """SGF's result text of a final area score from Black's view: "B+3.5", "W+0.5" or "0"."""
    if score == 0:
        return "0"
    return f"{'B' if score > 0 else 'W'}+{abs(score):g}"


class GoState(BoardState["GoGame"]):
    """An immutable Go position with what the rules and the encoder need of its past.

    Besides the contract: `board` (stones), `score` and `ownership` (Tromp-Taylor area),
    `previous` / `last_action` / `moves` / `start` (the game line, e.g. for GTP ``undo`` and
    SGF), `consecutive_passes`.  States are made by `GoGame` (initial, set-up, handicap) and
    by `play`, never directly.
    """

    __slots__ = ("_hist", "_seen", "_hash", "_passes", "_previous", "_last_action")

    def __init__(
        self,
        game: GoGame,
        hist: np.ndarray,
        seen: np.ndarray,
        position_hash: int,
        to_play: int,
        move_number: int,
        passes: int,
        previous: GoState | None,
        last_action: int | None,
    ) -> None:
        # Built only by GoGame and play().  The arrays are shared between states and never
        # written after construction; they stay writable only because numba dispatches calls
        # with writable arrays faster.  What leaves the state is a read-only view or a copy.
        self._game = game
        self._hist = hist  # int8[8, n]: this board and the 7 before it (zeros before the start)
        self._seen = seen  # sorted int64 hashes of every position since the start, this one included
        self._hash = position_hash
        self._to_play = to_play
        self._move_number = move_number
        self._passes = passes
        self._previous = previous
        self._last_action = last_action

    # --- the contract -------------------------------------------------------------------

    @property
    def is_terminal(self) -> bool:
        return self._passes >= 2 or self._move_number >= self._game.max_moves

    @property
    def is_truncated(self) -> bool:
        return self._passes < 2 and self._move_number >= self._game.max_moves

    def legal_mask(self) -> np.ndarray:
        game = self._game
        mask = np.zeros(game.num_actions, dtype=np.bool_)
        if self.is_terminal:
            return mask
        color = 1 if self._to_play == 0 else -1
        k.legal_points(self._hist[0], color, self._hash, self._seen, game._nbr, game._zob, mask)
        if not game.fill_own_eyes:
            k.clear_own_eyes(self._hist[0], color, game._nbr, game._diag, mask)
        if not game.early_pass and mask[: game.pass_action].any():
            mask[game.pass_action] = False
        return mask

    def play(self, action: int) -> GoState:
        game = self._game
        action = int(action)
        if not 0 <= action < game.num_actions:
            raise IllegalMoveError(f"illegal move {action}: not an action of {game.name} (0..{game.pass_action})")
        if self.is_terminal:
            raise IllegalMoveError(f"illegal move {game.vertex(action)}: the game is over")
        if action == game.pass_action:
            if not game.early_pass and self.legal_mask()[: game.pass_action].any():
                raise IllegalMoveError("illegal move pass: a stone can still be played (early_pass is off)")
            hist = np.concatenate((self._hist[:1], self._hist[:-1]))
            passes = self._passes + 1
            number = self._move_number + 1
            return GoState(game, hist, self._seen, self._hash, 1 - self._to_play, number, passes, self, action)
        hist = np.empty_like(self._hist)
        seen = np.empty(self._seen.shape[0] + 1, dtype=np.int64)
        color = 1 if self._to_play == 0 else -1
        if not game.fill_own_eyes and k.own_eye(self._hist[0], action, color, game._nbr, game._diag):
            raise IllegalMoveError(f"illegal move {game.vertex(action)}: it fills its own eye (fill_own_eyes is off)")
        status, new_hash = k.play_stone(
            self._hist, self._seen, self._hash, action, color, game._nbr, game._zob, hist, seen
        )
        if status != k.OK:
            raise IllegalMoveError(f"illegal move {game.vertex(action)}: {_REASONS[status]}")
        return GoState(game, hist, seen, new_hash, 1 - self._to_play, self._move_number + 1, 0, self, action)

    def outcome(self) -> float:
        if not self.is_terminal:
            raise ValueError("outcome() of a game that is not over")
        return float(np.sign(self.score()))

    # --- Go specifics -------------------------------------------------------------------

    def board(self) -> np.ndarray:
        """Read-only ``int8[size, size]`` view: +1 Black, -1 White, 0 empty; row 0 is the top."""
        return read_only_board(self._hist[0], self._game.size)

    def ownership(self) -> np.ndarray:
        """``int8[size, size]`` Tromp-Taylor area map: +1 Black's, -1 White's, 0 neither."""
        owner = np.empty(self._game.size**2, dtype=np.int8)
        k.area(self._hist[0], self._game._nbr, owner)
        return owner.reshape(self._game.size, self._game.size)

    def score(self) -> float:
        """Black's area minus White's area minus komi, as the board stands (all stones alive)."""
        owner = np.empty(self._game.size**2, dtype=np.int8)
        black, white = k.area(self._hist[0], self._game._nbr, owner)
        return float(black - white) - self._game.komi

    @property
    def previous(self) -> GoState | None:
        """The position before the last move (None at the start position)."""
        return self._previous

    @property
    def last_action(self) -> int | None:
        """The move that led here (None at the start position)."""
        return self._last_action

    @property
    def consecutive_passes(self) -> int:
        """Number of passes played in a row just before this position."""
        return self._passes

    def start(self) -> GoState:
        """The position this game line began from (empty board or a set-up position)."""
        state = self
        while state._previous is not None:
            state = state._previous
        return state

    def moves(self) -> list[int]:
        """The actions played from `start` to here, in order."""
        actions: list[int] = []
        state = self
        while state._previous is not None:
            actions.append(state._last_action)  # type: ignore[arg-type]
            state = state._previous
        return actions[::-1]


class GoGame(BoardGame):
    """Go rules for one board size, komi and move cap (see the module docstring).

    ``name`` is ``f"go{size}"``: komi and the move cap do not change the action or observation
    layout, so one model serves every komi.
    """

    ENCODERS = (1, 2, 3)  # the observation layouts this klent can produce (module docstring)
    setup_fields = ("komi", "sgf")

    def __init__(
        self,
        size: int,
        komi: float = 7.5,
        max_moves: int | None = None,
        encoder: int = 1,
        fill_own_eyes: bool = True,
        early_pass: bool = True,
    ) -> None:
        if not isinstance(size, int) or not MIN_SIZE <= size <= MAX_SIZE:
            raise ValueError(f"Go board size must be {MIN_SIZE}..{MAX_SIZE}, not {size!r}")
        komi = float(komi)
        if not abs(komi) <= MAX_KOMI:  # also refuses NaN
            raise ValueError(f"komi must be a number within +-{MAX_KOMI:g}, not {komi!r}")
        self.size = size
        self.komi = komi
        self.max_moves = 2 * size * size if max_moves is None else int(max_moves)
        if self.max_moves < 1:
            raise ValueError(f"max_moves must be positive, not {max_moves!r}")
        if encoder not in self.ENCODERS:
            raise ValueError(f"Go encoder version must be one of {self.ENCODERS}, not {encoder!r}")
        self.encoder_version = encoder
        self.fill_own_eyes = bool(fill_own_eyes)
        self.early_pass = bool(early_pass)
        self.name = f"go{size}"
        self.num_actions = size * size + 1
        self.pass_action = size * size
        planes = 2 * k.HISTORY + 1 + (k.LIBERTY_PLANES if encoder >= 2 else 0) + (1 if encoder == 3 else 0)
        self.observation_shape = (planes, size, size)
        self._nbr, self._zob, self._diag = k.board_tables(size)

    def symmetries(self) -> np.ndarray:
        """The 8 rotations and reflections of the board; pass maps to itself."""
        return point_permutations(self.size, extra_actions=1)

    def with_komi(self, komi: float) -> GoGame:
        """The same game with another komi (use `replay` to move a game line over)."""
        return GoGame(self.size, komi, self.max_moves, self.encoder_version, self.fill_own_eyes, self.early_pass)

    def resized(self, size: int) -> GoGame:
        """The same rules and encoder on a board of ``size`` (its default number of moves)."""
        default = 2 * self.size * self.size
        return GoGame(size, self.komi, None if self.max_moves == default else self.max_moves, self.encoder_version,
                      self.fill_own_eyes, self.early_pass)

    def with_encoder(self, version: int) -> GoGame:
        """The same rules with another observation layout (for a model trained with it)."""
        if version == self.encoder_version:
            return self
        try:
            return GoGame(self.size, self.komi, self.max_moves, version, self.fill_own_eyes, self.early_pass)
        except ValueError:
            raise ValueError(f"this klent encodes {self.name} with versions {self.ENCODERS}, not {version}") from None

    # --- start positions ----------------------------------------------------------------

    def initial_state(self) -> GoState:
        return self.setup_state()

    def _start_state(self, setup: Setup) -> GoState:
        """The empty board, or the position at the end of an SGF record's main line.

        The setup's komi overrides the record's KM; without either, klent's default (7.5)
        applies to a record, and this game's komi to the empty board.
        """
        try:
            game = self if setup.komi is None else self.with_komi(setup.komi)
        except ValueError as error:
            raise SetupError("komi", str(error)) from None
        if setup.sgf is None:
            return game.initial_state()
        from klent.engine.games.sgf import read_sgf  # sgf.py builds on this module

        try:
            record = read_sgf(setup.sgf, max_moves=self.max_moves)
        except ValueError as error:  # GameFormatError, and anything else a hostile record may raise
            raise SetupError("sgf", str(error)) from None
        if record.game.size != self.size:
            size = record.game.size
            raise SetupError("sgf", f"the record is for {size}x{size}, not {self.size}x{self.size}")
        if setup.komi is None or setup.komi == record.game.komi:
            return record.final
        return record.game.with_komi(setup.komi).replay(record.final)

    def setup_state(self, black: Iterable[int] = (), white: Iterable[int] = (), to_play: int = 0) -> GoState:
        """A start position with stones already on the board (handicap, SGF AB/AW, GTP set-up).

        ``black``/``white`` are point indices (``row * size + col``); raises `GameFormatError`
        if a point is off the board, given twice, or a group has no liberty.  The position is
        the first of the game for superko and for the encoder's history.
        """
        board = setup_board(self.size, black, white, to_play, self.vertex, "stone")
        for stone in np.flatnonzero(board):
            if not self._has_liberty(board, int(stone)):
                raise GameFormatError(f"set-up group at {self.vertex(int(stone))} has no liberty")
        hist = np.zeros((k.HISTORY, board.size), dtype=np.int8)
        hist[0] = board
        position_hash = int(k.board_hash(board, self._zob))
        seen = np.array([position_hash], dtype=np.int64)
        return GoState(self, hist, seen, position_hash, to_play, 0, 0, None, None)

    def board_position(self, state: GoState, to_play: int) -> GoState:
        """``state``'s stones as a set-up position of this game with ``to_play`` to move.

        Its game line is forgotten: what a controller's two moves of one colour in a row, a
        game continued after it ended, or a change of komi leave as the start of a new line.
        """
        board = state.board().ravel()
        return self.setup_state(np.flatnonzero(board == 1), np.flatnonzero(board == -1), to_play)

    def _has_liberty(self, board: np.ndarray, point: int) -> bool:
        """Whether the group at ``point`` touches an empty point (plain flood fill, set-up only)."""
        color = board[point]
        todo, group = [point], {point}
        while todo:
            for q in self._nbr[todo.pop()]:
                if q < 0:
                    continue
                if board[q] == 0:
                    return True
                if board[q] == color and q not in group:
                    group.add(int(q))
                    todo.append(int(q))
        return False

    def max_fixed_handicap(self) -> int:
        """Most fixed handicap stones GTP allows here: 9 on odd boards from 9x9, 4 on 7x7 and
        even boards from 8x8, none below 7x7."""
        if self.size % 2 == 1 and self.size >= 9:
            return 9
        return 4 if self.size >= 7 else 0

    def fixed_handicap_points(self, stones: int) -> list[int]:
        """GTP v2 fixed handicap points (section 4.1.1, as GNU Go places them).

        2..9 stones on odd boards from 9x9, 2..4 on 7x7 and on even boards from 8x8; hoshi on
        the third line below 12x12 and on the fourth from 12x12.  Raises ValueError otherwise.
        """
        size = self.size
        largest = self.max_fixed_handicap()
        if not 2 <= stones <= largest:
            allowed = f"takes 2..{largest} stones, not {stones}" if largest else "is not defined"
            raise ValueError(f"fixed handicap on {size}x{size} {allowed}")
        edge = 3 if size >= 12 else 2  # 0-based distance of the hoshi from the edge
        low, mid, high = edge, size // 2, size - 1 - edge
        # (row, col) with row 0 at the top: lower-left, upper-right, upper-left, lower-right,
        # then left/right sides, then bottom/top sides; the centre joins every odd count >= 5.
        corners = [(high, low), (low, high), (low, low), (high, high)]
        sides = [(mid, low), (mid, high), (high, mid), (low, mid)]
        points = corners[: min(stones, 4)]
        if stones >= 6:
            points += sides[:2]
        if stones >= 8:
            points += sides[2:]
        if stones >= 5 and stones % 2 == 1:
            points.append((mid, mid))
        return [row * size + col for row, col in points]

    def free_handicap_points(self, stones: int) -> list[int]:
        """Where klent puts ``stones`` free handicap stones (GTP ``place_free_handicap``).

        The fixed points as far as the board has them, then each further stone on the point
        farthest (Euclidean) from the stones already placed and from the edge of the board,
        which spreads them evenly and keeps them off the first line while there is room.
        Takes 2 .. size*size - 1 stones; raises ValueError otherwise.
        """
        size, n = self.size, self.size * self.size
        if not 2 <= stones < n:
            raise ValueError(f"free handicap on {size}x{size} takes 2..{n - 1} stones, not {stones}")
        largest = self.max_fixed_handicap()
        fixed = self.fixed_handicap_points(min(stones, largest)) if largest else []
        rows, cols = np.divmod(np.arange(n), size)
        # Squared distance of every point to the line just outside the board and to the stones.
        gap = np.minimum.reduce([rows + 1, size - rows, cols + 1, size - cols]) ** 2
        points: list[int] = []
        for i in range(stones):
            point = fixed[i] if i < len(fixed) else int(np.argmax(gap))  # placed points have gap 0
            points.append(point)
            gap = np.minimum(gap, (rows - point // size) ** 2 + (cols - point % size) ** 2)
        return points

    def handicap_state(self, stones: int) -> GoState:
        """Empty board with ``stones`` fixed handicap stones for Black, White to play."""
        return self.setup_state(black=self.fixed_handicap_points(stones), to_play=1)

    def replay(self, state: GoState) -> GoState:
        """``state``'s game line (start position and moves) under this game's komi and cap.

        Raises `IllegalMoveError` if a move is not playable here (a smaller move cap).
        """
        if state.game.size != self.size:
            raise ValueError(f"cannot replay a {state.game.name} game as {self.name}")
        start = state.start()
        new = self.board_position(start, start.to_play)
        for action in state.moves():
            new = new.play(action)
        return new

    # --- encoder ------------------------------------------------------------------------

    def _encode_into(self, state: State, out: np.ndarray) -> None:
        assert isinstance(state, GoState) and state._game.size == self.size
        color = 1 if state._to_play == 0 else -1
        k.encode_planes(state._hist, color, out)
        if self.encoder_version >= 2:
            liberties = out[2 * k.HISTORY + 1 : 2 * k.HISTORY + 1 + k.LIBERTY_PLANES]
            k.liberty_planes(state._hist[0], self._nbr, color, liberties)
        if self.encoder_version == 3:
            out[-1] = 1.0

    # --- notation -----------------------------------------------------------------------

    def vertex(self, action: int) -> str:
        """GTP vertex of an action: "D4", or "pass"."""
        point = board_point(action, self.size, self.pass_action, self.name)
        return "pass" if point is None else f"{COLUMNS[point[1]]}{self.size - point[0]}"

    def parse_vertex(self, text: str) -> int:
        """Action of a GTP vertex ("d4", "Q16", "PASS"); raises `GameFormatError` if malformed."""
        word = text.strip().upper()
        if word == "PASS":
            return self.pass_action
        col = COLUMNS.find(word[:1]) if word else -1
        digits = word[1:].lstrip("0")
        # At most two digits reach int(): a row number beyond them is no row, and int() refuses
        # more than 4,300 digits with an error of its own.
        number = int(digits) if digits.isascii() and digits.isdigit() and len(digits) <= 2 else 0
        if not 0 <= col < self.size or not 1 <= number <= self.size:
            raise GameFormatError(f"not a vertex of a {self.size}x{self.size} board: {text[:20]!r}")
        return (self.size - number) * self.size + col

    def action_to_text(self, state: State, action: int) -> str:
        return self.vertex(action)

    def result_text(self, state: State) -> str | None:
        """SGF's result of a finished game ("B+3.5", "W+0.5", "0"); None while it goes on."""
        assert isinstance(state, GoState)
        return score_text(state.score()) if state.is_terminal else None

    def board_rows(self, state: State) -> list[str]:
        """The top row (the highest GTP row number) first; X black, O white, '.' empty."""
        assert isinstance(state, GoState)
        symbols = {0: ".", 1: "X", -1: "O"}
        return ["".join(symbols[int(point)] for point in row) for row in state.board()]

    def text_to_action(self, state: State, text: str) -> int:
        """Parse and check a GTP vertex; `IllegalMoveError` names the move and the reason."""
        assert isinstance(state, GoState)
        action = self.parse_vertex(text)
        if state.is_terminal:
            raise IllegalMoveError(f"illegal move {self.vertex(action)}: the game is over")
        if not state.legal_mask()[action]:
            state.play(action)  # raises IllegalMoveError naming the move and the reason
            raise AssertionError(f"legal_mask and play disagree on {self.vertex(action)}")
        return action
