"""Opening files, the start positions of `klent match --openings`: read and checked against the
rules before a match starts (not mid-match), and the position each line stands for."""

from __future__ import annotations

from pathlib import Path

import klent.engine.games
from klent.engine.files import read_text
from klent.engine.games.base import GameFormatError, IllegalMoveError, State
from klent.engine.games.chess import ChessGame, ChessState

# The largest openings file read: ours are a few KB, and a PGN opening book of tens of
# thousands of games (tens of MB) still fits.
MAX_OPENINGS_BYTES = 64 << 20


def read_openings(path: str | Path, game: str) -> tuple[str, ...]:
    """The openings in a file, one per line, checked against the rules now (not mid-match).

    Chess: an EPD/FEN line, optionally followed by ``moves`` and UCI moves (``FEN moves e2e4
    e7e5``), or a PGN file of games whose moves are the openings.  Go: a line of moves in GTP
    vertices, Black first (``C3 G7 pass``).  Blank lines and lines starting with ``#`` are
    skipped.  Raises ValueError naming the first bad line, or the file if it is larger than
    `MAX_OPENINGS_BYTES`.
    """
    text = read_text(path, MAX_OPENINGS_BYTES)
    if game == "chess" and str(path).lower().endswith(".pgn"):
        return _pgn_openings(text, path)
    openings = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            opening_state(game, line)
        except (GameFormatError, IllegalMoveError, ValueError) as error:
            raise ValueError(f"{path} line {number}: {error}") from None
        openings.append(line)
    if not openings:
        raise ValueError(f"{path} holds no openings")
    return tuple(openings)


def _pgn_openings(text: str, path: str | Path) -> tuple[str, ...]:
    import io

    import chess.pgn

    openings: list[str] = []
    handle = io.StringIO(text)
    while (parsed := chess.pgn.read_game(handle)) is not None:
        if parsed.errors:
            raise ValueError(f"{path}: game {len(openings) + 1}: {parsed.errors[0]}")
        moves = " ".join(move.uci() for move in parsed.mainline_moves())
        openings.append(f"{parsed.board().fen()} moves {moves}".rstrip() if moves else parsed.board().fen())
    if not openings:
        raise ValueError(f"{path} holds no games")
    return tuple(openings)


def opening_state(game: str, opening: str) -> State:
    """The position an opening line stands for: a `ChessState` or a Go state."""
    if game == "chess":
        return chess_opening(opening)
    rules = klent.engine.games.get(game, max_moves=None)
    state = rules.initial_state()
    for text in opening.split():
        state = state.play(rules.text_to_action(state, text))
    return state


def chess_opening(opening: str, max_moves: int | None = None) -> ChessState:
    """The chess position of an opening line: a FEN (or an EPD's four fields), then optionally
    `` moves `` and the moves in UCI or SAN; ``max_moves`` caps the game from the FEN on."""
    fen, _, moves = opening.partition(" moves ")
    fields = fen.split()
    fen = " ".join(fields[:4] + ["0", "1"]) if len(fields) == 4 else fen  # EPD: no counters
    return ChessGame(max_moves=max_moves).from_fen(fen, moves.split())
