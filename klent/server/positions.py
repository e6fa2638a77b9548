"""Positions as the HTTP API receives and shows them.

A request names a start (a FEN, an SGF record, a komi: whatever its game reads, see
`klent.engine.games.base.Setup`) and the moves played from it, as move text.  `parse_position` turns
that into the game's start state plus action indices, which is what
`klent.engine.player.Player.set_position` takes; any mistake in it becomes a `PositionError` whose
message names the faulty part, for a 422 answer.  `describe` goes the other way, for clients
that draw the board (the web page).  Both speak only the `Game` contract, so a new game is
served without a change here.
"""

from __future__ import annotations

from dataclasses import dataclass

from klent.engine.games.base import Game, GameFormatError, IllegalMoveError, Setup, SetupError, State
from klent.server.schemas import MAX_MOVE_CHARS, PositionOut, PositionRequest


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
    try:
        initial = game.start_state(Setup(fen=request.fen, sgf=request.sgf, komi=request.komi))
    except SetupError as error:
        raise PositionError(f"{error.field}: {error}") from None
    state, actions, before = initial, [], initial
    for index, text in enumerate(request.moves):
        if len(text) > MAX_MOVE_CHARS:
            raise PositionError(f"moves[{index}]: not a move (longer than {MAX_MOVE_CHARS} characters)")
        try:
            action = game.text_to_action(state, text)
            before, state = state, state.play(action)
        except (GameFormatError, IllegalMoveError) as error:
            raise PositionError(f"moves[{index}] {text!r}: {error}") from None
        actions.append(action)
    # Only the last move is named (in the game's own spelling of it, whatever the request's).
    last_move = game.action_to_text(before, actions[-1]) if actions else None
    return Position(initial, actions, state, last_move)


def result_text(state: State) -> str | None:
    """The result of a finished game in the game's usual notation, None while it goes on."""
    return state.game.result_text(state)


def describe(state: State, last_move: str | None = None) -> PositionOut:
    """What a client needs to draw ``state`` and let a person move in it."""
    game = state.game
    return PositionOut(
        game=game.name,
        to_play=game.player_names[state.to_play],
        move_number=state.move_number,
        terminal=state.is_terminal,
        result=game.result_text(state),
        board=game.board_rows(state),
        fen=game.fen(state),
        legal_moves=[game.action_to_text(state, int(a)) for a in state.legal_actions()],
        last_move=last_move,
    )
