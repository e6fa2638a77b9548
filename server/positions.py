"""Positions as the HTTP API receives and shows them.

A request names a start (Go: the empty board with a komi, or an SGF record; chess: a FEN) and
the moves played from it, as move text.  `parse_position` turns that into the game's initial
state plus action indices, which is what `engine.player.Player.set_position` takes; any
mistake in it becomes a `PositionError` whose message names the faulty part, for a 422 answer.
`describe` goes the other way, for clients that draw the board (the web page).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.games.base import Game, GameFormatError, IllegalMoveError, State
from engine.games.chess import ChessGame
from engine.games.go import GoGame, GoState
from engine.games.sgf import read_sgf, result_text as sgf_result_text
from server.schemas import MAX_MOVE_CHARS, PositionOut, PositionRequest


class PositionError(ValueError):
    """A request's position cannot be set up; the message says why, in one line."""


@dataclass(frozen=True)
class Position:
    """A start state, the actions played from it, and the state they lead to."""

    initial: State
    actions: list[int]
    state: State
    last_move: str | None  # the last of the request's moves, in the game's notation


def parse_position(game: Game, request: PositionRequest) -> Position:
    """The position ``request`` describes in ``game``; raises `PositionError`."""
    initial = _start_state(game, request)
    state, actions, last_move = initial, [], None
    for index, text in enumerate(request.moves):
        if len(text) > MAX_MOVE_CHARS:
            raise PositionError(f"moves[{index}]: not a move (longer than {MAX_MOVE_CHARS} characters)")
        try:
            action = game.text_to_action(state, text)
            last_move = game.action_to_text(state, action)
            state = state.play(action)
        except (GameFormatError, IllegalMoveError) as error:
            raise PositionError(f"moves[{index}] {text!r}: {error}") from None
        actions.append(action)
    return Position(initial, actions, state, last_move)


def _start_state(game: Game, request: PositionRequest) -> State:
    if isinstance(game, GoGame):
        if request.fen is not None:
            raise PositionError(f"fen: {game.name} positions take komi, moves or sgf, not a FEN")
        return _go_start(game, request)
    if request.sgf is not None or request.komi is not None:
        field = "sgf" if request.sgf is not None else "komi"
        raise PositionError(f"{field}: {game.name} positions take fen and moves only")
    if request.fen is None:
        return game.initial_state()
    if not isinstance(game, ChessGame):
        raise PositionError(f"fen: {game.name} positions take moves only")
    try:
        return game.from_fen(request.fen)
    except GameFormatError as error:
        raise PositionError(f"fen: {error}") from None


def _go_start(game: GoGame, request: PositionRequest) -> State:
    """The empty board with the request's komi, or the position at the end of its SGF."""
    if request.sgf is None:
        return game.initial_state() if request.komi is None else game.with_komi(request.komi).initial_state()
    try:
        return _sgf_position(game, request.sgf, request.komi)
    except (GameFormatError, IllegalMoveError, ValueError) as error:
        raise PositionError(f"sgf: {error}") from None


def _sgf_position(game: GoGame, text: str, komi: float | None) -> State:
    """The position at the end of an SGF record's main line (set-up stones, then moves).

    ``komi`` overrides the record's KM; without either, klent's default (7.5) applies.
    """
    record = read_sgf(text, max_moves=game.max_moves)
    size = record.game.size
    if size != game.size:
        raise GameFormatError(f"the record is for {size}x{size}, not {game.size}x{game.size}")
    if komi is None or komi == record.game.komi:
        return record.final
    return record.game.with_komi(komi).replay(record.final)


def result_text(state: State) -> str | None:
    """The result of a finished game in the game's usual notation, None while it goes on."""
    if not state.is_terminal:
        return None
    outcome = state.outcome()
    if isinstance(state, GoState):
        return sgf_result_text(state)
    if isinstance(state.game, ChessGame):
        return "1-0" if outcome > 0 else "0-1" if outcome < 0 else "1/2-1/2"
    return "first player wins" if outcome > 0 else "second player wins" if outcome < 0 else "draw"


def describe(state: State, last_move: str | None = None) -> PositionOut:
    """What a client needs to draw ``state`` and let a person move in it."""
    game = state.game
    legal = [game.action_to_text(state, int(a)) for a in state.legal_actions()]
    fen = None
    if isinstance(game, GoGame):
        board = _go_rows(state)
        colours = ("black", "white")
    elif isinstance(game, ChessGame):
        fen = state.fen()  # type: ignore[attr-defined]
        board = _fen_rows(fen)
        colours = ("white", "black")
    else:
        board = []
        colours = ("black", "white")
    return PositionOut(
        game=game.name,
        to_play=colours[state.to_play],
        move_number=state.move_number,
        terminal=state.is_terminal,
        result=result_text(state),
        board=board,
        fen=fen,
        legal_moves=legal,
        last_move=last_move,
    )


def _fen_rows(fen: str) -> list[str]:
    """Rank 8 first, one character per square, '.' for an empty one."""
    placement = fen.split()[0]
    return ["".join("." * int(c) if c.isdigit() else c for c in rank) for rank in placement.split("/")]


def _go_rows(state: State) -> list[str]:
    """The top row (the highest GTP row number) first; X black, O white, '.' empty."""
    symbols = {0: ".", 1: "X", -1: "O"}
    return ["".join(symbols[int(point)] for point in row) for row in state.board()]  # type: ignore[attr-defined]
