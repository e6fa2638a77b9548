"""When to resign: after several consecutive own moves valued as lost, never after one.

A search's value swings from move to move, and resigning a game that could still be saved costs
more than playing a lost one out, so one bad evaluation is not enough.  GTP and the lichess
bridge resign by the same rule; each keeps one `ResignTracker` per side it plays and game.
"""

from __future__ import annotations


class ResignTracker:
    """Counts the consecutive moves whose value was at or below ``lost_value`` (the value of
    the position for the side to move, in [-1, 1]) and says when there have been ``moves`` of
    them.  ``moves`` = 0 never resigns."""

    def __init__(self, lost_value: float, moves: int) -> None:
        if moves < 0:
            raise ValueError(f"moves must be >= 0, got {moves}")
        self.lost_value = lost_value
        self.moves = moves
        self.lost = 0  # consecutive lost evaluations so far

    @classmethod
    def from_winrate(cls, winrate: float, moves: int) -> ResignTracker:
        """Resigning at a win rate (value mapped to [0, 1], what Go programs show) of
        ``winrate`` or less; a win rate of 0 or less never resigns."""
        return cls(2.0 * winrate - 1.0, moves if winrate > 0 else 0)

    def should_resign(self, value: float) -> bool:
        """Count the value of the move just chosen; True once it is time to resign."""
        self.lost = self.lost + 1 if value <= self.lost_value else 0
        return self.moves > 0 and self.lost >= self.moves
