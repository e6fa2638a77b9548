"""Go positions and scores as GTP writes them: the ``showboard`` diagram, ``final_score`` and
Pachi's ``pachi-result``.

Vertices, handicap layouts, SGF and the board's rows belong to the rules (`klent.engine.games.go`,
`klent.engine.games.sgf`); this module only frames the rows as a diagram, and reads a score another
program printed (the match runner, the opening generator and teacher labelling ask GNU Go for them)
and the win rate Pachi reports of its last move (teacher labelling, `klent bench judge`).
"""

from __future__ import annotations

import re

from klent.engine.games.go import COLUMNS, GoState

_SCORE = re.compile(r"\s*([BW])\+(\d+(?:\.\d+)?)(?:\s|$)")


def score_points(text: str) -> float | None:
    """Black's lead in points of a GTP score: ``B+3.5`` -> 3.5, ``W+2`` -> -2.0, ``0`` -> 0.0;
    None for anything else (``W+R``, ``B+F``).  Text after the score is ignored (GNU Go's
    ``estimate_score`` adds its bounds there)."""
    if text.strip() == "0":
        return 0.0
    match = _SCORE.match(text)
    if match is None:
        return None
    return float(match.group(2)) * (1.0 if match.group(1) == "B" else -1.0)


def pachi_win_rate(text: str) -> float | None:
    """The win rate in Pachi's ``pachi-result`` reply (``colour move playouts winrate dynkomi``,
    its search's for the move its last ``genmove`` chose), None for a reply without one in [0, 1]."""
    fields = text.split()
    try:
        rate = float(fields[3])
    except (IndexError, ValueError):
        return None
    return rate if 0.0 <= rate <= 1.0 else None


def board_text(state: GoState) -> str:
    """A showboard diagram (X Black, O White), the top line (GTP row ``size``) first."""
    game = state.game
    size = game.size
    letters = "   " + " ".join(COLUMNS[:size])
    lines = [letters]
    for index, row in enumerate(game.board_rows(state)):
        number = size - index
        lines.append(f"{number:2d} {' '.join(row)} {number}")
    lines.append(letters)
    lines.append(f"komi {game.komi:g}, {'Black' if state.to_play == 0 else 'White'} to play")
    return "\n".join(lines)
