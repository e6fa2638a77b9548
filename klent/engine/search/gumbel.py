"""Gumbel MCTS (Danihelka et al. 2022) over many roots at once, with batched leaf evaluation.

One call searches every root state it is given.  Each loop iteration runs a wave of descents
from every root (`klent.engine.search.simulate.select_wave`), plays the leaf moves, evaluates all new
leaves of all roots in as few `Evaluator.evaluate` calls as ``max_batch`` allows, creates their
nodes and backs their values up.  The pieces:

- root: Gumbel-Top-k + Sequential Halving as a visit schedule (`seq_halving`), m = min(n,
  max_considered, legal actions), one Gumbel draw per root per search;
- interior: the deterministic full-Gumbel rule (`action_selection`), on completed Q-values
  with v_mix, min-max rescaling and sigma (`qtransforms`);
- tree: flat arrays per search (`tree`), reusable across moves through `SearchTree`;
- leaves: a position that ends the game, or that a player may claim as a draw
  (`State.is_claimable_draw`: chess's threefold repetition and fifty-move rule where the game
  leaves claims to an arbiter), is a terminal node, valued without a network call.  A claimable
  draw is one only where the search reaches it: the root's own game goes on, as its record did.

A root's result depends only on its own state, tree, Gumbel draw and the evaluator, never on
the other roots of the call: searching 64 roots together gives the same moves as searching them
one by one with the same generators (up to the evaluator's own batch-size rounding).

Budgets: ``limits.simulations`` is n per root.  With ``limits.time``, the search first runs
the round that visits each considered action once (it is the same for every n), measures it,
and plans n from the time left (90% of it, at most ``limits.simulations`` or
`MAX_PLANNED_SIMULATIONS`); at the start of each later phase it plans the rest again from the
rate so far, so that Sequential Halving runs to its end within the time.  The time
budget, the stop flag and ``limits.memory`` (room in the tree for one more batch of nodes,
`Forest.has_room`) are checked before every network batch.  When stopped early the
result is built from what was backed up: the action is the best g + logits + sigma(completed Q)
among the actions most visited so far (with no simulation at all, that is the Gumbel-Top-1
action, i.e. the policy's argmax when the Gumbel scale is 0); the root position itself is
always evaluated first, even when the stop flag is already set.

Tree reuse copies the subtree to continue from into the new search's forest and drops the
search's references to the old one; a tree that is the whole of its forest (the same position
again, or a subtree `SearchTree.detached` by its owner) is continued in place instead, so
that only one tree is ever in memory (`klent.engine.player.Player` detaches its tree).

Loading the compiled kernels takes a moment at their first call; `warm_up` pays it outside
any time budget (a `klent.engine.player.Player` calls it when it is made).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np

from klent.engine.games.base import Game, State
from klent.engine.games.countup import CountUpGame
from klent.engine.network import Evaluation, Evaluator, apply_legal_mask, softmax, state_values
from klent.engine.search.action_selection import final_action
from klent.engine.search.limits import Clock, SearchLimits
from klent.engine.search.qtransforms import RESCALE_EPSILON, completed_q, improved_policy, sigma_q
from klent.engine.search.result import SearchResult
from klent.engine.search.seq_halving import considered_visits, num_considered, phase_survivors
from klent.engine.search.simulate import backup_all, children_q, release_all, select_wave
from klent.engine.search.tree import Forest, SearchTree

MAX_PLANNED_SIMULATIONS = 1_000_000
INITIAL_NODES = 1024  # nodes per root allocated before the search starts
TIME_PLANNING_MARGIN = 0.9


@dataclass(frozen=True)
class GumbelConfig:
    """Parameters of the search (the budget is in `SearchLimits`).

    ``gumbel_scale`` multiplies the root Gumbel noise: 1 in self-play (sampling without
    replacement), 0 or 1 at play time.  ``wave_size`` is the most descents per root before
    their leaves are evaluated (larger batches, slightly staler statistics); ``max_batch`` caps
    the states per evaluator call, which bounds how late a stop flag is noticed; the default of
    64 is meant for a CPU, raise it on a GPU, where larger batches pay.  ``rescale_floor`` is
    the smallest span of a node's completed Q that the min-max rescaling divides by
    (`qtransforms`: mctx's 1e-8 by default, as in training).
    """

    max_considered: int = 16
    gumbel_scale: float = 1.0
    c_visit: float = 50.0
    c_scale: float = 1.0
    rescale_floor: float = RESCALE_EPSILON
    wave_size: int = 32
    max_batch: int = 64

    def __post_init__(self) -> None:
        if self.max_considered < 1 or self.wave_size < 1 or self.max_batch < 1:
            raise ValueError("max_considered, wave_size and max_batch must be >= 1")
        if not self.rescale_floor > 0:  # the rescaling divides by it
            raise ValueError(f"rescale_floor must be > 0, got {self.rescale_floor}")


Rng = np.random.Generator | Sequence[np.random.Generator] | None
Trees = SearchTree | None | Sequence[SearchTree | None]


@overload
def search(root_states: State, evaluator: Evaluator, limits: SearchLimits, *,
           config: GumbelConfig = ..., rng: Rng = ..., trees: Trees = ...) -> SearchResult: ...


@overload
def search(root_states: Sequence[State], evaluator: Evaluator, limits: SearchLimits, *,
           config: GumbelConfig = ..., rng: Rng = ..., trees: Trees = ...) -> list[SearchResult]: ...


def search(
    root_states: State | Sequence[State],
    evaluator: Evaluator,
    limits: SearchLimits,
    *,
    config: GumbelConfig = GumbelConfig(),
    rng: Rng = None,
    trees: Trees = None,
) -> SearchResult | list[SearchResult]:
    """Search one state (returns a `SearchResult`) or many (returns a list, in order).

    ``rng``: one generator shared by the roots in order, one per root, or None for fresh
    entropy; the search is deterministic given the generators (and the evaluator).  ``trees``:
    per root, a `SearchTree` from an earlier result advanced to this root's position
    (``result.tree.advance(moves_played)``), or None to start afresh; the tree keeps its
    statistics and the Gumbel noise is drawn anew.  Terminal roots raise ValueError.
    """
    single = isinstance(root_states, State)
    states = [root_states] if isinstance(root_states, State) else list(root_states)
    tree_list = _per_root(trees, len(states), "trees")
    del trees  # `_Search` empties tree_list once the subtrees are copied: the old forests may go
    rngs = _generators(rng, len(states))
    if not states:
        return []
    results = _Search(states, evaluator, limits, config, rngs, tree_list).run()
    return results[0] if single else results


class _Search:
    """The state of one `search` call."""

    def __init__(
        self,
        states: list[State],
        evaluator: Evaluator,
        limits: SearchLimits,
        config: GumbelConfig,
        rngs: list[np.random.Generator],
        trees: list[SearchTree | None],
    ) -> None:
        self.evaluator = evaluator
        self.limits = limits
        self.config = config
        self.clock = Clock(limits)
        self.num_actions = states[0].game.num_actions
        self.forest = _continued_forest(trees) or Forest()
        self.forest.max_bytes = limits.memory
        self.roots = self._make_roots(states, trees)
        forest = self.forest
        # Room for the search, guessing each node has as many legal moves as its root; big or
        # open-ended budgets grow the arrays as they go instead of allocating them up front.
        planned = min(limits.simulations or INITIAL_NODES, INITIAL_NODES, forest.affordable_nodes() // self.roots.size)
        forest.reserve(self.roots.size * planned, int(forest.num_edges[self.roots].sum()) * planned)
        # Per-search data of the root edges, root r's from root_offset[r] on.
        legal = forest.num_edges[self.roots]
        self.root_offset = np.cumsum(legal) - legal
        root_edges = forest.edge_rows(self.roots)
        self.gumbel = np.concatenate([
            config.gumbel_scale * generator.gumbel(size=self.num_actions)[forest.action[forest.children(root)]]
            for root, generator in zip(self.roots.tolist(), rngs)
        ])
        self.base_visits = forest.visits[root_edges]
        self.considered = np.array([num_considered(limits.simulations, int(k), config.max_considered) for k in legal])
        # With a time budget n is planned from the time (at most ``limits.simulations``), after
        # the first round and again at each phase: a schedule planned for more simulations than
        # the time allows would be cut off in its first phases and never halve.
        self.timed = limits.time is not None
        self.max_simulations = MAX_PLANNED_SIMULATIONS if limits.simulations is None else limits.simulations
        self.sims_total = self.considered.copy() if self.timed else np.full(len(states), limits.simulations)
        self.schedules = [considered_visits(int(m), int(n)) for m, n in zip(self.considered, self.sims_total)]
        self._schedule()
        self.sims_done = np.zeros(len(states), dtype=np.int64)
        self.planned_at = np.full(len(states), -1, dtype=np.int64)  # simulation of each root's last plan
        self.run_start = 0.0

    def run(self) -> list[SearchResult]:
        capacity = self.roots.size * self.config.wave_size
        out_root = np.empty(capacity, dtype=np.int64)
        out_node = np.empty(capacity, dtype=np.int32)
        out_edge = np.empty(capacity, dtype=np.int32)
        self.run_start = self.clock.elapsed()
        while True:
            if self.timed:
                self._plan()
            if (self.sims_done >= self.sims_total).all() or self._must_stop():
                break
            count = select_wave(
                self.forest.arrays, self.roots, self.root_offset, self.gumbel, self.base_visits, self.sims_done,
                self.sims_total, self.targets, self.phase_start, self.schedule_offset,
                self.config.wave_size, self.config.c_visit, self.config.c_scale, self.config.rescale_floor,
                out_root, out_node, out_edge,
            )
            if not self._expand(out_root[:count], out_node[:count], out_edge[:count]):
                break
        return [self._result(r) for r in range(self.roots.size)]

    def _make_roots(self, states: list[State], trees: list[SearchTree | None]) -> np.ndarray:
        roots = np.full(len(states), -1, dtype=np.int32)
        fresh: list[int] = []
        for i, (state, tree) in enumerate(zip(states, trees)):
            if state.is_terminal:
                raise ValueError("cannot search from a terminal position")
            if tree is None:
                fresh.append(i)
                continue
            _check_tree(tree, state)
            if tree.forest is self.forest:  # continued in place (`_continued_forest`)
                roots[i] = tree.node
            else:
                roots[i] = self.forest.import_subtree(tree.forest, tree.node)
            trees[i] = None  # the old forest is no longer needed here
        for chunk in _chunks(fresh, self.config.max_batch):
            chunk_states = [states[i] for i in chunk]
            logits, values = self._evaluate(chunk_states)
            no_parent = np.full(len(chunk), -1, dtype=np.int32)
            nodes = self.forest.add_expanded(chunk_states, no_parent, no_parent, logits, values)
            backup_all(self.forest.arrays, nodes, values)
            roots[chunk] = nodes
        return roots

    def _schedule(self) -> None:
        """Concatenate every root's Sequential Halving schedule for the wave kernel."""
        self.targets = np.concatenate([s[0] for s in self.schedules])
        self.phase_start = np.concatenate([s[1] for s in self.schedules])
        lengths = np.array([s[0].size for s in self.schedules], dtype=np.int64)
        self.schedule_offset = np.cumsum(lengths) - lengths

    def _plan(self) -> None:
        """Time budget: choose each root's n from its own rate so far and the time left, when
        its first round (one visit per considered action, the same whatever n) is done and
        again at the start of each phase, at most the simulations asked for.

        A re-plan keeps the schedule of the simulations done and rebuilds the phases from
        there on, so each phase is sized from the cost of the ones before it rather than from
        the first round alone (whose batch may cost more or less per simulation than later ones).
        """
        changed = False
        elapsed = self.clock.elapsed() - self.run_start
        remaining = max(0.0, self.clock.remaining()) * TIME_PLANNING_MARGIN
        for r in range(self.roots.size):
            t, total, m = int(self.sims_done[r]), int(self.sims_total[r]), int(self.considered[r])
            first = self.planned_at[r] < 0 and t >= total
            phase = t < total and t != self.planned_at[r] and self.phase_start[self.schedule_offset[r] + t]
            if not (first or phase):
                continue
            affordable = t + int(t / elapsed * remaining) if elapsed > 0 else self.max_simulations
            n = max(t, min(self.max_simulations, affordable))
            if first:
                self.schedules[r] = considered_visits(m, n)
            else:
                targets, starts = self.schedules[r]
                survivors = phase_survivors(m, starts, t)
                rest = considered_visits(m, n, start=t, considered=survivors, count=int(targets[t]))
                self.schedules[r] = (np.concatenate((targets[:t], rest[0])), np.concatenate((starts[:t], rest[1])))
            self.sims_total[r] = n
            self.planned_at[r] = t
            changed = True
        if changed:
            self._schedule()

    def _expand(self, leaf_root: np.ndarray, leaf_node: np.ndarray, leaf_edge: np.ndarray) -> bool:
        """Play, evaluate, create and back up the leaves of one wave.

        Returns False if the limits stopped the search before all leaves were evaluated (the
        rest are released and not counted as simulations).
        """
        forest = self.forest
        parents = forest.states
        actions = forest.action[leaf_edge].tolist()
        leaf_states = [parents[p].play(a) for p, a in zip(leaf_node.tolist(), actions)]
        ended_game = (s.is_terminal or s.is_claimable_draw for s in leaf_states)
        terminal = np.fromiter(ended_game, dtype=np.bool_, count=len(leaf_states))
        ended = np.flatnonzero(terminal)
        if ended.size:
            nodes = forest.add_terminal([leaf_states[i] for i in ended], leaf_node[ended], leaf_edge[ended])
            backup_all(forest.arrays, nodes, np.zeros(ended.size))
        pending = np.flatnonzero(~terminal)
        for start in range(0, pending.size, self.config.max_batch):
            if self._must_stop():
                rest = pending[start:]
                release_all(forest.arrays, leaf_node[rest], leaf_edge[rest])
                np.subtract.at(self.sims_done, leaf_root[rest], 1)
                return False
            chunk = pending[start : start + self.config.max_batch]
            chunk_states = [leaf_states[i] for i in chunk]
            logits, values = self._evaluate(chunk_states)
            nodes = forest.add_expanded(chunk_states, leaf_node[chunk], leaf_edge[chunk], logits, values)
            backup_all(forest.arrays, nodes, values)
        return True

    def _must_stop(self) -> bool:
        """The time is up, the stop flag is set, or the tree has no room for another batch."""
        return self.clock.must_stop() or not self.forest.has_room(self.config.max_batch)

    def _evaluate(self, states: list[State]) -> tuple[np.ndarray, np.ndarray]:
        evaluation = self.evaluator.evaluate(states)
        return evaluation.policy_logits, state_values(evaluation).astype(np.float64)

    def _result(self, r: int) -> SearchResult:
        forest = self.forest
        root = int(self.roots[r])
        edges = forest.children(root)
        prior_logits = forest.prior[edges]
        visits = forest.visits[edges]
        raw_value = forest.raw_value[root]
        c_visit, c_scale, floor = self.config.c_visit, self.config.c_scale, self.config.rescale_floor
        q, cq, sigma, improved = (np.empty(visits.size) for _ in range(4))
        children_q(forest.arrays, root, q)
        completed_q(prior_logits, visits, q, raw_value, cq)
        sigma_q(prior_logits, visits, q, raw_value, c_visit, c_scale, floor, sigma)
        improved_policy(prior_logits, visits, q, raw_value, c_visit, c_scale, floor, improved)
        own = slice(self.root_offset[r], self.root_offset[r] + visits.size)
        counts = visits - self.base_visits[own]
        choice = final_action(self.gumbel[own], prior_logits, sigma, counts)
        actions = forest.action[edges]

        def spread(values: np.ndarray, dtype: type) -> np.ndarray:
            out: np.ndarray = np.zeros(self.num_actions, dtype=dtype)
            out[actions] = values
            return out

        action = int(actions[choice])
        tree = SearchTree(forest, root)
        return SearchResult(
            action=action,
            improved_policy=spread(improved, np.float32),
            visits=spread(counts, np.int32),
            q=spread(cq, np.float32),
            value=float(forest.value_sum[root] / forest.node_visits[root]),
            pv=tree.principal_variation(first=action),
            simulations=int(self.sims_done[r]),
            elapsed=self.clock.elapsed(),
            prior=spread(softmax(prior_logits), np.float32),
            tree=tree,
        )


def _continued_forest(trees: list[SearchTree | None]) -> Forest | None:
    """The forest of the one tree given when that tree is the whole forest, as when an analysis
    searches the same position again or the caller detached the subtree it continues from
    (`SearchTree.detached`): the search then grows that forest in place.  Copying it
    (as for a subtree) would take time in proportion to the tree at every search of the
    analysis and hold two copies in memory for a while.  The earlier result's `SearchTree`
    then sees the grown tree."""
    if len(trees) != 1 or trees[0] is None or not trees[0].forest.is_whole_tree(trees[0].node):
        return None
    forest = trees[0].forest
    forest.pending[: forest.num_edges_used] = 0  # left over if the search that grew it failed
    return forest


def _per_root(value: Trees | Sequence[np.random.Generator], count: int, name: str) -> list:
    """A per-root list from one value for a single root or a sequence of ``count`` values."""
    if value is None or isinstance(value, SearchTree):
        if value is not None and count != 1:
            raise ValueError(f"{name}: give one entry per root state")
        return [value] * count
    values = list(value)
    if len(values) != count:
        raise ValueError(f"{name}: {len(values)} entries for {count} root states")
    return values


def _generators(rng: Rng, count: int) -> list[np.random.Generator]:
    if rng is None:
        return [np.random.default_rng() for _ in range(count)]
    if isinstance(rng, np.random.Generator):
        return [rng] * count
    return _per_root(rng, count, "rng")


def _check_tree(tree: SearchTree, state: State) -> None:
    """Refuse a tree whose root is not ``state`` (a tree not advanced by the moves played)."""
    root = tree.root_state
    if root is state:
        return
    game = state.game
    same = (
        root.game.name == game.name
        and root.to_play == state.to_play
        and root.move_number == state.move_number
        and np.array_equal(game.encode(root), game.encode(state))
    )
    if not same:
        raise ValueError("the search tree is rooted at another position; advance it by the moves played")


def _chunks(items: list[int], size: int) -> list[list[int]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class UniformEvaluator:
    """Uniform policy, zero values: enough to run every kernel once (`warm_up`), and the
    evaluator of a player whose game has no model yet (`klent.engine.player.Player.without_model`)."""

    def __init__(self, game: Game) -> None:
        self.game = game

    def evaluate(self, states: Sequence[State]) -> Evaluation:
        masks = np.stack([s.legal_mask() for s in states])
        zeros = np.zeros(masks.shape, dtype=np.float32)
        return Evaluation(*apply_legal_mask(zeros, zeros, masks), None)


@functools.cache
def warm_up() -> None:
    """Load the compiled kernels now rather than inside the first search's time budget.

    Numba loads each cached kernel at its first call (about 0.4 s for all of them, more when
    they must be compiled), which would otherwise be charged to the first move's clock.  Runs
    a tiny search once per process; later calls return at once.
    """
    game = CountUpGame(target=5, max_step=3)
    evaluator = UniformEvaluator(game)
    first = search(game.initial_state(), evaluator, SearchLimits(simulations=8), rng=np.random.default_rng(0))
    assert first.tree is not None
    child = first.tree.advance([first.action])  # a subtree, copied: the import kernel too
    assert child is not None
    again = search(child.root_state, evaluator, SearchLimits(simulations=2), trees=child)
    assert again.tree is not None
    nothing = np.empty(0, dtype=np.int32)
    release_all(again.tree.forest.arrays, nothing, nothing)
