"""Animal Shogi (dobutsu shogi) on the 3x4 board, with Pgx's observation and action set.

Rules (Fairy-Stockfish's variant ``dobutsu`` as the Debian package, version 11.1, plays it;
the tests check the legal moves against that binary move by move):

* the start position is ``gle/1c1/1C1/ELG[] w``: the first player (sente, player 0, "w" and
  upper case in Fairy-Stockfish's notation) has the elephant on a1, the lion on b1, the
  giraffe on c1 and the chick on b2; the second player (gote) the same turned half a turn;
* a chick steps one square forward, an elephant one diagonally, a giraffe one orthogonally,
  the lion one in any direction, a hen (a promoted chick) one orthogonally or diagonally
  forward;
* a captured piece goes to the capturer's hand (a hen as a chick); instead of moving, a
  player may drop a piece from the hand on any empty square, a chick even on the last rank,
  where it can never move again;
* a chick stepping onto the last rank may promote to a hen or stay a chick: the 11.1 binary
  offers both ("b3b4+" and "b3b4");
* the lion is royal like a chess king: a move that leaves it attacked is illegal, and a
  player without a legal move loses (checkmate and stalemate alike);
* the "try": a lion on the opponent's back rank wins at once.  It can only get there on a
  square the opponent does not attack, so it is always safe there;
* the fourth occurrence of a position (board, hands, side to move) in the game ends it --
  captures do not start the count afresh, since captured pieces can come back -- as a draw,
  unless one side gave check with every one of its moves since the first of those
  occurrences: that side loses.  This is the shogi rule the 11.1 binary's dobutsu inherits
  (``nFoldRule = 4``, ``perpetualCheckIllegal``).  Fairy-Stockfish leaves repetitions to the
  arbiter, though its search scores them so (the tests check that); klent applies the rule
  unless the game is made with ``repetition_rule=False`` (what a UCI engine wants).  When
  both sides checked throughout, which Fairy-Stockfish versions score differently, klent
  calls it a draw;
* ``max_moves`` (default 256 plies; None for none) ends the game as a draw with
  ``is_truncated`` set.

Later Fairy-Stockfish versions changed dobutsu (its issues #191 and #552): promotion became
compulsory, repetition a plain draw, and the lion capturable (capturing it wins, and a try
must land on a safe square).  klent follows the installed binary, whose moves the tests can
check.

Actions (``num_actions`` = 144 = 12 x 12): Pgx's moves and drops, laid out point-major with
one plane more.  ``action = point * 12 + plane``, where ``point`` is a square in the mover's
frame -- the board itself for sente, the board turned half a turn for gote, as each player
sees it -- numbered ``row * 3 + column`` like the observation's ``obs[:, row, column]``:

* planes 0..7: the piece on ``point`` steps N, NE, E, SE, S, SW, W, NW (N towards the
  opponent); a chick stepping onto the last rank promotes;
* planes 8..10: drop a chick, an elephant, a giraffe on ``point``;
* plane 11: a chick on ``point`` steps onto the last rank and stays a chick.

Move text is Fairy-Stockfish's: "b1a2", "b3b4+" / "b3b4" (with / without promotion), "C@b2"
(the piece letter upper case for both players).

Observation (encoder version 1, Pgx's Animal Shogi observation laid out channels-first,
shape (194, 4, 3)), from the side to move's view, in the same frame as the actions (row 0 is
the side to move's back rank).  Planes ``24 * i .. 24 * i + 23`` describe the position ``i``
plies ago (i = 0..7; zeros before the first position of the record): the side to move's
chicks, elephants, giraffes, lion and hens, the opponent's five, then the side to move's hand
as six constant planes (holds at least one / two chicks, the same for elephants and
giraffes), the opponent's six, and two repetition planes (that position had occurred at
least once / twice before).  Plane 192 is ones when gote is to move, 193 the plies since the
start of the game (as the FEN's move number tells) / 256, capped at 1.

Symmetries: none.  The left-right mirror (files a and c exchanged, `symmetry.dihedral` index
4) commutes with the rules, but not with the start position: it swaps the elephants and the
giraffes, so mirrored games start from a position Animal Shogi never reaches.  Besides, the
contract numbers symmetry tables by dihedral index, and indices 1..3 are no symmetries
(quarter turns do not even keep the 4x3 shape; the half turn reverses the chicks).  So
`symmetries` keeps the identity; the tests check the mirror against the rules.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from klent.engine.games import animal_shogi_kernels as k
from klent.engine.games.base import GameFormatError, IllegalMoveError, State
from klent.engine.games.board_games import HistoryState, PieceGame, fen_placement, step_squares

START_FEN = "gle/1c1/1C1/ELG[] w - - 0 1"
FILES = "abc"
PIECE_LETTERS = "cegl"  # index + 1 = piece type; a hen is "+c"
BOARD_LETTERS = (*PIECE_LETTERS, "+c")  # the FEN's letters of the piece types 1..5
HAND_LETTERS = "ceg"  # hand kinds 0..2
HAND_ORDER = (2, 0, 1)  # Fairy-Stockfish writes a hand as giraffes, chicks, elephants
MOVE_COUNT_SCALE = 256.0
_EMPTY_HISTORY = bytes(k.HISTORY * k.POSITION_BYTES)  # the observation rows before a record starts
_STEP_TEXT = re.compile(r"([a-c][1-4])([a-c][1-4])(\+?)")
_DROP_TEXT = re.compile(r"([ceg])@([a-c][1-4])")
_FEN_BOARD = re.compile(r"([^\[\]]*)\[([^\[\]]*)\]")


def square_name(square: int) -> str:
    """"a1" .. "c4" for squares 0 .. 11."""
    return FILES[square % k.FILES] + str(square // k.FILES + 1)


def _parse_square(text: str) -> int:
    return FILES.index(text[0]) + k.FILES * (int(text[1]) - 1)


class AnimalShogiState(HistoryState["AnimalShogiGame"]):
    """An Animal Shogi position with what the rules and the observation need from its past.

    Holds the position (``int8[18]``, see `animal_shogi_kernels`; never written once the state
    exists), the repetition keys of the record with whether the side to move was in check
    there (a linked list shared with the ancestors), the observation rows of the last 8
    positions, the legal action mask and how the game ended, if it did: "try", "checkmate",
    "stalemate", "repetition", "perpetual_check" (the last two only with
    ``repetition_rule``) or "move_cap".  `to_play` is 0 when sente (the first player) is to
    move, 1 when gote is.  Build states with `AnimalShogiGame.initial_state`,
    `AnimalShogiGame.from_fen` and `play`.
    """

    __slots__ = ("_position", "_winner")

    def __init__(
        self,
        game: AnimalShogiGame,
        position: np.ndarray,
        colour: int,
        ply: int,
        move_number: int,
        halfmove: int,
        mask: np.ndarray,
        moves: int,
        in_check: bool,
        tried: bool,
        parent_keys: tuple | None,
        parent_history: bytes,
    ) -> None:
        # Captures do not cut the repetition chain: captured pieces can come back.
        key = position.tobytes()
        super().__init__(game, key, colour, ply, move_number, halfmove, in_check, parent_keys, parent_history)
        self._position = position
        self._termination, self._winner = self._ending(moves, in_check, tried)
        self._keep_mask(mask)

    def _ending(self, moves: int, in_check: bool, tried: bool) -> tuple[str | None, int]:
        """How the game ended in this position and who won (+1 sente, -1 gote, 0 a draw)."""
        to_move = 1 - 2 * self._to_play  # +1 when sente is to move
        if tried:
            return "try", -to_move
        if moves == 0:
            return ("checkmate" if in_check else "stalemate"), -to_move
        if self._game.repetition_rule and self._repetitions >= 3:
            they_checked, we_checked = self._perpetual_checks()
            if they_checked != we_checked:
                return "perpetual_check", to_move if they_checked else -to_move
            return "repetition", 0
        if self._game.max_moves is not None and self._move_number >= self._game.max_moves:
            return "move_cap", 0
        return None, 0

    def _perpetual_checks(self) -> tuple[bool, bool]:
        """Whether the side that just moved / the side to move gave check with every one of
        its moves since the earliest of the three earlier occurrences of this position.

        A position has the side to move in check exactly when the other side's last move
        checked, so the positions an even number of plies back tell the first answer and the
        odd ones the second (Fairy-Stockfish's ``perpetualThem`` / ``perpetualUs``).
        """
        key = self._keys[0]
        they_checked = we_checked = True
        # The walk stops at the third occurrence, so it never runs off the record's first node.
        node: tuple = self._keys
        back, found = 0, 0
        while found < 3:
            if back % 2:
                we_checked &= node[1]
            else:
                they_checked &= node[1]
                found += back > 0 and node[0] == key
            node, back = node[2], back + 1
        return they_checked, we_checked

    def outcome(self) -> float:
        """+1 when sente has won, -1 when gote has, 0 for a draw (see the module docstring)."""
        if self._termination is None:
            raise ValueError("outcome() of a game that is not over")
        return float(self._winner)

    def play(self, action: int) -> AnimalShogiState:
        if not 0 <= action < k.NUM_ACTIONS or not self._mask[action]:
            raise IllegalMoveError(self._illegal_message(action))
        child = np.empty(k.POSITION_SIZE, dtype=np.int8)
        mask = np.empty(k.NUM_ACTIONS, dtype=np.bool_)
        moves, in_check, tried, captured = k.play(self._position, self._to_play, action, child, mask)
        return AnimalShogiState(
            self._game,
            child,
            1 - self._to_play,
            self._ply + 1,
            self._move_number + 1,
            0 if captured else self._halfmove + 1,
            mask,
            moves,
            in_check,
            tried,
            self._keys,
            self._history,
        )

    def fen(self) -> str:
        """The position as Fairy-Stockfish writes it ("gle/1c1/1C1/ELG[] w - - 0 1")."""
        hands = self._position[k.HAND :]
        hand = "".join(HAND_LETTERS[kind].upper() * int(hands[kind]) for kind in HAND_ORDER)
        hand += "".join(HAND_LETTERS[kind] * int(hands[3 + kind]) for kind in HAND_ORDER)
        placement = fen_placement(self._position[: k.SQUARES], k.FILES, BOARD_LETTERS)
        side = "wb"[self._to_play]
        return f"{placement}[{hand}] {side} - - {self._fen_counters()}"


class AnimalShogiGame(PieceGame):
    """Animal Shogi with Pgx's encoding (see the module docstring).

    ``max_moves`` caps the game (plies after the start position of the record; None: no
    cap); ``repetition_rule`` ends it at the fourth occurrence of a position.
    """

    name = "animal_shogi"
    num_actions = k.NUM_ACTIONS
    observation_shape = (k.NUM_CHANNELS, k.RANKS, k.FILES)
    encoder_version = 1
    action_planes = k.NUM_PLANES  # action = point * 12 + plane, points as obs[:, row, column]

    def __init__(self, max_moves: int | None = 256, repetition_rule: bool = True) -> None:
        super().__init__(max_moves)
        self.repetition_rule = repetition_rule

    def initial_state(self) -> AnimalShogiState:
        return self.from_fen(START_FEN)

    def from_fen(self, fen: str, moves: Sequence[str] = ()) -> AnimalShogiState:
        """The position of ``fen`` (Fairy-Stockfish's form, "gle/1c1/1C1/ELG[] w - - 0 1"; the
        "-" fields and the two move counters may be left out) after the ``moves``.

        A malformed FEN or an impossible position raises `GameFormatError`; an illegal or
        unreadable move raises `IllegalMoveError` / `GameFormatError` naming it.  History
        (repetitions, the observation's past positions) starts at ``fen``.
        """
        position, colour, halfmove, fullmove = _parse_fen(fen)
        mask = np.empty(k.NUM_ACTIONS, dtype=np.bool_)
        count, in_check, tried = k.generate(position, colour, mask)
        ply = 2 * (fullmove - 1) + colour
        state = AnimalShogiState(
            self, position, colour, ply, 0, halfmove, mask, count, in_check, tried, None, _EMPTY_HISTORY
        )
        return state.after(moves)

    def _encode_into(self, state: State, out: np.ndarray) -> None:
        assert isinstance(state, AnimalShogiState)
        history = np.frombuffer(state._history, dtype=np.int8)
        k.encode(history, state._to_play, min(state._ply / MOVE_COUNT_SCALE, 1.0), out)

    def action_to_text(self, state: State, action: int) -> str:
        """Fairy-Stockfish's text of ``action`` in ``state``, legal or not ("b1a2", "b3b4+",
        "b3b4", "C@b2").  A step of a chick of the side to move onto the last rank promotes
        ("+") unless it is the no-promotion action.  An action outside 0..143 or leading off
        the board raises `IllegalMoveError`."""
        assert isinstance(state, AnimalShogiState)
        if not 0 <= action < k.NUM_ACTIONS:
            raise IllegalMoveError(f"action {action} is outside 0..{k.NUM_ACTIONS - 1}")
        colour = state._to_play
        point, plane = divmod(int(action), k.NUM_PLANES)
        if k.DROP_PLANE <= plane < k.NO_PROMOTION_PLANE:
            return HAND_LETTERS[plane - k.DROP_PLANE].upper() + "@" + square_name(k.frame(point, colour))
        frm, to = step_squares(action, colour, k.MOVE_FROM, k.MOVE_TO)
        text = square_name(frm) + square_name(to)
        last_rank = k.RANKS - 1 if colour == 0 else 0
        chick = state._position[frm] == (1 - 2 * colour) * k.CHICK
        if plane != k.NO_PROMOTION_PLANE and chick and to // k.FILES == last_rank:
            text += "+"
        return text

    def text_to_action(self, state: State, text: str) -> int:
        """The action of a legal move in Fairy-Stockfish's text ("b1a2", "b3b4+", "C@b2"; the
        drop letter in either case); `GameFormatError` when the text is no such move,
        `IllegalMoveError` when the move is not legal here."""
        assert isinstance(state, AnimalShogiState)
        word = text.strip()
        colour = state._to_play
        if drop := _DROP_TEXT.fullmatch(word.lower()):
            word = drop.group(1).upper() + "@" + drop.group(2)
            square = _parse_square(drop.group(2))
            action = k.frame(square, colour) * k.NUM_PLANES + k.DROP_PLANE + HAND_LETTERS.index(drop.group(1))
        elif step := _STEP_TEXT.fullmatch(word.lower()):
            word = step.group(0)
            frm, to = _parse_square(step.group(1)), _parse_square(step.group(2))
            action = int(k.ACTION_OF[colour, frm, to])
            last_rank = k.RANKS - 1 if colour == 0 else 0
            chick = state._position[frm] == (1 - 2 * colour) * k.CHICK
            if action >= 0 and not step.group(3) and chick and to // k.FILES == last_rank:
                action = k.frame(frm, colour) * k.NUM_PLANES + k.NO_PROMOTION_PLANE
        else:
            raise GameFormatError(f"not an Animal Shogi move in Fairy-Stockfish's notation: {text!r}")
        if action < 0 or not state._mask[action] or self.action_to_text(state, action) != word:
            raise state._illegal_move(word)
        return int(action)


def _parse_fen(fen: str) -> tuple[np.ndarray, int, int, int]:
    """Position, colour, half-move clock and move number of an Animal Shogi FEN;
    `GameFormatError` naming the problem when it is malformed or the position impossible."""

    def bad(reason: str) -> GameFormatError:
        return GameFormatError(f"bad FEN {fen!r}: {reason}")

    if not isinstance(fen, str):
        raise GameFormatError(f"a FEN must be text, not {type(fen).__name__}")
    fields = fen.split()
    if len(fields) < 2:
        raise bad("expected the board with the hands in brackets and the side to move")
    placement, side, counters = fields[0], fields[1], [field for field in fields[2:] if field != "-"]
    if side not in ("w", "b"):
        raise bad(f"side to move must be 'w' or 'b', not {side!r}")
    # Nine digits at most: int() refuses 4,301 with a ValueError of its own.
    if len(counters) not in (0, 2) or not all(field.isdigit() and len(field) <= 9 for field in counters):
        raise bad("expected the half-move clock and the move number after the side to move")
    halfmove, fullmove = (int(field) for field in counters) if counters else (0, 1)
    if fullmove < 1:
        raise bad("the move number must be at least 1")
    match = _FEN_BOARD.fullmatch(placement)
    if match is None:
        raise bad("expected the board followed by the hands in brackets, such as 'gle/1c1/1C1/ELG[]'")
    position = np.zeros(k.POSITION_SIZE, dtype=np.int8)
    ranks = match.group(1).split("/")
    if len(ranks) != k.RANKS:
        raise bad(f"expected {k.RANKS} ranks, got {len(ranks)}")
    for row, text in enumerate(ranks):
        rank, file = k.RANKS - 1 - row, 0
        for token in re.findall(r"\+?[a-zA-Z]|\d|.", text):
            if token.isdigit():
                file += int(token)
                continue
            letter = token[-1]
            if letter.lower() not in PIECE_LETTERS or file >= k.FILES or (token[0] == "+" and letter.lower() != "c"):
                raise bad(f"rank {rank + 1} is malformed: {text!r}")
            piece = k.HEN if token[0] == "+" else PIECE_LETTERS.index(letter.lower()) + 1
            position[rank * k.FILES + file] = piece if letter.isupper() else -piece
            file += 1
        if file != k.FILES:
            raise bad(f"rank {rank + 1} does not have {k.FILES} squares: {text!r}")
    hands = [0] * 6  # counted in Python ints: 128 chicks would wrap round in the position's int8
    for letter in match.group(2).replace("-", ""):
        if letter.lower() not in HAND_LETTERS:
            raise bad(f"{letter!r} cannot be in a hand (chicks C, elephants E, giraffes G)")
        hands[3 * letter.islower() + HAND_LETTERS.index(letter.lower())] += 1
    board = position[: k.SQUARES]
    for sign, name in ((1, "sente (upper case)"), (-1, "gote (lower case)")):
        if np.count_nonzero(board == sign * k.LION) != 1:
            raise bad(f"{name} must have exactly one lion")
    for kind in range(3):
        on_board = np.count_nonzero(np.abs(board) == kind + 1) + (kind == 0) * np.count_nonzero(np.abs(board) == k.HEN)
        if on_board + hands[kind] + hands[3 + kind] > 2:
            raise bad(f"more than two pieces of the kind {HAND_LETTERS[kind].upper()!r} (the game has two)")
    position[k.HAND :] = hands
    colour = "wb".index(side)
    mover = 1 - 2 * colour  # the side to move must not be able to take the other lion
    if k.attacked(position, int(np.flatnonzero(board == -mover * k.LION)[0]), mover):
        raise bad("the side not to move is in check")
    return position, colour, halfmove, fullmove
