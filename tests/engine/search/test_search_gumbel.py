"""Gumbel MCTS: finds the best move with an oracle, signs and terminals, budgets, batching, reuse."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from search_fakes import PathState, ScriptedEvaluator, TreeGame, WideGame

import klent.engine.games
from klent.engine.games.base import State
from klent.engine.network import Evaluation
from klent.engine.search import GumbelConfig, SearchLimits, SearchResult, search
from klent.engine.search.gumbel import warm_up
from klent.engine.search.tree import Forest

PLAY = GumbelConfig(gumbel_scale=0.0)


def check_forest(forest: Forest) -> None:
    """Every visit is accounted for: a node's visits = its own expansion + its children's."""
    n = forest.num_nodes
    assert not forest.pending[: forest.num_edges_used].any()
    for node in range(n):
        edges = forest.children(node)
        if forest.terminal[node]:
            continue
        assert forest.node_visits[node] == 1 + forest.visits[edges].sum()
        for e in range(edges.start, edges.stop):
            child = forest.child[e]
            assert (child < 0) == (forest.visits[e] == 0)
            if child >= 0:
                assert forest.node_visits[child] == forest.visits[e]


def check_result(result: SearchResult, state: State) -> None:
    legal = state.legal_mask()
    assert legal[result.action]
    assert result.pv[0] == result.action
    assert result.visits.sum() == result.simulations
    assert not result.visits[~legal].any()
    assert result.improved_policy.sum() == pytest.approx(1.0, abs=1e-5)
    assert not result.improved_policy[~legal].any()
    assert -1.0 <= result.value <= 1.0
    check_forest(result.tree.forest)


# --- finding the best move with an exact-value oracle --------------------------------------


def countup_values(target: int, max_step: int) -> np.ndarray:
    """Exact Q[count, action] of count-up for the player to move, by backward induction."""
    q = np.zeros((target, max_step))
    v = np.zeros(target + max_step)
    for count in range(target - 1, -1, -1):
        for a in range(max_step):
            after = count + a + 1
            q[count, a] = 1.0 if after >= target else -v[after]
        v[count] = q[count].max()
    return q


def test_countup_oracle_with_misleading_priors() -> None:
    game = klent.engine.games.get("countup")
    exact = countup_values(game.target, game.max_step)
    # The prior prefers the worse move everywhere; the action values are exact.
    evaluator = ScriptedEvaluator(game, logits=lambda s: -3.0 * exact[s.count], action_values=lambda s: exact[s.count])
    checked = 0
    for count in range(game.target):
        q = exact[count]
        if q.max() == q.min():
            continue  # both moves lose: no best move to find
        state = game.initial_state()
        for _ in range(count):
            state = state.play(0)
        for seed in range(3):
            result = search(state, evaluator, SearchLimits(simulations=16), rng=np.random.default_rng(seed))
            best = int(q.argmax())
            assert result.action == best
            assert result.improved_policy[best] > result.prior[best]
            check_result(result, state)
            checked += 1
    assert checked >= 9


def trap_game() -> TreeGame:
    """Player 0 has a trap (a0: the reply r1 wins for player 1), a draw (a1) and a forced win
    (a2: whatever player 1 replies, player 0 has a winning move)."""
    legal = {(): 3, (0,): 2, (2,): 2, (2, 0): 2, (2, 1): 2}
    outcomes = {(0, 0): 1.0, (0, 1): -1.0, (1,): 0.0,
                (2, 0, 0): 1.0, (2, 0, 1): -1.0, (2, 1, 0): -1.0, (2, 1, 1): 1.0}
    return TreeGame(legal, outcomes)


def exact_q(game: TreeGame, state: PathState) -> np.ndarray:
    """Exact action values for the player to move (0 for illegal actions)."""
    q = np.zeros(game.num_actions)
    for a in state.legal_actions():
        child = state.play(a)
        q[a] = child.reward_for(state.to_play) if child.is_terminal else -minimax(game, child)
    return q


def minimax(game: TreeGame, state: PathState) -> float:
    """Exact value of a non-terminal position for the player to move."""
    return float(exact_q(game, state)[state.legal_actions()].max())


ROOT_PRIOR = [3.0, 1.0, 0.0]  # the trap first, then the draw, the win last
MISLEADING = {(0,): [3.0, 0.0], (2,): [0.0, 0.0], (2, 0): [0.0, 3.0], (2, 1): [3.0, 0.0]}
INFORMED = {(0,): [0.0, 3.0], (2,): [0.0, 0.0], (2, 0): [3.0, 0.0], (2, 1): [0.0, 3.0]}


@pytest.mark.parametrize(
    ("with_value_head", "interior_priors"),
    [(True, MISLEADING), (True, INFORMED), (False, INFORMED)],
)
def test_constructed_tree_oracle_with_misleading_root_prior(with_value_head: bool, interior_priors: dict) -> None:
    """Exact values: the value head is minimax, or (without one) V = sum pi Q with exact Q and
    a policy that puts 95% on the best replies below the root, so that V is nearly exact.  (With
    misleading interior priors and no value head, V = sum pi Q itself is wrong, and 16
    simulations are not enough to repair it.)"""
    game = trap_game()
    priors = {(): ROOT_PRIOR, **interior_priors}
    evaluator = ScriptedEvaluator(
        game,
        logits=lambda s: np.array(priors[s.path] + [0.0] * (game.num_actions - len(priors[s.path]))),
        action_values=lambda s: exact_q(game, s),
        value=(lambda s: minimax(game, s)) if with_value_head else None,
    )
    root = game.initial_state()
    for seed in range(5):
        result = search(root, evaluator, SearchLimits(simulations=16), rng=np.random.default_rng(seed))
        assert result.action == 2
        assert result.improved_policy[2] > result.prior[2]
        check_result(result, root)


# --- terminals and negamax signs -----------------------------------------------------------


def sign_game() -> tuple[TreeGame, dict]:
    """Root (player 0): a0 wins at once, a1 and a2 lead to player 1 nodes with known values."""
    legal = {(): 3, (1,): 1, (2,): 1, (2, 0): 1}
    outcomes = {(0,): 1.0, (1, 0): 0.0, (2, 0, 0): 0.0}
    values = {(): 0.0, (1,): 0.5, (2,): 0.5, (2, 0): 0.25}
    return TreeGame(legal, outcomes), values


def test_terminal_rewards_and_negamax_signs() -> None:
    game, values = sign_game()
    evaluator = ScriptedEvaluator(game, logits=lambda s: np.array([0.0, 0.0, 1.0]), value=lambda s: values[s.path])
    # m = 3, n = 5: one visit each, then the best two (a0, then a2 on its prior) get another.
    result = search(game.initial_state(), evaluator, SearchLimits(simulations=5), config=PLAY,
                    rng=np.random.default_rng(0))
    assert result.visits.tolist() == [2, 1, 2]
    # a0: terminal, q = reward for the mover = +1, revisited without an evaluation.
    # a1: q = -v(a1) = -0.5.  a2: child value mean(0.5, -0.25) from player 1's view -> -0.125.
    assert result.q == pytest.approx([1.0, -0.5, -0.125])
    # root: v_hat 0 and the five backed-up values 1, -0.5, -0.5, 1, 0.25.
    assert result.value == pytest.approx(1.25 / 6)
    assert result.action == 0
    assert sorted(s.path for s in evaluator.seen) == [(), (1,), (2,), (2, 0)]
    check_result(result, game.initial_state())


def test_terminal_reward_is_from_the_movers_view() -> None:
    # Player 1 to move at (0,): its only move ends the game with player 0 winning.
    game = TreeGame({(): 1, (0,): 2}, {(0, 0): 1.0, (0, 1): 0.0})
    evaluator = ScriptedEvaluator(game, value=lambda s: 0.0)
    state = game.initial_state().play(0)
    result = search(state, evaluator, SearchLimits(simulations=4), config=PLAY, rng=np.random.default_rng(0))
    assert result.q[:2] == pytest.approx([-1.0, 0.0])
    assert result.action == 1


def test_terminal_root_is_refused() -> None:
    game, values = sign_game()
    evaluator = ScriptedEvaluator(game, value=lambda s: values[s.path])
    with pytest.raises(ValueError, match="terminal"):
        search(game.initial_state().play(0), evaluator, SearchLimits(simulations=4))


# --- batching -------------------------------------------------------------------------------


def pseudo_random_evaluator(game: WideGame, delay: float = 0.0) -> ScriptedEvaluator:
    """Fixed but irregular logits and values per position, so searches have something to find."""

    def draw(state: State) -> np.random.Generator:
        return np.random.default_rng(abs(hash(state.path)) % 2**32)

    return ScriptedEvaluator(
        game,
        logits=lambda s: draw(s).normal(size=game.num_actions),
        action_values=lambda s: np.tanh(draw(s).normal(size=game.num_actions)),
        delay=delay,
    )


def test_one_search_batches_its_leaves_without_duplicates() -> None:
    game = WideGame(num_actions=20, depth=8)
    evaluator = pseudo_random_evaluator(game)
    result = search(game.initial_state(), evaluator, SearchLimits(simulations=200), rng=np.random.default_rng(1))
    check_result(result, game.initial_state())
    paths = [s.path for s in evaluator.seen]
    assert len(paths) == len(set(paths)) == 201  # root + one new leaf per simulation
    assert len(evaluator.batches) <= 12
    assert max(evaluator.batches) >= 16


def test_max_batch_caps_the_evaluator_calls() -> None:
    game = WideGame(num_actions=20, depth=8)
    evaluator = pseudo_random_evaluator(game)
    roots = [game.initial_state().play(a) for a in range(4)]
    config = GumbelConfig(max_batch=8)
    search(roots, evaluator, SearchLimits(simulations=40), config=config, rng=np.random.default_rng(0))
    assert max(evaluator.batches) <= 8
    assert sum(evaluator.batches) == 4 * 41


def test_many_roots_match_one_by_one() -> None:
    game = WideGame(num_actions=20, depth=6)
    roots = [game.initial_state(), game.initial_state().play(3), game.initial_state().play(5).play(1)]
    limits = SearchLimits(simulations=48)
    together = search(roots, pseudo_random_evaluator(game), limits,
                      rng=[np.random.default_rng(seed) for seed in range(3)])
    for seed, (root, batched) in enumerate(zip(roots, together)):
        alone = search(root, pseudo_random_evaluator(game), limits, rng=np.random.default_rng(seed))
        assert batched.action == alone.action
        assert batched.pv == alone.pv
        np.testing.assert_array_equal(batched.visits, alone.visits)
        np.testing.assert_allclose(batched.q, alone.q)
        np.testing.assert_allclose(batched.improved_policy, alone.improved_policy)
        check_result(batched, root)


@settings(max_examples=30, deadline=None)
@given(
    actions=st.integers(1, 5),
    depth=st.integers(1, 4),
    simulations=st.integers(0, 120),
    wave_size=st.integers(1, 40),
    max_batch=st.integers(1, 70),
    roots=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_any_budget_and_batching_keeps_the_tree_consistent(
    actions: int, depth: int, simulations: int, wave_size: int, max_batch: int, roots: int, seed: int
) -> None:
    """Small games reach terminal positions often, exhaust subtrees and collide a lot."""
    game = WideGame(num_actions=actions, depth=depth)
    states = [game.initial_state()] * roots
    config = GumbelConfig(wave_size=wave_size, max_batch=max_batch)
    results = search(states, pseudo_random_evaluator(game), SearchLimits(simulations=simulations),
                     config=config, rng=np.random.default_rng(seed))
    for result in results:
        assert result.simulations == simulations
        check_result(result, game.initial_state())


def test_same_seed_same_search() -> None:
    game = WideGame(num_actions=20, depth=6)
    first, second = (
        search(game.initial_state(), pseudo_random_evaluator(game), SearchLimits(simulations=64),
               rng=np.random.default_rng(7))
        for _ in range(2)
    )
    assert first.action == second.action and first.pv == second.pv
    np.testing.assert_array_equal(first.visits, second.visits)


# --- budgets --------------------------------------------------------------------------------

BATCH_DELAY = 0.02
SLACK = 0.15  # bookkeeping of one batch on a loaded 2-core machine


@pytest.fixture(autouse=True)
def kernels_loaded() -> None:
    """The compiled kernels are loaded before a timed search starts, as a `Player` loads them
    when it is made; whichever test runs first must not charge their loading to its budget."""
    warm_up()


def test_time_budget_is_respected_within_one_batch() -> None:
    """The plan is made from the first round's cost and mended at each phase; a network that
    then slows down so much that one batch outlasts the budget (a loaded machine) makes any
    plan too long, and the clock stops the search within that one batch."""
    game = WideGame(num_actions=20, depth=8)
    evaluator = pseudo_random_evaluator(game, delay=BATCH_DELAY)
    first_call = evaluator.evaluate
    slow = 0.4  # longer than the whole budget

    def slower(states: Sequence[State]) -> Evaluation:
        evaluator.delay = BATCH_DELAY if len(evaluator.batches) < 2 else slow  # the root, the first round
        return first_call(states)

    evaluator.evaluate = slower  # type: ignore[method-assign]
    result = search(game.initial_state(), evaluator, SearchLimits(simulations=100_000, time=0.3),
                    rng=np.random.default_rng(0))
    assert 0.3 <= result.elapsed <= 0.3 + slow + SLACK
    assert 16 <= result.simulations < 100_000
    check_result(result, game.initial_state())


def test_a_timed_search_halves_to_the_end_whatever_its_simulation_cap() -> None:
    """With a time budget, n is planned from the time even under a cap far beyond it: a
    schedule planned for the cap would be cut off in its first phase, every considered move
    visited alike, and Sequential Halving would never choose."""
    game = WideGame(num_actions=20, depth=8)
    evaluator = pseudo_random_evaluator(game, delay=BATCH_DELAY)
    result = search(game.initial_state(), evaluator, SearchLimits(simulations=1_000_000, time=0.4),
                    rng=np.random.default_rng(0))
    assert result.elapsed <= 0.4 + BATCH_DELAY + SLACK
    visited = np.sort(result.visits[result.visits > 0])
    assert visited.size == 16  # m = max_considered
    assert visited[-1] >= 4 * visited[0], visited  # the last phase's two moves took most of it
    assert result.visits[result.action] == visited[-1]
    check_result(result, game.initial_state())


def test_a_cap_within_the_time_is_the_number_of_simulations() -> None:
    game = WideGame(num_actions=20, depth=8)
    result = search(game.initial_state(), pseudo_random_evaluator(game), SearchLimits(simulations=200, time=30),
                    rng=np.random.default_rng(0))
    assert result.simulations == 200


def test_time_only_budget_plans_the_simulations() -> None:
    game = WideGame(num_actions=20, depth=8)
    evaluator = pseudo_random_evaluator(game, delay=BATCH_DELAY)
    result = search(game.initial_state(), evaluator, SearchLimits(time=0.4), rng=np.random.default_rng(0))
    assert result.elapsed <= 0.4 + BATCH_DELAY + SLACK
    assert result.simulations > 16  # more than the measured first round
    check_result(result, game.initial_state())


def test_stop_flag_from_another_thread() -> None:
    game = WideGame(num_actions=20, depth=8)
    evaluator = pseudo_random_evaluator(game, delay=BATCH_DELAY)
    stop = threading.Event()
    timer = threading.Timer(0.2, stop.set)
    timer.start()
    start = time.perf_counter()
    result = search(game.initial_state(), evaluator, SearchLimits(simulations=100_000, stop=stop),
                    rng=np.random.default_rng(0))
    waited = time.perf_counter() - start
    timer.join()
    assert waited <= 0.2 + BATCH_DELAY + SLACK
    assert 0 < result.simulations < 100_000
    check_result(result, game.initial_state())


def test_stop_before_start_returns_the_policy_choice() -> None:
    game = WideGame(num_actions=20, depth=8)
    evaluator = pseudo_random_evaluator(game)
    stop = threading.Event()
    stop.set()
    root = game.initial_state()
    result = search(root, evaluator, SearchLimits(simulations=100, stop=stop), config=PLAY)
    assert result.simulations == 0
    assert evaluator.batches == [1]  # only the root
    assert result.action == int(np.argmax(result.prior))
    check_result(result, root)


# --- tree reuse -----------------------------------------------------------------------------


def test_tree_reuse_keeps_the_subtree_statistics() -> None:
    game = WideGame(num_actions=20, depth=8)
    evaluator = pseudo_random_evaluator(game)
    root = game.initial_state()
    first = search(root, evaluator, SearchLimits(simulations=100), rng=np.random.default_rng(2))
    assert len(first.pv) >= 2
    moves = first.pv[:2]
    tree = first.tree.advance(moves)
    assert tree is not None and tree.root_state.path == tuple(moves)
    old = first.tree.forest
    old_visits = old.visits[old.children(tree.node)].copy()
    assert tree.visits == 1 + old_visits.sum() >= 2

    state = root.play(moves[0]).play(moves[1])
    evaluator.seen.clear()
    second = search(state, evaluator, SearchLimits(simulations=16), rng=np.random.default_rng(3), trees=tree)
    assert state.path not in [s.path for s in evaluator.seen]  # the root was not re-evaluated
    assert second.simulations == second.visits.sum() == 16
    assert second.tree.visits == tree.visits + 16
    new = second.tree.forest
    new_visits = new.visits[new.children(second.tree.node)]
    assert (new_visits - old_visits).sum() == 16 and (new_visits >= old_visits).all()
    check_result(second, state)


def test_advance_into_unsearched_moves_gives_none() -> None:
    game = WideGame(num_actions=20, depth=8)
    result = search(game.initial_state(), pseudo_random_evaluator(game), SearchLimits(simulations=8))
    unvisited = int(np.flatnonzero(result.visits == 0)[0])
    assert result.tree.advance([unvisited]) is None


def test_a_tree_from_another_position_is_refused() -> None:
    game = WideGame(num_actions=20, depth=8)
    evaluator = pseudo_random_evaluator(game)
    result = search(game.initial_state(), evaluator, SearchLimits(simulations=32))
    tree = result.tree.advance([result.action])
    with pytest.raises(ValueError, match="another position"):
        search(game.initial_state().play((result.action + 1) % 20), evaluator, SearchLimits(simulations=8), trees=tree)


def test_tree_depth_and_policy_action_of_a_subtree() -> None:
    game = WideGame(num_actions=20, depth=8)
    result = search(game.initial_state(), pseudo_random_evaluator(game), SearchLimits(simulations=200),
                    rng=np.random.default_rng(4))
    tree = result.tree
    forest = tree.forest

    def plies(node: int) -> int:  # from the forest's root, by the parent links
        return 0 if forest.parent[node] < 0 else 1 + plies(int(forest.parent[node]))

    assert tree.depth() == max(plies(n) for n in range(forest.num_nodes)) >= len(result.pv)
    below = tree.advance(result.pv[:1])
    reachable = [n for n in range(forest.num_nodes) if below.node in _ancestors(forest, n)]
    assert below.depth() == max(plies(n) for n in reachable) - 1
    edges = forest.children(below.node)
    assert below.policy_action() == int(forest.action[edges][np.argmax(forest.prior[edges])])


def _ancestors(forest: Forest, node: int) -> list[int]:
    """``node`` and the nodes above it."""
    line = [node]
    while forest.parent[line[-1]] >= 0:
        line.append(int(forest.parent[line[-1]]))
    return line
