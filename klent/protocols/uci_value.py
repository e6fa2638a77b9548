"""A UCI engine as a judge of positions: W - L in [-1, 1] for the side to move.

Teacher labelling (`klent.training.teacher`, from raw ``info`` lines: `line_value`) and the opening
generator (`klent.matchplay.openings`, through python-chess: `wdl_value`) both read a UCI engine's
opinion of positions; they must read it the same way (`score_value`).
"""

from __future__ import annotations

import math
import shlex

import chess
import chess.engine


def open_uci(command: str) -> chess.engine.SimpleEngine:
    """The engine of ``command`` with one search thread (reproducible searches) and WDL output;
    options the engine lacks are left out."""
    judge = chess.engine.SimpleEngine.popen_uci(shlex.split(command), timeout=60.0)
    options = {"Threads": 1, "UCI_ShowWDL": True}
    judge.configure({k: v for k, v in options.items() if k in judge.options})
    return judge


def wdl_value(info: chess.engine.InfoDict, turn: chess.Color) -> float:
    """W - L in [-1, 1] of one analysed line (python-chess's), from the view of the side to move
    (``turn``); see `score_value`."""
    score = info["score"].pov(turn)
    wdl = info.get("wdl")
    if wdl is None:
        return score_value(score.mate(), score.score(mate_score=0), None)
    wins, draws, losses = wdl.pov(turn)
    return score_value(score.mate(), score.score(mate_score=0), (wins, draws, losses))


def line_value(words: list[str], use_wdl: bool = True) -> float:
    """W - L of one raw ``info ... score ... [wdl W D L] ... pv ...`` line, split into words,
    from the view of the side to move (UCI's own view); see `score_value`.  ``use_wdl=False``
    reads the centipawn score even where the engine prints its WDL."""
    kind, amount = line_score(words)
    wdl = None
    if use_wdl and "wdl" in words:
        w = words.index("wdl")
        wdl = (int(words[w + 1]), int(words[w + 2]), int(words[w + 3]))
    return score_value(amount if kind == "mate" else None, amount if kind == "cp" else 0, wdl)


def line_score(words: list[str]) -> tuple[str, int]:
    """(``cp`` or ``mate``, the number) of a raw ``info ... score KIND N ...`` line split into
    words, from the side to move's view."""
    at = words.index("score")
    return words[at + 1], int(words[at + 2])


# Centipawns to a win probability, p = sigmoid(cp / CENTIPAWN_SCALE): lichess's fit of its
# players' results, which Ruoss et al. 2024 used for their action-value labels.  As W - L
# (2p - 1) that is tanh(cp / (2 * 271.6)): +1 pawn = 0.18, +5 pawns = 0.72, +10 pawns = 0.95.
CENTIPAWN_SCALE = 1 / 0.00368208


def centipawn_value(centipawns: float) -> float:
    """W - L in [-1, 1] of a centipawn score (`CENTIPAWN_SCALE`)."""
    return math.tanh(centipawns / (2 * CENTIPAWN_SCALE))


def value_centipawns(value: float) -> float:
    """The centipawns of a value on the `centipawn_value` scale (its inverse; +-inf at +-1)."""
    v = min(1.0, max(-1.0, float(value)))
    return math.inf if v == 1.0 else -math.inf if v == -1.0 else 2 * CENTIPAWN_SCALE * math.atanh(v)


def score_value(mate: int | None, centipawns: int, wdl: tuple[int, int, int] | None) -> float:
    """W - L in [-1, 1]: a mate score is exactly +-1 (Stockfish's WDL is then 1000/0/0 anyway);
    else the engine's WDL in permille; without WDL the centipawn score (`centipawn_value`).

    The two scales differ where it matters for labels: Stockfish 15.1's WDL puts +1 pawn at
    about a 50 % win and saturates near +3 pawns, so every move of a won position reads ~1;
    the centipawn scale still tells +5 pawns (0.72) from +3 (0.5)."""
    if mate is not None:
        return 1.0 if mate > 0 else -1.0
    if wdl is not None:
        wins, _, losses = wdl
        return (wins - losses) / 1000.0
    return centipawn_value(centipawns)
