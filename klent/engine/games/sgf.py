"""SGF game records of Go games (read and write), on top of sgfmill.

Reading follows the main line of the record: board size (SZ, 5..19), komi (KM; klent's
default 7.5 when absent), handicap (HA), set-up stones in the first node (AB/AW, with PL for
the side to move), then B/W moves and passes.  Everything is replayed under klent's rules, so
what comes back is a chain of ordinary `GoState` objects.  Anything klent cannot represent
faithfully is refused with a `GameFormatError` giving the reason: malformed text, another game
than Go, set-up stones in later nodes, a side moving twice in a row, an illegal move.

Writing produces a record that reads back to the same start position, moves, komi and result.

    record = read_sgf(open("game.sgf", "rb").read())
    record.final.board(); record.moves; record.result
    text = write_sgf(record.final, black="klent", white="GNU Go")
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

import numpy as np
from sgfmill import sgf

from klent.engine.games.base import GameFormatError, IllegalMoveError
from klent.engine.games.go import MAX_KOMI, MAX_SIZE, MIN_SIZE, GoGame, GoState, score_text

_COLOUR = ("b", "w")  # sgfmill's names for player 0 and 1


@dataclass(frozen=True)
class GoRecord:
    """A game read from SGF: every position of its main line and the record's metadata."""

    states: tuple[GoState, ...]  # the start position, then the position after each move
    result: str | None  # RE as written ("B+3.5", "W+R", "0", ...), None if absent
    handicap: int  # HA, 0 if absent
    black: str | None  # PB
    white: str | None  # PW

    @property
    def game(self) -> GoGame:
        return self.states[0].game

    @property
    def final(self) -> GoState:
        return self.states[-1]

    @property
    def moves(self) -> list[int]:
        return self.final.moves()


def read_sgf(data: str | bytes, max_moves: int | None = None) -> GoRecord:
    """Parse an SGF Go record; raises `GameFormatError` (a ValueError) saying what is wrong.

    ``max_moves`` is the move cap of the returned game (`GoGame`'s default when None).
    Text is read as is; bytes are decoded by the record's CA charset (ISO-8859-1 when absent).
    """
    try:
        if isinstance(data, str):
            record = sgf.Sgf_game.from_string(data)
        else:
            record = sgf.Sgf_game.from_bytes(data)
            # CA may name any Python codec, and the bytes-to-bytes ones (zlib, base64, rot13...)
            # raise LookupError, not ValueError, on the first text property sgfmill decodes.
            charset = record.get_root().get_encoding()
            if not codecs.lookup(charset)._is_text_encoding:
                raise GameFormatError(f"SGF charset CA[{charset}] is not a text encoding")
        root = record.get_root()
        if root.has_property("GM") and root.get("GM") != 1:
            raise GameFormatError(f"not a Go record (GM[{root.get('GM')}])")
        size = record.get_size()
        komi = record.get_komi() if root.has_property("KM") else None
        handicap = record.get_handicap() or 0
        result = root.get("RE") if root.has_property("RE") else None
        black = record.get_player_name("b")
        white = record.get_player_name("w")
        first_player = _COLOUR.index(root.get("PL")) if root.has_property("PL") else None
        black_stones, white_stones, _ = root.get_setup_stones()
        nodes = record.get_main_sequence()
    except GameFormatError:
        raise
    except (ValueError, KeyError) as exc:
        raise GameFormatError(f"malformed SGF: {str(exc) or 'a property has a bad value'}") from None
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise GameFormatError(f"SGF board size {size} is outside klent's {MIN_SIZE}..{MAX_SIZE}")
    if komi is not None and not abs(komi) <= MAX_KOMI:  # also refuses NaN
        raise GameFormatError(f"SGF komi KM[{komi:g}] is outside klent's +-{MAX_KOMI:g}")
    game = GoGame(size, 7.5 if komi is None else komi, max_moves)

    def point(vertex: tuple[int, int]) -> int:
        row, col = vertex  # sgfmill counts rows from the bottom, klent from the top
        return (size - 1 - row) * size + col

    moves: list[tuple[int, int]] = []  # (player, action)
    for number, node in enumerate(nodes):
        if number > 0 and node.has_setup_stones():
            raise GameFormatError(f"SGF node {number} adds or removes stones; only the first node may")
        try:
            colour, vertex = node.get_move()
        except ValueError:
            raise GameFormatError(f"SGF node {number} has a malformed move") from None
        if colour is not None:
            moves.append((_COLOUR.index(colour), game.pass_action if vertex is None else point(vertex)))

    if first_player is not None:
        to_play = first_player
    elif moves:
        to_play = moves[0][0]
    else:
        to_play = 1 if black_stones and not white_stones else 0
    state = game.setup_state([point(v) for v in black_stones], [point(v) for v in white_stones], to_play)
    states = [state]
    for number, (player, action) in enumerate(moves, start=1):
        if player != state.to_play:
            mover, expected = "BW"[player], "BW"[state.to_play]
            raise GameFormatError(f"SGF move {number}: {mover} moves when {expected} is to play")
        try:
            state = state.play(action)
        except IllegalMoveError as exc:
            raise GameFormatError(f"SGF move {number}: {exc}") from None
        states.append(state)
    return GoRecord(tuple(states), result, handicap, black, white)


def result_text(state: GoState) -> str:
    """SGF result of a finished game from its area score: "B+3.5", "W+0.5" or "0"."""
    return score_text(state.score())


def write_sgf(
    state: GoState, result: str | None = None, black: str | None = None, white: str | None = None
) -> str:
    """SGF text of the game line ending at ``state`` (from its start position).

    ``result`` defaults to the area-score result when the game is over (absent otherwise).
    A start position with Black stones only and White to play is written as a handicap (HA).
    """
    game = state.game
    size = game.size
    record = sgf.Sgf_game(size=size)
    root = record.get_root()
    start = state.start()
    board = start.board()

    def vertex(action: int) -> tuple[int, int] | None:
        if action == game.pass_action:
            return None
        row, col = divmod(action, size)
        return size - 1 - row, col

    stones = [[vertex(int(p)) for p in np.flatnonzero(board.ravel() == color)] for color in (1, -1)]
    if stones[0] or stones[1]:
        root.set_setup_stones(stones[0], stones[1])
    if start.to_play == 1:
        root.set("PL", "w")
        if stones[0] and not stones[1]:
            root.set("HA", len(stones[0]))
    root.set("KM", game.komi)
    if result is None and state.is_terminal:
        result = result_text(state)
    if result is not None:
        root.set("RE", result)
    if black is not None:
        root.set("PB", black)
    if white is not None:
        root.set("PW", white)
    root.set("AP", ("klent", "1"))
    player = start.to_play
    for action in state.moves():
        record.extend_main_sequence().set_move(_COLOUR[player], vertex(action))
        player = 1 - player
    return record.serialise().decode("utf-8")
