"""Choosing moves: the reactive policy and test-time Gumbel MCTS.

    from klent.engine.search import search, reactive, SearchLimits
    result = search(state, evaluator, SearchLimits(simulations=200))
    result.action, result.improved_policy, result.pv
"""

from klent.engine.search.gumbel import GumbelConfig, search
from klent.engine.search.limits import SearchLimits
from klent.engine.search.reactive import reactive
from klent.engine.search.result import SearchResult
from klent.engine.search.tree import SearchTree

__all__ = ["GumbelConfig", "SearchLimits", "SearchResult", "SearchTree", "reactive", "search"]
