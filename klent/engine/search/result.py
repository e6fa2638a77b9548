"""What a move decision returns, whether it came from the reactive policy or from a search."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from klent.engine.search.tree import SearchTree


@dataclass(frozen=True, eq=False)
class SearchResult:
    """The chosen action and the analysis behind it, over the game's whole action space A.

    - ``action``: the move to play.
    - ``improved_policy``: float32[A], softmax(masked logits + sigma(completed Q)) after a
      search (the Gumbel AlphaZero policy target), softmax(masked logits) for reactive play;
      0 on illegal actions.
    - ``visits``: int32[A], root visits made by *this* search (they sum to ``simulations``;
      visits inherited through tree reuse are not counted here).
    - ``q``: float32[A], completed Q from the side to move's view: the searched value of a
      visited action, the mixed value v_mix for an unvisited legal one, 0 for illegal ones.
      Reactive play returns the network's action values.
    - ``value``: value of the position for the side to move (the root's running mean after a
      search; V = sum pi Q or the value head for reactive play).
    - ``pv``: principal variation starting with ``action``.
    - ``simulations``: simulations made by this call for this root; ``elapsed``: seconds.
    - ``prior``: float32[A], softmax of the masked policy logits at the root.
    - ``tree``: the searched tree, to continue from after the next moves
      (``result.tree.advance([my_move, reply])``); None for reactive play.
    - ``ownership``, ``score``: reactive play with a model that has those heads (Go): each
      point's predicted final owner, float32[H, W] (+1 = the side to move's), and the final
      score in points for the side to move; None otherwise.
    """

    action: int
    improved_policy: np.ndarray
    visits: np.ndarray
    q: np.ndarray
    value: float
    pv: list[int]
    simulations: int
    elapsed: float
    prior: np.ndarray
    tree: SearchTree | None = None
    ownership: np.ndarray | None = None
    score: float | None = None
