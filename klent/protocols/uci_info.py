"""The ``info`` lines of a search: a value as centipawns, WDL or mate, one line per analysed move."""

from __future__ import annotations

import math

from klent.engine.player import Decision, MoveStat
from klent.protocols.uci_value import value_centipawns

MAX_CENTIPAWNS = 12_800  # |cp| of a certain win; mate scores are reported as `mate`


def centipawns(value: float, scale: str = "outcome") -> int:
    """Centipawns of a value in [-1, 1] from the side to move's view, on the model's value
    ``scale`` (`klent.engine.player.Player.value_scale`).

    "centipawns": the model learnt a teacher's centipawns squashed, so they are read back
    exactly (`klent.protocols.uci_value.value_centipawns`).  An expected outcome ("outcome") has no
    centipawns of its own; it goes through cp = 111.714640912 * tan(1.5620688421 * v), the
    mapping Leela Chess Zero used for its value head: strictly increasing on [-1, 1] (1.562 <
    pi/2), odd, 100 cp (a pawn) at v = 0.47, 36 cp at v = 0.2, reaching +-12 800 at v = +-1.
    Either is clamped to +-12 800.
    """
    v = min(1.0, max(-1.0, float(value)))
    cp = value_centipawns(v) if scale == "centipawns" else 111.714640912 * math.tan(1.5620688421 * v)
    return int(round(min(MAX_CENTIPAWNS, max(-MAX_CENTIPAWNS, cp))))


def wdl(value: float, proven: bool = False) -> tuple[int, int, int]:
    """Win/draw/loss in permille for a value in [-1, 1] (expected score (1 + v) / 2).

    The networks predict the expected outcome only, so the draw share is a convention: half of
    the probability mass that the value leaves undecided, D = (1 - |v|) / 2, and W - L = v.
    W, D and L are never negative and sum to 1000.  A ``proven`` value (the endgame tables',
    `klent.engine.player.MoveStat.proven`) is certain: a win 1000 0 0, a draw 0 1000 0 (as its
    ``cp 0`` says), a loss 0 0 1000.
    """
    if proven:
        return (1000, 0, 0) if value > 0 else (0, 0, 1000) if value < 0 else (0, 1000, 0)
    v = min(1.0, max(-1.0, float(value)))
    draw = (1.0 - abs(v)) / 2.0
    win = round(1000 * (1.0 + v - draw) / 2.0)
    d = round(1000 * draw)
    return win, d, 1000 - win - d


def mate_in(line: MoveStat) -> int | None:
    """Moves to the won or lost end the PV reaches (checkmate in chess), counted the UCI way:
    N > 0 if the side to move wins in N of its moves, -N if it loses after N of its moves."""
    if not line.outcome:  # the game goes on, or ends drawn
        return None
    moves = (len(line.pv) + 1) // 2
    return moves if line.outcome > 0 else -moves


def info_lines(decision: Decision, nodes: int, elapsed: float, value_scale: str, show_wdl: bool) -> list[str]:
    """One ``info`` line per analysed move, best first (``multipv`` of them); ``nodes`` and
    ``elapsed`` (seconds) are the whole ``go``'s so far."""
    lines = []
    for rank, line in enumerate(decision.top_moves, start=1):
        mate = mate_in(line)
        score = f"mate {mate}" if mate is not None else f"cp {centipawns(line.q, value_scale)}"
        if show_wdl:
            score += " wdl {} {} {}".format(*wdl(line.q, line.proven))
        lines.append(
            f"info depth {len(line.pv)} seldepth {max(decision.seldepth, len(line.pv))} multipv {rank} "
            f"score {score} nodes {nodes} nps {int(nodes / max(elapsed, 1e-3))} "
            f"time {int(elapsed * 1000)} pv {' '.join(line.pv)}"
        )
    return lines
