"""A UCI engine as a judge of positions: W - L in [-1, 1] for the side to move.

Teacher labelling (`training.teacher`) and the opening generator (`protocols.openings`) both
read a UCI engine's opinion of positions; they must start it and read it the same way.
"""

from __future__ import annotations

import math
import shlex

import chess
import chess.engine


def open_uci(command: str, hash_mb: int | None = None) -> chess.engine.SimpleEngine:
    """The engine of ``command`` with one search thread (reproducible searches), WDL output,
    and ``hash_mb`` of hash when given; options the engine lacks are left out."""
    judge = chess.engine.SimpleEngine.popen_uci(shlex.split(command), timeout=60.0)
    options = {"Threads": 1, "UCI_ShowWDL": True, **({"Hash": hash_mb} if hash_mb else {})}
    judge.configure({k: v for k, v in options.items() if k in judge.options})
    return judge


def wdl_value(info: chess.engine.InfoDict, turn: chess.Color) -> float:
    """W - L in [-1, 1] of one analysed line, from the view of the side to move (``turn``).

    A mate score is exactly +-1 (Stockfish's WDL is then 1000/0/0 anyway); without WDL output
    the centipawn score is squashed by tanh(cp / 400) (a pawn is worth about 0.25).
    """
    score = info["score"].pov(turn)
    mate = score.mate()
    if mate is not None:
        return 1.0 if mate > 0 else -1.0
    wdl = info.get("wdl")
    if wdl is not None:
        wins, _, losses = wdl.pov(turn)
        return (wins - losses) / 1000.0
    return math.tanh(score.score(mate_score=0) / 400.0)  # not a mate: the mate score is never used
