"""The compiled parts of a simulation: descend to leaves (a wave per root), back values up.

A *wave* is a run of descents from one root made before any of them is evaluated, so that the
network sees one large batch.  Every edge a descent crosses gets a pending visit, which the
interior rule counts as a visit: the next descent through the same node prefers another child.
A wave ends

- after ``wave_size`` descents,
- at the start of a new Sequential Halving phase (which actions survive depends on the
  values of the phase before, so those must be backed up first),
- when a descent finds no leaf to claim: the root child the schedule asks for is still being
  expanded by this wave, or every child of an interior node is (below the root, a claimed
  leaf is skipped for the next best child; the colliding descent is undone and retried in
  the next wave), or
- when the root has made its n simulations.

A descent that reaches a terminal node backs its value up at once: it needs no network call.

The kernels are compiled by numba and cached on disk (``__pycache__``) per source file.
Numba does not notice when a function they call from another file changes: after editing
`qtransforms`, `action_selection` or `tree`, delete ``klent/engine/search/__pycache__`` (or touch
this file) so the cached kernels are rebuilt.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from klent.engine.search.action_selection import interior_action, root_action
from klent.engine.search.qtransforms import improved_policy, sigma_q
from klent.engine.search.tree import TreeArrays


@njit(cache=True)
def children_q(tree: TreeArrays, node: int, out: np.ndarray) -> None:
    """``out`` = q(s, a) = r + gamma * V(child) for the visited children of ``node``, else 0."""
    start = tree.first_edge[node]
    for i in range(out.size):
        e = start + i
        c = tree.child[e]
        out[i] = 0.0
        if tree.visits[e] > 0:
            out[i] = tree.reward[e] + tree.discount[e] * (tree.value_sum[c] / tree.node_visits[c])


@njit(cache=True)
def node_scores(tree: TreeArrays, node: int, is_root: bool, c_visit: float, c_scale: float, floor: float) -> np.ndarray:
    """sigma(completed Q) of a root's children, or pi' of an interior node's children.

    Computed from real (not pending) visits and cached until the next backup.
    """
    first = tree.first_edge[node]
    last = first + tree.num_edges[node]
    out = tree.cached[first:last]
    if tree.stamp[node] != tree.epoch[0]:
        q = tree.q_scratch[first:last]
        children_q(tree, node, q)
        prior = tree.prior[first:last]
        visits = tree.visits[first:last]
        if is_root:
            sigma_q(prior, visits, q, tree.raw_value[node], c_visit, c_scale, floor, out)
        else:
            improved_policy(prior, visits, q, tree.raw_value[node], c_visit, c_scale, floor, out)
        tree.stamp[node] = tree.epoch[0]
    return out


@njit(cache=True)
def backup(tree: TreeArrays, node: int, value: float) -> None:
    """Add ``value`` (from ``node``'s side to move) to ``node`` and every ancestor.

    Each edge on the way turns the value into its parent's view (r + gamma * value), counts a
    visit and releases the pending visit of the descent that came down it.
    """
    while True:
        tree.node_visits[node] += 1
        tree.value_sum[node] += value
        edge = tree.parent_edge[node]
        if edge < 0:
            return
        value = tree.reward[edge] + tree.discount[edge] * value
        tree.visits[edge] += 1
        tree.pending[edge] -= 1
        node = tree.parent[node]


@njit(cache=True)
def release(tree: TreeArrays, node: int, edge: int) -> None:
    """Undo the pending visits of a descent that stopped at ``edge`` below ``node``."""
    tree.pending[edge] -= 1
    while tree.parent_edge[node] >= 0:
        tree.pending[tree.parent_edge[node]] -= 1
        node = tree.parent[node]


LEAF, TERMINAL, BLOCKED = 0, 1, 2


@njit(cache=True)
def descend(
    tree: TreeArrays, node: int, edge: int, c_visit: float, c_scale: float, floor: float
) -> tuple[int, int, int]:
    """Go down from ``edge`` below ``node`` with the interior rule, adding pending visits.

    Returns ``(status, node, edge)``: LEAF with the unexpanded edge claimed for evaluation;
    TERMINAL when a terminal node was reached and already backed up; BLOCKED when no leaf
    could be claimed (the root child the schedule asks for, or every child of a node below,
    is already being expanded by this wave), the descent undone.
    """
    while True:
        tree.pending[edge] += 1
        child = tree.child[edge]
        if child < 0:
            if tree.pending[edge] > 1:  # only at the root: the schedule needs this child
                release(tree, node, edge)
                return BLOCKED, node, edge
            return LEAF, node, edge
        if tree.terminal[child]:
            backup(tree, child, 0.0)
            tree.epoch[0] += 1
            return TERMINAL, child, edge
        node = child
        first = tree.first_edge[node]
        last = first + tree.num_edges[node]
        pending = tree.pending[first:last]
        counts = tree.visits[first:last] + pending
        claimed = (tree.child[first:last] < 0) & (pending > 0)
        choice = interior_action(node_scores(tree, node, False, c_visit, c_scale, floor), counts, claimed)
        if choice < 0:
            release(tree, tree.parent[node], tree.parent_edge[node])
            return BLOCKED, node, edge
        edge = first + choice


@njit(cache=True)
def select_wave(
    tree: TreeArrays,
    roots: np.ndarray,
    root_offset: np.ndarray,
    gumbel: np.ndarray,
    base_visits: np.ndarray,
    sims_done: np.ndarray,
    sims_total: np.ndarray,
    targets: np.ndarray,
    phase_start: np.ndarray,
    schedule_offset: np.ndarray,
    wave_size: int,
    c_visit: float,
    c_scale: float,
    floor: float,
    out_root: np.ndarray,
    out_node: np.ndarray,
    out_edge: np.ndarray,
) -> int:
    """Run one wave of descents from every root; returns the number L of leaves claimed.

    Leaf i is the unexpanded edge ``out_edge[i]`` below node ``out_node[i]`` of root
    ``out_root[i]`` (an index into ``roots``).  ``sims_done[r]`` advances past every descent
    started (terminal ones are already backed up); the caller either backs the leaves up or
    releases them.  ``gumbel`` and ``base_visits`` hold the root edges only, root r's from
    ``root_offset[r]`` on: the Gumbel draw of this search and the visits the root edges had
    before it (from tree reuse), which the halving schedule must not count.  The schedule of root r is
    ``targets`` / ``phase_start`` from ``schedule_offset[r]``.
    """
    count = 0
    tree.epoch[0] += 1  # the last wave's backups changed the statistics
    for r in range(roots.size):
        root = roots[r]
        start = tree.first_edge[root]
        stop = start + tree.num_edges[root]
        own = slice(root_offset[r], root_offset[r] + tree.num_edges[root])
        t = sims_done[r]
        started = 0
        while t < sims_total[r] and started < wave_size:
            if started > 0 and phase_start[schedule_offset[r] + t]:
                break
            counts = tree.visits[start:stop] - base_visits[own] + tree.pending[start:stop]
            sigma = node_scores(tree, root, True, c_visit, c_scale, floor)
            target = targets[schedule_offset[r] + t]
            choice = root_action(gumbel[own], tree.prior[start:stop], sigma, counts, target)
            if choice < 0:
                raise RuntimeError("no root action has the visit count the halving schedule expects")
            status, node, edge = descend(tree, root, start + choice, c_visit, c_scale, floor)
            if status == BLOCKED:
                break
            if status == LEAF:
                out_root[count] = r
                out_node[count] = node
                out_edge[count] = edge
                count += 1
            t += 1
            started += 1
        sims_done[r] = t
    return count


@njit(cache=True)
def backup_all(tree: TreeArrays, nodes: np.ndarray, values: np.ndarray) -> None:
    """`backup` of each new node with its value."""
    for i in range(nodes.size):
        backup(tree, nodes[i], values[i])


@njit(cache=True)
def release_all(tree: TreeArrays, nodes: np.ndarray, edges: np.ndarray) -> None:
    """`release` of each unevaluated leaf (the search was stopped before its batch ran)."""
    for i in range(nodes.size):
        release(tree, nodes[i], edges[i])
