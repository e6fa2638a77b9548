"""The answers of KataGo's JSON analysis protocol: one turn of a query analysed through the
`Player` facade and written as KataGo's answer object (`klent.protocols.katago_query` reads
the query).  `klent analysis` and the HTTP endpoint answer by this same code.

What klent's answers mean, where they differ from KataGo's:

* **Values.**  ``winrate`` is the searched value mapped to [0, 1] and ``utility`` the value in
  [-1, 1]; ``lcb`` is the winrate less 1.96 standard errors of a [0, 1] mean with that mean
  (the largest variance it can have, w(1 - w)), over the move's visits.  ``scoreLead`` (and
  ``scoreMean``) is the score head's final score, komi included, of the position after the
  move (of the position itself in ``rootInfo``): our search backs up values, not scores.
  ``scoreStdev`` is the spread of that score if each point's owner were drawn independently
  from the ownership head: sqrt(sum(1 - o^2)).  A model without those heads reports no score
  fields and no ownership.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import replace
from time import perf_counter
from typing import Any

import numpy as np

from klent.engine.games.go import GoState
from klent.engine.player import FIRST_ANALYSIS_SEARCH, Decision, MoveStat, Ownership, Player, PlayOptions
from klent.protocols.katago_query import Query, Turn

FIRST_REPORT_SIMULATIONS = 16  # the first search of a query that reports during its search (about 20 ms on 9x9)
LCB_Z = 1.96

# --- the analysis of one turn -----------------------------------------------------------------


def analyse_turn(
    player: Player,
    turn: Turn,
    report: Callable[[dict[str, Any]], None],
    options: PlayOptions,
    first_search: int = FIRST_REPORT_SIMULATIONS,
) -> dict[str, Any]:
    """Analyse one turn of a query on ``player`` and return its final answer; with
    ``reportDuringSearchEvery``, ``report`` gets an answer with ``isDuringSearch`` true after
    each search of the analysis that comes at least that long after the previous report.
    ``options`` are the engine's; the query sets the budget, noise and moves listed.  A turn
    stopped before any search answers ``noResults``."""
    query = turn.query
    state = turn.query.positions[turn.index]
    if turn.stop.is_set():
        return no_results(turn)
    if state.is_terminal:  # after two passes: what to play if the game went on
        state = state.game.board_position(state, state.to_play)
    player.set_position(state.start(), state.moves())
    opts = replace(
        options, mode="search", gumbel_scale=query.noise, top_moves=state.game.num_actions,
        candidates=_candidates(query, state),
    )
    last_report: float | None = None  # when the last report during the search went out

    def update(decision: Decision) -> bool:
        nonlocal last_report
        every, now = query.report_every, perf_counter()
        if every is not None and (last_report is None or now - last_report >= every):
            report(answer(player, turn, decision, during_search=True))
            last_report = now
        return True

    decision = player.analyse(update, turn.stop, opts, simulations=query.max_visits, time=query.max_time,
                              interval=query.report_every or 1.0,
                              first=first_search if query.report_every is not None else FIRST_ANALYSIS_SEARCH)
    return answer(player, turn, decision, during_search=False)


def no_results(turn: Turn) -> dict[str, Any]:
    """The answer of a turn terminated before its analysis started."""
    return {"id": turn.query.id, "isDuringSearch": False, "noResults": True, "turnNumber": turn.number}


def _candidates(query: Query, state: GoState) -> tuple[int, ...]:
    """The actions ``avoidMoves``/``allowMoves`` leave to list at ``state`` (() = every one)."""
    game = state.game
    legal = [int(a) for a in np.flatnonzero(state.legal_mask())]
    kept = legal
    for player, moves in query.avoid:
        if player == state.to_play:
            kept = [a for a in kept if game.vertex(a) not in moves]
    for player, moves in query.allow:
        if player == state.to_play:
            kept = [a for a in kept if game.vertex(a) in moves]
    if len(kept) == len(legal):
        return ()
    return tuple(kept) or (game.pass_action,)  # nothing left: the pass, which is always legal


def answer(player: Player, turn: Turn, decision: Decision, during_search: bool) -> dict[str, Any]:
    """The JSON answer for ``decision`` at the player's position, as the query asks for it."""
    query = turn.query
    state = player.state
    assert isinstance(state, GoState)
    sign = _sign(query.report_as, state.to_play)
    # The moves searched, most visited in the tree first (an analysis is several searches on
    # one tree, so the last search's own choice may have few of them), ties in the facade's
    # order; before any visit, its choice alone.
    listed = sorted((m for m in decision.top_moves if m.visits > 0), key=lambda m: -m.visits)
    listed = listed or decision.top_moves[:1]
    root = player.ownership()
    after = player.ownership_after([m.action for m in listed])
    infos = [
        _move_info(m, order, sign, None if after is None else after[order], query)
        for order, m in enumerate(listed)
    ]
    root_info: dict[str, Any] = {
        "visits": decision.visits,
        "winrate": _winrate(decision.value, sign),
        "utility": sign * decision.value,
        "lcb": _lcb(_winrate(decision.value, sign), decision.visits),
        "thisHash": _position_hash(state, symmetric=False),
        "symHash": _position_hash(state, symmetric=True),
        "currentPlayer": "BW"[state.to_play],
    }
    if root is not None and root.score is not None:
        root_info.update(_scores(root, sign))
    result: dict[str, Any] = {
        "id": query.id,
        "isDuringSearch": during_search,
        "turnNumber": turn.number,
        "moveInfos": infos,
        "rootInfo": root_info,
    }
    if query.ownership and root is not None:
        result["ownership"] = _ownership_list(root.owner, sign)
    if query.policy:
        prior = np.where(state.legal_mask(), decision.result.prior, -1.0)
        result["policy"] = [round(float(p), 6) for p in prior]
    return result


def _move_info(m: MoveStat, order: int, sign: float, after: Ownership | None, query: Query) -> dict[str, Any]:
    winrate = _winrate(m.q, sign)
    info: dict[str, Any] = {
        "move": m.move,
        "visits": m.visits,
        "winrate": winrate,
        "prior": m.prior,
        "utility": sign * m.q,
        "lcb": _lcb(winrate, m.visits),
        "utilityLcb": sign * (2.0 * _lcb(_winrate(m.q, 1.0), m.visits) - 1.0),
        "order": order,
        "pv": m.pv,
    }
    if after is not None and after.score is not None:
        info.update(_scores(after, sign))
    if query.pv_visits:
        info["pvVisits"] = m.pv_visits
    if query.moves_ownership and after is not None:
        info["ownership"] = _ownership_list(after.owner, sign)
    return info


def _sign(report_as: str, to_play: int) -> float:
    """+1 where values stay the side to move's, -1 where they turn to the other side's."""
    if report_as == "SIDETOMOVE":
        return 1.0
    return 1.0 if (report_as == "BLACK") == (to_play == 0) else -1.0


def _winrate(value: float, sign: float) -> float:
    return (sign * value + 1.0) / 2.0


def _lcb(winrate: float, visits: int) -> float:
    """The winrate less `LCB_Z` standard errors of a mean of ``visits`` values in [0, 1] whose
    variance is at most w(1 - w); KataGo's lcb may also fall outside [0, 1]."""
    if visits < 1:
        return winrate - 1.0
    return winrate - LCB_Z * math.sqrt(max(winrate * (1.0 - winrate), 0.0) / visits)


def _scores(ownership: Ownership, sign: float) -> dict[str, float]:
    assert ownership.score is not None
    score = sign * ownership.score
    spread = float(np.sqrt(np.sum(1.0 - np.square(ownership.owner.astype(np.float64)))))
    return {"scoreLead": score, "scoreMean": score, "scoreSelfplay": score, "scoreStdev": spread}


def _ownership_list(owner: np.ndarray, sign: float) -> list[float]:
    """Row by row from the top left (A19 on 19x19), as KataGo lists it."""
    return [round(float(v), 4) for v in (sign * owner).ravel()]


def _position_hash(state: GoState, symmetric: bool) -> str:
    """KataGo's ``thisHash`` / ``symHash``: the board and side to move, hashed (``symHash``: the
    smallest over the board's 8 symmetries)."""
    board = state.board()
    boards = [board]
    if symmetric:
        boards = [np.rot90(b, k) for b in (board, board.T) for k in range(4)]
    digests = [hashlib.blake2b(np.ascontiguousarray(b).tobytes() + bytes([state.to_play]), digest_size=16).hexdigest()
               for b in boards]
    return min(digests).upper()
