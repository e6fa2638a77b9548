"""Go positions and records as people and files see them: the showboard diagram, record files.

Vertices, handicap layouts and SGF belong to the rules (`engine.games.go`, `engine.games.sgf`);
this module only draws a `GoState` for GTP ``showboard`` and writes record text (SGF, PGN,
JSON summaries) to disk atomically, so a crash never leaves half a file behind.
"""

from __future__ import annotations

from engine.games.go import COLUMNS, GoState

_STONES = {0: ".", 1: "X", -1: "O"}


def board_text(state: GoState) -> str:
    """A showboard diagram (X Black, O White), the top line (GTP row ``size``) first."""
    game = state.game
    size = game.size
    letters = "   " + " ".join(COLUMNS[:size])
    lines = [letters]
    for index, row in enumerate(state.board()):
        number = size - index
        lines.append(f"{number:2d} {' '.join(_STONES[int(v)] for v in row)} {number}")
    lines.append(letters)
    lines.append(f"komi {game.komi:g}, {'Black' if state.to_play == 0 else 'White'} to play")
    return "\n".join(lines)
