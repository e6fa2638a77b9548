"""Score utility: a bounded bonus for points, added to the win value of the positions a search values.

Where the network reads a game as won (or lost) whatever is played, the win value cannot tell a
safe lead from a slack move, nor a fighting loss from a hopeless one; a bonus that grows with the
expected margin keeps the points in play.  KataGo's utility has two such terms, each
``weight * 2/pi * atan(x)``, in (-weight, weight), beside a win/loss term of weight 1:

- static: ``x = score / (2 * width)``: more points are better, wherever the game stands;
- dynamic: ``x = (score - centre) / (0.75 * width)``, where ``centre`` is the root's expected
  score moved a fifth of the way to 0: the bonus is steepest around the score the game is
  expected to end with, so a point or two gained or lost there counts, even in a won game.

``width`` is the board's side (the square root of its points).  ``score`` is the network's score
head, from the view of the side to move (its mean: the network predicts no spread, where KataGo
integrates its utility over one), and at a finished game the count.  KataGo plays with weights 0.1
(static) and 0.3 (dynamic); the default here is off (0, 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

STATIC_SCALE = 2.0  # board widths a static bonus of half its weight takes
DYNAMIC_SCALE = 0.75  # the same for the dynamic bonus, around its centre
CENTRE_ZERO_WEIGHT = 0.2  # how far the dynamic centre is moved from the root's score towards 0


@dataclass(frozen=True)
class ScoreUtility:
    """The weights of the static and dynamic score terms (0, 0: the win value alone)."""

    static: float = 0.0
    dynamic: float = 0.0

    def __post_init__(self) -> None:
        if not (0.0 <= self.static <= 1.0 and 0.0 <= self.dynamic <= 1.0):
            raise ValueError(f"score utility weights must be within [0, 1], got {self.static}, {self.dynamic}")

    @property
    def active(self) -> bool:
        return self.static > 0.0 or self.dynamic > 0.0

    @staticmethod
    def centre(root_score: np.ndarray) -> np.ndarray:
        """The dynamic term's centre from the root's expected score (the root player's view)."""
        return (1.0 - CENTRE_ZERO_WEIGHT) * root_score

    def __call__(self, score: np.ndarray, centre: np.ndarray, width: float) -> np.ndarray:
        """The bonus of positions with expected ``score``, both it and ``centre`` from the view
        of the side to move there."""
        static = np.arctan(score / (STATIC_SCALE * width))
        dynamic = np.arctan((score - centre) / (DYNAMIC_SCALE * width))
        return (2.0 / np.pi) * (self.static * static + self.dynamic * dynamic)
