"""What a player reports of a decision: the move, its value and line, the candidate moves
(`Decision`, `MoveStat`), built from a search's result; and Go's ownership (`Ownership`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from klent.engine.games.base import Game, State
from klent.engine.go_rules import MoveRule
from klent.engine.network import Evaluator
from klent.engine.player.options import PlayOptions
from klent.engine.search.reactive import reactive
from klent.engine.search.result import SearchResult
from klent.engine.search.tree import SearchTree
from klent.engine.tablebase import RootProbe


@dataclass(frozen=True)
class MoveStat:
    """One candidate move of an analysis, seen from the side to move."""

    action: int
    move: str
    prior: float  # network policy probability
    q: float  # action value in [-1, 1] (searched value when visited)
    visits: int  # visits in the search tree, including those kept from earlier searches
    policy: float  # improved policy probability (the engine's preference after search)
    pv: list[str] = field(default_factory=list)
    outcome: float | None = None  # the result ``pv`` reaches, +1 won to -1 lost; None: the game goes on
    pv_visits: list[int] = field(default_factory=list)  # visits of each move of ``pv`` in the tree
    proven: bool = False  # ``q`` is the endgame tables' exact win, draw or loss, not an estimate

    @property
    def winrate(self) -> float:
        """``q`` mapped to [0, 1] (what Go GUIs call the win rate)."""
        return _winrate(self.q)


@dataclass(frozen=True)
class Decision:
    """A chosen move with the analysis behind it."""

    action: int
    move: str
    value: float  # value of the position for the side to move, in [-1, 1]
    top_moves: list[MoveStat]  # the chosen move first, then by visits
    pv: list[str]  # the chosen move's principal variation
    simulations: int
    elapsed: float
    result: SearchResult
    ponder: str | None  # the reply to expect (the PV's second move, else the policy's choice)
    seldepth: int  # plies to the deepest position searched, at least the PV's length
    visits: int  # visits of the searched tree, inherited ones included (0 for reactive play)
    rule: MoveRule | None = None  # the Go move rule that chose the move instead of the network
    outcome: float | None = None  # the result ``pv`` reaches, +1 won to -1 lost; None: the game goes on

    @property
    def depth(self) -> int:
        """Plies of the principal variation (UCI's ``depth``)."""
        return len(self.pv)

    @property
    def winrate(self) -> float:
        """Value mapped to [0, 1] (what Go GUIs call the win rate)."""
        return _winrate(self.value)


@dataclass(frozen=True)
class Ownership:
    """The network's view of how a Go game ends from a position: each point's owner
    (float32[H, W] in [-1, 1], +1 = the side to move's) and the final score in points for the
    side to move (None for a model without a score head)."""

    owner: np.ndarray
    score: float | None


def build_decision(
    game: Game,
    state: State,
    result: SearchResult,
    opts: PlayOptions,
    chosen: int,
    rule: MoveRule | None,
    evaluator: Evaluator | None,
) -> Decision:
    """The decision to play ``chosen`` (or, outside ``opts.candidates``, the best move allowed) in
    ``state`` of ``game``, with the analysis of ``result``; ``rule``: the Go move rule that chose it, if one
    did; ``evaluator`` finds the expected reply a search too short to have one did not reach."""
    tree = result.tree
    # Visits in the whole tree (moves searched before a tree reuse included): that is what
    # an analysis shows.  Reactive play has no tree and no visits.
    visits = tree.child_visits() if tree is not None else {}
    legal = np.flatnonzero(state.legal_mask()).tolist()
    allowed = [a for a in legal if a in opts.candidates] or legal

    def preference(a: int) -> tuple[int, float]:
        return -visits.get(a, 0), -float(result.improved_policy[a])

    def line(first: int) -> list[int]:
        return tree.principal_variation(first=first) if tree is not None else [first]

    def stat(a: int) -> MoveStat:
        actions = line(a)
        pv, outcome = _played_out(state, actions)
        return MoveStat(
            action=a,
            move=game.action_to_text(state, a),
            prior=float(result.prior[a]),
            q=float(result.q[a]),
            visits=visits.get(a, 0),
            policy=float(result.improved_policy[a]),
            pv=pv,
            outcome=outcome,
            pv_visits=tree.line_visits(actions[: len(pv)]) if tree is not None else [],
        )

    action = chosen if chosen in allowed else min(allowed, key=preference)
    # The chosen move first, then by visits and by the improved policy.
    order = sorted(allowed, key=lambda a: (a != action, *preference(a)))
    top = [stat(a) for a in order[: opts.top_moves]]
    pv = line(action)
    pv_text, outcome = _played_out(state, pv)
    return Decision(
        action=action,
        move=game.action_to_text(state, action),
        value=float(result.value),
        top_moves=top,
        pv=pv_text,
        simulations=result.simulations,
        elapsed=result.elapsed,
        result=result,
        ponder=_expected_reply(game, state, pv, tree, evaluator if opts.ponder else None),
        seldepth=max(tree.depth() if tree is not None else 0, len(pv)),
        visits=tree.visits if tree is not None else 0,
        rule=rule if action == chosen else None,
        outcome=outcome,
    )


def _expected_reply(
    game: Game, state: State, pv: list[int], tree: SearchTree | None, evaluator: Evaluator | None
) -> str | None:
    """The opponent's expected reply to ``pv[0]``: the PV's second move; after a search too
    short to have one, the policy's favourite reply, read from the tree if the search
    evaluated that position, else (only with an ``evaluator``: it costs a network call) from a
    reactive evaluation by ``evaluator``.  None after a move that ends the game."""
    after = state.play(pv[0])
    if after.is_terminal:
        return None
    if len(pv) > 1:
        reply = pv[1]
    elif tree is not None and (node := tree.advance(pv[:1])) is not None:
        reply = node.policy_action()
    elif evaluator is not None:
        reply = reactive(after, evaluator).action
    else:
        return None
    return game.action_to_text(after, reply)


def with_table_values(decision: Decision, table: RootProbe) -> Decision:
    """``decision`` valued as the endgame tables value its position and moves, not as the
    search estimated them: a drawn ending reads as a draw (0), and each move's value is ``proven``."""
    top = [replace(stat, q=table.values.get(stat.action, stat.q), proven=stat.action in table.values)
           for stat in decision.top_moves]
    return replace(decision, value=table.value, top_moves=top)


def _winrate(value: float) -> float:
    return (value + 1.0) / 2.0


def _played_out(state: State, actions: Sequence[int]) -> tuple[list[str], float | None]:
    """Move texts of a principal variation played out from ``state``, and the result it reaches
    for ``state``'s side to move (None: the game goes on): a protocol reports a mate from it.
    A line the search ended in a claimable draw (`State.is_claimable_draw`) reaches a draw."""
    side, texts = state.to_play, []
    for action in actions:
        if state.is_terminal:
            break
        texts.append(state.game.action_to_text(state, int(action)))
        state = state.play(int(action))
        if state.is_claimable_draw:
            return texts, 0.0
    return texts, state.reward_for(side) if state.is_terminal else None
