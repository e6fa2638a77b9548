"""Choosing moves: the reactive policy and test-time Gumbel MCTS.

    from engine.search import search, reactive, SearchLimits
    result = search(state, evaluator, SearchLimits(simulations=200))
    result.action, result.improved_policy, result.pv
"""

from engine.search.gumbel import GumbelConfig, search
from engine.search.limits import SearchLimits
from engine.search.reactive import reactive
from engine.search.result import SearchResult
from engine.search.tree import SearchTree

__all__ = ["GumbelConfig", "SearchLimits", "SearchResult", "SearchTree", "reactive", "search"]
