"""The search tree: flat numpy arrays of nodes and edges, shared by every root of one search.

One `Forest` holds the trees of all the roots searched in one call.  Nodes and edges are rows
of preallocated arrays that grow by doubling; a node's children are the contiguous edge rows
``first_edge .. first_edge + num_edges``, one per *legal* action (so a chess node stores ~35
edges, not 4672).  Numba kernels (`klent.engine.search.simulate`) walk these arrays; Python only
creates nodes, in batches, after each network evaluation.

Per node: parent and parent edge, children range, visit count, sum of backed-up values,
network value v_hat, terminal flag, side to move, and the `State` itself (to play children).
Per edge: action, prior logit, child node (-1 until expanded), visit count N, pending visits
of descents not yet backed up, reward r and discount gamma.  Edge value
q(s, a) = r + gamma * V(child) with V(child) = value_sum / visits of the child, all values from
the view of the player to move at that node; gamma = -1 when the turn passes to the opponent,
+1 when the same player moves again, 0 into a terminal node (whose r is the outcome for the
mover and which is never expanded).

`SearchTree` is the handle a search result carries for tree reuse: advancing it by the moves
actually played gives the subtree to continue from, and the next search copies that subtree
into its own forest with all its statistics -- or, when it is the whole forest (an analysis
searching the same position again, or a subtree `SearchTree.detached` by its owner, as
`klent.engine.player.Player` does), continues in that forest (`klent.engine.search.gumbel`).

Memory.  A node costs its node row (46 bytes), one edge row (56 bytes) per legal action, the
pointer to its state and the state's own objects: measured over long searches (`klent bench
tree_memory`, benchmarks/RESULTS.md) about 9.2 KB a node in chess (7.5 KB of state, mostly its
4672-byte legal mask and python-chess board; 30 edges, 1.7 KB) and 4.1-4.4 KB in 9x9 Go (1.4 KB
of state; 35-50 edges, 2-2.8 KB).  A forest given ``max_bytes`` counts these exactly -- the arrays by their
allocated size, the states by `owned_bytes` (`klent.engine.search.state_memory`) of one sample per
batch -- and grows its arrays only as far as the budget pays for at the current mix of nodes and edges, so that the
search can stop growing at the budget (`Forest.has_room`) instead of at a guessed node count
that is right for one game only.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np
from numba import njit

from klent.engine.games.base import State
from klent.engine.network import MASKED_LOGIT
from klent.engine.search.state_memory import owned_bytes


class TreeArrays(NamedTuple):
    """The forest's arrays as one argument for the numba kernels."""

    parent: np.ndarray  # int32[nodes]; -1 for a root
    parent_edge: np.ndarray  # int32[nodes]; -1 for a root
    first_edge: np.ndarray  # int32[nodes]
    num_edges: np.ndarray  # int32[nodes]
    node_visits: np.ndarray  # int32[nodes]
    value_sum: np.ndarray  # float64[nodes]
    raw_value: np.ndarray  # float64[nodes]; network value v_hat (0 for terminal nodes)
    terminal: np.ndarray  # bool[nodes]
    action: np.ndarray  # int32[edges]
    prior: np.ndarray  # float64[edges]; masked policy logit of the action
    child: np.ndarray  # int32[edges]; -1 while not expanded
    visits: np.ndarray  # int32[edges]
    pending: np.ndarray  # int32[edges]; descents in flight through this edge
    reward: np.ndarray  # float64[edges]
    discount: np.ndarray  # float64[edges]
    # Work space of the kernels: per-edge scratch for q and a per-node cache of sigma (at a
    # root) or pi' (elsewhere), valid while the node's stamp equals epoch[0].  Real visits only
    # change at backups, so the kernels bump the epoch after each backup instead of
    # recomputing every node at every descent.
    q_scratch: np.ndarray  # float64[edges]
    cached: np.ndarray  # float64[edges]
    stamp: np.ndarray  # int64[nodes]
    epoch: np.ndarray  # int64[1]


_NODE_FIELDS = ("parent", "parent_edge", "first_edge", "num_edges", "node_visits", "value_sum",
                "raw_value", "terminal", "stamp", "to_play")
_EDGE_FIELDS = ("action", "prior", "child", "visits", "pending", "reward", "discount", "q_scratch",
                "cached")
_DTYPES = {
    "parent": np.int32, "parent_edge": np.int32, "first_edge": np.int32, "num_edges": np.int32,
    "node_visits": np.int32, "value_sum": np.float64, "raw_value": np.float64,
    "terminal": np.bool_, "action": np.int32, "prior": np.float64, "child": np.int32,
    "visits": np.int32, "pending": np.int32, "reward": np.float64, "discount": np.float64,
    "q_scratch": np.float64, "cached": np.float64, "stamp": np.int64, "to_play": np.int8,
}


# Legal actions of an evaluated state are those with a logit above this: the evaluator contract
# masks the others with MASKED_LOGIT.  Reading legality back from the logits spares a second
# (possibly slow) ``legal_mask`` call per expanded state.
LEGAL_LOGIT_THRESHOLD = float(MASKED_LOGIT) / 2
NODE_ROW_BYTES = sum(np.dtype(_DTYPES[name]).itemsize for name in _NODE_FIELDS) + 8  # + the state pointer
EDGE_ROW_BYTES = sum(np.dtype(_DTYPES[name]).itemsize for name in _EDGE_FIELDS)
MIN_GROWTH = 1 / 16  # near the budget the arrays still grow by this fraction, not row by row


class Forest:
    """Growable node and edge arrays plus the states of the nodes (fields as in `TreeArrays`,
    plus ``to_play``: int8[nodes], the side to move at each node).

    ``max_bytes`` (None: unbounded) is the memory the forest should stay within: growth of the
    arrays is planned for it, and `has_room` says whether more nodes still fit.
    """

    # Created in __init__ from _NODE_FIELDS and _EDGE_FIELDS; declared for type checkers.
    parent: np.ndarray
    parent_edge: np.ndarray
    first_edge: np.ndarray
    num_edges: np.ndarray
    node_visits: np.ndarray
    value_sum: np.ndarray
    raw_value: np.ndarray
    terminal: np.ndarray
    stamp: np.ndarray
    to_play: np.ndarray
    action: np.ndarray
    prior: np.ndarray
    child: np.ndarray
    visits: np.ndarray
    pending: np.ndarray
    reward: np.ndarray
    discount: np.ndarray
    q_scratch: np.ndarray
    cached: np.ndarray

    def __init__(self, node_capacity: int = 256, edge_capacity: int = 4096, max_bytes: int | None = None) -> None:
        self.num_nodes = 0
        self.num_edges_used = 0
        self.max_bytes = max_bytes
        self.states: list[State] = []
        self.state_bytes = 0  # estimated bytes owned by the states (see `owned_bytes`)
        self.epoch = np.zeros(1, dtype=np.int64)
        for name in _NODE_FIELDS:
            setattr(self, name, np.zeros(node_capacity, dtype=_DTYPES[name]))
        for name in _EDGE_FIELDS:
            setattr(self, name, np.zeros(edge_capacity, dtype=_DTYPES[name]))

    @property
    def arrays(self) -> TreeArrays:
        return TreeArrays(*(getattr(self, name) for name in TreeArrays._fields))

    @property
    def nbytes(self) -> int:
        """Memory held: the arrays as allocated, the state pointers and the states' own objects."""
        arrays = sum(getattr(self, name).nbytes for name in (*_NODE_FIELDS, *_EDGE_FIELDS))
        return arrays + self.epoch.nbytes + 8 * len(self.states) + self.state_bytes

    def node_bytes(self) -> float:
        """Mean memory of one node so far: its node row, its edge rows and its state."""
        nodes = max(1, self.num_nodes)
        return NODE_ROW_BYTES + (self.num_edges_used * EDGE_ROW_BYTES + self.state_bytes) / nodes

    def affordable_nodes(self) -> int:
        """How many more nodes ``max_bytes`` pays for at the current mean cost of a node (as if
        no row were allocated yet); a huge number without a budget."""
        if self.max_bytes is None:
            return sys.maxsize
        used = self.num_nodes * self.node_bytes()
        return max(0, int((self.max_bytes - used) / self.node_bytes()))

    def has_room(self, nodes: int) -> bool:
        """Whether ``nodes`` more nodes of the mean cost fit within ``max_bytes``."""
        return self.max_bytes is None or self.nbytes + nodes * self.node_bytes() <= self.max_bytes

    def reserve(self, nodes: int, edges: int) -> None:
        """Make room for ``nodes`` more nodes and ``edges`` more edges.

        Arrays double as they grow, but with ``max_bytes`` no further than the budget pays for
        (`affordable_nodes`, with as many edges per node as so far): doubling a tree near the
        budget would allocate up to twice what its nodes can ever use.  Near the budget they
        grow by at least `MIN_GROWTH`, so that each new batch does not copy the arrays again.
        """
        affordable = self.affordable_nodes()
        edges_per_node = self.num_edges_used / max(1, self.num_nodes)
        if self.num_nodes + nodes > self.parent.size:
            limit = self.num_nodes + affordable
            size = self._next_size(self.parent.size, self.num_nodes + nodes, limit, NODE_ROW_BYTES)
            for name in _NODE_FIELDS:
                setattr(self, name, _grown(getattr(self, name), size))
        if self.num_edges_used + edges > self.action.size:
            limit = self.num_edges_used + int(min(affordable * edges_per_node, sys.maxsize))
            size = self._next_size(self.action.size, self.num_edges_used + edges, limit, EDGE_ROW_BYTES)
            for name in _EDGE_FIELDS:
                setattr(self, name, _grown(getattr(self, name), size))

    def _next_size(self, size: int, needed: int, limit: int, row_bytes: int) -> int:
        """The new length of an array group of length ``size`` that must hold ``needed`` rows:
        double, but not past ``limit`` (what the budget pays for at the current mix of nodes),
        yet by at least `MIN_GROWTH` -- and never by more rows than the unspent budget pays
        for, so that `nbytes` stays within ``max_bytes`` (unless ``needed`` itself does not)."""
        grown = min(2 * size, max(limit, int(size * (1 + MIN_GROWTH))))
        if self.max_bytes is not None:
            grown = min(grown, size + max(0, self.max_bytes - self.nbytes) // row_bytes)
        return max(needed, grown)

    def add_expanded(
        self,
        states: Sequence[State],
        parents: np.ndarray,
        parent_edges: np.ndarray,
        logits: np.ndarray,
        values: np.ndarray,
    ) -> np.ndarray:
        """Create evaluated, non-terminal nodes (unvisited: the caller backs their values up).

        ``logits`` float32[L, A] are the masked policy logits, ``values`` float[L] the network
        values from each state's side to move.  A parent of -1 makes a root.  Returns the new
        node indices.
        """
        nodes = self._new_nodes(states, parents, parent_edges)
        self.reserve(0, int(np.count_nonzero(logits > LEGAL_LOGIT_THRESHOLD)))
        self.num_edges_used = _fill_children(self.arrays, nodes, logits, self.num_edges_used, LEGAL_LOGIT_THRESHOLD)
        self.raw_value[nodes] = values
        linked = parents >= 0
        same_player = self.to_play[nodes[linked]] == self.to_play[parents[linked]]
        self._link(nodes[linked], parent_edges[linked], 0.0, np.where(same_player, 1.0, -1.0))
        return nodes

    def add_terminal(self, states: Sequence[State], parents: np.ndarray, parent_edges: np.ndarray) -> np.ndarray:
        """Create terminal nodes: value 0, no children, q of the edge = outcome for the mover
        (0 for a claimable draw, `State.is_claimable_draw`, whose game has no outcome yet)."""
        nodes = self._new_nodes(states, parents, parent_edges)
        self.first_edge[nodes] = self.num_edges_used
        self.num_edges[nodes] = 0
        self.raw_value[nodes] = 0.0
        self.terminal[nodes] = True
        movers = self.to_play[parents].tolist()
        rewards = [s.reward_for(p) if s.is_terminal else 0.0 for s, p in zip(states, movers)]
        self._link(nodes, parent_edges, np.array(rewards, dtype=np.float64), 0.0)
        return nodes

    def import_subtree(self, source: Forest, root: int) -> int:
        """Copy ``source``'s subtree under ``root`` (with its statistics) in as a new root."""
        return self._place_subtree(source, root, in_place=False)

    def keep_subtree(self, root: int) -> None:
        """Make the subtree under ``root`` the whole forest, in place, with ``root`` as node 0.

        Unlike `import_subtree` into a new forest, no second copy of the arrays is made (each
        array is rewritten through one temporary), and the arrays keep their size for the next
        search; the states outside the subtree are let go.  Other `SearchTree` handles into
        this forest no longer mean anything.
        """
        self._place_subtree(self, root, in_place=True)

    def is_whole_tree(self, node: int) -> bool:
        """Whether ``node`` is the forest's one root (its tree is the whole forest)."""
        return bool(self.parent[node] < 0 and np.count_nonzero(self.parent[: self.num_nodes] < 0) == 1)

    def _place_subtree(self, source: Forest, root: int, in_place: bool) -> int:
        """Write ``source``'s subtree under ``root`` after this forest's rows, or over them from
        row 0 when ``in_place`` (``source`` is then this forest: everything is read from it
        before it is overwritten).  Returns the new index of ``root``."""
        order = _subtree_nodes(source.first_edge, source.num_edges, source.child, root)
        node_start, edge_start = (0, 0) if in_place else (self.num_nodes, self.num_edges_used)
        node_map = np.full(source.num_nodes, -1, dtype=np.int32)
        node_map[order] = np.arange(node_start, node_start + order.size, dtype=np.int32)
        edge_rows = source.edge_rows(order)
        counts = source.num_edges[order]
        total = edge_rows.size
        offsets = np.cumsum(counts) - counts
        edge_map = np.full(source.num_edges_used, -1, dtype=np.int32)
        edge_map[edge_rows] = np.arange(edge_start, edge_start + total, dtype=np.int32)
        states = [source.states[i] for i in order.tolist()]
        state_bytes = source.state_bytes * order.size // max(1, source.num_nodes)

        if not in_place:
            self.reserve(order.size, total)
        nodes = slice(node_start, node_start + order.size)
        edges = slice(edge_start, edge_start + total)
        parents = np.where(order == root, -1, node_map[source.parent[order]])
        parent_edges = np.where(order == root, -1, edge_map[source.parent_edge[order]])
        self.parent[nodes] = parents
        self.parent_edge[nodes] = parent_edges
        for name in ("num_edges", "node_visits", "value_sum", "raw_value", "terminal", "to_play"):
            getattr(self, name)[nodes] = getattr(source, name)[order]
        self.first_edge[nodes] = edge_start + offsets
        for name in ("action", "prior", "visits", "reward", "discount"):
            getattr(self, name)[edges] = getattr(source, name)[edge_rows]
        children = source.child[edge_rows]
        self.child[edges] = np.where(children >= 0, node_map[children], -1)
        self.pending[edges] = 0
        self.stamp[nodes] = -1
        if in_place:
            self.states, self.state_bytes = states, state_bytes
            self.num_nodes, self.num_edges_used = order.size, total
        else:
            self.states.extend(states)
            self.state_bytes += state_bytes
            self.num_nodes += order.size
            self.num_edges_used += total
        return int(node_map[root])

    def children(self, node: int) -> slice:
        """Edge rows of ``node``'s children."""
        start = int(self.first_edge[node])
        return slice(start, start + int(self.num_edges[node]))

    def edge_rows(self, nodes: np.ndarray) -> np.ndarray:
        """Edge rows of the children of all ``nodes``, node by node, in one array."""
        counts = self.num_edges[nodes]
        offsets = np.cumsum(counts) - counts
        return np.repeat(self.first_edge[nodes] - offsets, counts) + np.arange(int(counts.sum()))

    def _new_nodes(self, states: Sequence[State], parents: np.ndarray, parent_edges: np.ndarray) -> np.ndarray:
        self.reserve(len(states), 0)
        nodes = np.arange(self.num_nodes, self.num_nodes + len(states), dtype=np.int32)
        self.parent[nodes] = parents
        self.parent_edge[nodes] = parent_edges
        self.node_visits[nodes] = 0
        self.value_sum[nodes] = 0.0
        self.terminal[nodes] = False
        self.stamp[nodes] = -1
        self.to_play[nodes] = [s.to_play for s in states]
        if states:  # one sample per batch: the states of a batch are alike, and measuring takes time
            parent = self.states[parents[0]] if parents[0] >= 0 else None
            self.state_bytes += owned_bytes(states[0], parent) * len(states)
        self.states.extend(states)
        self.num_nodes += len(states)
        return nodes

    def _link(self, nodes: np.ndarray, parent_edges: np.ndarray, rewards: np.ndarray | float,
              discounts: np.ndarray | float) -> None:
        self.child[parent_edges] = nodes
        self.reward[parent_edges] = rewards
        self.discount[parent_edges] = discounts


class SearchTree:
    """A searched tree seen from one of its nodes; pass it to the next search to reuse it.

    Cheap to hold and to advance: it only references the finished search's forest.  A later
    search from a subtree copies it into its own forest and leaves this one as it is; a later
    search from the root of a forest that holds only this tree grows the forest in place, and
    this handle then sees the grown tree.
    """

    def __init__(self, forest: Forest, node: int) -> None:
        self.forest = forest
        self.node = node

    @property
    def root_state(self) -> State:
        return self.forest.states[self.node]

    @property
    def visits(self) -> int:
        """Visits of the root node (1 for a freshly evaluated position)."""
        return int(self.forest.node_visits[self.node])

    def child_visits(self) -> dict[int, int]:
        """Visits of each searched action from the root, inherited ones included."""
        forest = self.forest
        edges = forest.children(self.node)
        return {int(a): int(n) for a, n in zip(forest.action[edges], forest.visits[edges]) if n > 0}

    def depth(self) -> int:
        """Plies from the root to the deepest node below it (UCI's ``seldepth``; 0 for a root
        with no child expanded)."""
        forest = self.forest
        level, plies = np.array([self.node]), 0
        while True:
            children = forest.child[forest.edge_rows(level)]
            level = children[children >= 0]
            if level.size == 0:
                return plies
            plies += 1

    def policy_action(self) -> int:
        """The root's legal action of highest prior: the network's own choice there."""
        forest = self.forest
        edges = forest.children(self.node)
        return int(forest.action[edges][int(forest.prior[edges].argmax())])

    def principal_variation(self, first: int | None = None) -> list[int]:
        """The most-visited line from the root; with ``first``, the line that starts with it.

        The line stops where a node has no visited child (or at a terminal node).
        """
        forest = self.forest
        node = self.node
        line: list[int] = []
        while node >= 0 and forest.num_edges[node] > 0:
            edges = forest.children(node)
            if first is not None and not line:
                found = np.flatnonzero(forest.action[edges] == first)
                if found.size == 0:
                    return [first]
                row = edges.start + int(found[0])
            else:
                row = edges.start + int(np.argmax(forest.visits[edges]))
                if forest.visits[row] == 0:
                    break
            line.append(int(forest.action[row]))
            node = int(forest.child[row])
        return line

    def line_visits(self, actions: Iterable[int]) -> list[int]:
        """Visits of each move of ``actions`` played from the root (a principal variation's:
        KataGo's ``pvVisits``), 0 from the first move the search did not follow."""
        forest = self.forest
        node, visits = self.node, []
        for action in actions:
            row = -1
            if node >= 0 and forest.num_edges[node] > 0:
                edges = forest.children(node)
                found = np.flatnonzero(forest.action[edges] == action)
                row = edges.start + int(found[0]) if found.size else -1
            visits.append(int(forest.visits[row]) if row >= 0 else 0)
            node = int(forest.child[row]) if row >= 0 else -1
        return visits

    def advance(self, actions: Iterable[int]) -> SearchTree | None:
        """The subtree after playing ``actions`` from the root, or None if it was not searched."""
        node = self.node
        forest = self.forest
        for action in actions:
            edges = forest.children(node)
            found = np.flatnonzero(forest.action[edges] == action)
            if found.size == 0 or forest.child[edges.start + found[0]] < 0:
                return None
            node = int(forest.child[edges.start + found[0]])
        if forest.terminal[node]:
            return None
        return SearchTree(forest, node)

    def detached(self) -> SearchTree:
        """This subtree as the whole of its forest (`Forest.keep_subtree`), so that the next
        search continues in the forest instead of copying the subtree into a new one (which
        would hold both trees in memory for a while).  For the forest's only user: every other
        handle into the forest becomes meaningless."""
        if self.forest.is_whole_tree(self.node):
            return self
        self.forest.keep_subtree(self.node)
        return SearchTree(self.forest, 0)


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size, dtype=array.dtype)
    out[: array.size] = array
    return out


@njit(cache=True)
def _subtree_nodes(first_edge: np.ndarray, num_edges: np.ndarray, child: np.ndarray, root: int) -> np.ndarray:
    """Nodes of the subtree under ``root`` in breadth-first order (root first)."""
    order = [root]
    head = 0
    while head < len(order):
        node = order[head]
        head += 1
        for e in range(first_edge[node], first_edge[node] + num_edges[node]):
            if child[e] >= 0:
                order.append(child[e])
    return np.array(order, dtype=np.int32)


@njit(cache=True)
def _fill_children(tree: TreeArrays, nodes: np.ndarray, logits: np.ndarray, start: int, threshold: float) -> int:
    """Give each new node one unvisited edge per legal action, from edge row ``start`` on.

    Legal actions are those whose logit is above ``threshold`` (`LEGAL_LOGIT_THRESHOLD`).
    Returns the first free edge row.
    """
    e = start
    for i in range(nodes.size):
        node = nodes[i]
        tree.first_edge[node] = e
        for a in range(logits.shape[1]):
            if logits[i, a] > threshold:
                tree.action[e] = a
                tree.prior[e] = logits[i, a]
                tree.child[e] = -1
                tree.visits[e] = 0
                tree.pending[e] = 0
                tree.reward[e] = 0.0
                tree.discount[e] = 0.0
                e += 1
        tree.num_edges[node] = e - tree.first_edge[node]
    return e
