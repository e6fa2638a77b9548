"""Go's move rules: what a Go program decides on top of its network's choice.

A network trained by self-play or distilled from GNU Go plays Go well but ends games badly: it
passes with dead stones on the board (as GNU Go does, trusting a referee to remove them), and
under area scoring a pass in such a position can lose a won game.  The `Player` therefore
applies these rules to every Go move it chooses, whatever the protocol (GTP, HTTP, the web
page, ``klent match``) and whether it plays reactively or by search
(`klent.engine.player.PlayOptions.go_rules` turns them off).  Each is what a serious engine does,
simplified where said:

* **Dead stones.**  GNU Go, Pachi, KGS and human referees remove dead stones before they
  count.  A model with an ownership head judges them the same way: a chain whose mean
  predicted ownership is its opponent's is dead (`klent.engine.go_board.dead_stones`), and the
  *judged* score is the area score with those stones removed (`judge`).  A model without the
  head counts every stone alive (the judged score is then the board's area score).
* **Passing.**  We pass only when passing cannot lose: when the opponent has just passed and
  both the area score of the board as it stands (all stones alive: what Tromp-Taylor rules
  count) and the judged score win, we pass at once, without a search, and the game ends with
  our win.  When the network wants to pass but either count does not win, we keep playing:
  where opponent stones can still be attacked, as under cleanup (capturing the stones a
  referee would remove anyway costs nothing under area scoring); else, where only our own dead
  stones lose the count, the network's best other move (a one-eyed group must try to live, not
  pass); else we pass.
* **Own eyes.**  A move into our own single-point eye is replaced by a pass unless its value
  beats the pass's by more than `EYE_FILL_MARGIN`.
* **Cleanup** (GTP's ``kgs-genmove_cleanup``): a pass is replaced by the best legal point (by
  the engine's preference: visits, then the improved policy) among the liberties of opponent
  chains that are not self-atari, until no such point is left; then we pass.  The opponent's
  pass does not end the game here: the controller asked for the stones to be removed.

The judgement costs a network call (the ownership of the position), so it is made only when a
rule needs it: when the network wants to pass or the opponent has passed, and the board as it
stands wins.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from enum import Enum
from functools import cached_property

import numpy as np

from klent.engine import go_board
from klent.engine.games.go import GoState
from klent.engine.search.result import SearchResult

EYE_FILL_MARGIN = 0.1  # value a move into our own eye must gain over a pass


class MoveRule(Enum):
    """Which rule replaced the network's move."""

    PASS_WINS = "pass wins"  # the opponent passed and passing ends the game with our win
    OWN_EYE = "own eye"  # a move into our own eye became a pass
    CLEANUP = "cleanup"  # a pass became an attack on opponent stones
    RESCUE = "rescue"  # a pass that loses by our own dead stones became the best other move


@dataclass(frozen=True)
class Judgement:
    """A position as a referee counts it: ``judged`` is ``state`` with the ``dead`` stones
    (point indices) removed, a set-up position with the same side to move."""

    state: GoState
    judged: GoState
    dead: frozenset[int]

    @classmethod
    def all_alive(cls, state: GoState) -> Judgement:
        """``state`` counted as it stands, every stone alive."""
        return cls(state, state, frozenset())

    def chains(self, dead: bool) -> list[list[int]]:
        """The dead (or the living) chains of ``state``, each as its ascending points; Black's
        first, each colour's in board order of their first stone (GTP's ``final_status_list``)."""
        board = self.state.board().ravel()
        size = self.state.game.size
        return [
            sorted(stones)
            for colour in (1, -1)
            for stones, _ in go_board.chains(board, size, colour)
            if (stones <= self.dead) == dead
        ]


def judge(state: GoState, owner: np.ndarray | None) -> Judgement:
    """``state`` judged by an ownership map ``owner`` (float[H, W], +1 = the side to move's, as
    the network reports it); None counts every stone alive."""
    if owner is None:
        return Judgement.all_alive(state)
    game = state.game
    board = state.board().ravel()
    black_view = owner.ravel() * (1 if state.to_play == 0 else -1)
    dead = go_board.dead_stones(board, game.size, black_view)
    return Judgement(state, without_stones(state, dead), frozenset(dead))


def without_stones(state: GoState, dead: Collection[int]) -> GoState:
    """``state`` with the stones on the points ``dead`` removed: the position a referee counts,
    set up with the same side to move."""
    board = state.board().ravel()
    alive = [[p for p in np.flatnonzero(board == colour).tolist() if p not in dead] for colour in (1, -1)]
    return state.game.setup_state(black=alive[0], white=alive[1], to_play=state.to_play)


class MoveRules:
    """The rules for one move of the side to move in ``state``.

    ``judged_position`` returns the position as a referee counts it (`judge`); it is called
    at most once, and only when a rule needs it.  ``cleanup``: play as ``kgs-genmove_cleanup`` asks.
    """

    def __init__(self, state: GoState, judged_position: Callable[[], GoState], cleanup: bool = False) -> None:
        self.state = state
        self.cleanup = cleanup
        self._judged_position = judged_position
        self._stone = 1 if state.to_play == 0 else -1
        self._pass = state.game.pass_action

    @cached_property
    def area_score(self) -> float:
        """Our area score with every stone alive (what Tromp-Taylor rules count)."""
        return self.state.score() * self._stone

    @cached_property
    def judged_score(self) -> float:
        """Our area score with the dead stones removed (what a referee counts)."""
        return self._judged_position().score() * self._stone

    def wins(self) -> bool:
        """True when both counts win (the judgement is asked for only if the first does)."""
        return self.area_score > 0 and self.judged_score > 0

    def passes_at_once(self) -> bool:
        """True when we pass without choosing: the opponent has just passed and passing ends
        the game with our win."""
        return not self.cleanup and self.state.last_action == self._pass and self.wins()

    def choose(self, result: SearchResult) -> tuple[int, MoveRule | None]:
        """The move to play instead of ``result.action`` (the network's, after the search if
        one ran) and the rule that chose it; the network's move and None when no rule applies."""
        action, rule = result.action, None
        board = self.state.board().ravel()
        size = self.state.game.size
        q = result.q
        if (
            action != self._pass
            and go_board.is_own_eye(board, size, action, self._stone)
            and q[self._pass] >= q[action] - EYE_FILL_MARGIN
        ):
            action, rule = self._pass, MoveRule.OWN_EYE
        if action != self._pass or (not self.cleanup and self.wins()):
            return action, rule
        legal = self.state.legal_mask()
        targets = [p for p in go_board.cleanup_points(board, size, self._stone) if legal[p]]
        if targets:
            return _favourite(targets, result), MoveRule.CLEANUP
        if not self.cleanup and self.area_score > 0 >= self.judged_score:
            others = [
                a for a in np.flatnonzero(legal).tolist()
                if a != self._pass
                and not go_board.is_own_eye(board, size, a, self._stone)
                and not go_board.is_self_atari(board, size, a, self._stone)
            ]
            if others:
                return _favourite(others, result), MoveRule.RESCUE
        return action, rule


def _favourite(candidates: list[int], result: SearchResult) -> int:
    """The engine's preferred move among ``candidates``: most visits, then improved policy."""
    return max(candidates, key=lambda a: (int(result.visits[a]), float(result.improved_policy[a])))
