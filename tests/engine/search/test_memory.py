"""The search tree's memory budget: `PlayOptions.memory`, UCI ``Hash`` and
``klent gtp --memory`` bound the bytes the tree counts, searches and analyses stop growing it
there and still answer, and tree reuse across moves stays within the budget in one forest."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import klent.engine.games
from klent.engine.player import Decision, Player, PlayOptions
from klent.engine.search import SearchLimits, search
from klent.engine.search.gumbel import UniformEvaluator  # the tree depends on positions only
from klent.engine.search.state_memory import owned_bytes
from klent.protocols.gtp import GtpConfig, GtpEngine
from klent.protocols.uci import UciEngine

MB = 2**20
MANY = 100_000  # simulations no test budget affords: the memory ends each search


class Lines(io.StringIO):
    """Output that a protocol writes from its search thread and the test reads meanwhile."""

    def lines(self) -> list[str]:
        return self.getvalue().splitlines()


def wait_for(condition, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


@pytest.mark.parametrize("game_name", ["chess", "go9"])
def test_a_search_stops_growing_the_tree_at_its_memory(game_name: str) -> None:
    game = klent.engine.games.get(game_name)
    cap = 4 * MB
    player = Player(UniformEvaluator(game), PlayOptions(simulations=MANY, memory=cap), seed=0)
    decision = player.decide()
    forest = player._movers["search"].tree.forest
    assert 0 < decision.simulations < MANY
    assert 0.8 * cap <= forest.nbytes <= cap  # full, and not past the budget
    assert decision.move is not None and game.initial_state().legal_mask()[decision.action]
    assert decision.top_moves and decision.visits == forest.num_nodes  # one visit per node, the root included


def test_a_tree_without_a_budget_grows_with_its_simulations() -> None:
    game = klent.engine.games.get("go9")
    result = search(game.initial_state(), UniformEvaluator(game), SearchLimits(simulations=400))
    assert result.simulations == 400 and result.tree.forest.max_bytes is None


@pytest.mark.parametrize("game_name", ["chess", "go9"])
def test_the_tree_counts_what_its_positions_allocate(game_name: str) -> None:
    """`owned_bytes` against tracemalloc for positions made as a search makes them: children
    of kept parents, legal masks computed."""
    game = klent.engine.games.get(game_name)
    rng = np.random.default_rng(0)
    parents = [game.initial_state()]
    for _ in range(6):
        state = parents[-1]
        parents.append(state.play(int(rng.choice(np.flatnonzero(state.legal_mask())))))
    tracemalloc.start()
    children, counted = [], 0
    for i in range(300):
        parent = parents[i % len(parents)]
        child = parent.play(int(rng.choice(np.flatnonzero(parent.legal_mask()))))
        child.legal_mask()
        children.append(child)
        counted += owned_bytes(child, parent)
    traced = tracemalloc.get_traced_memory()[0] - sys.getsizeof(children)
    tracemalloc.stop()
    assert 0.9 * traced <= counted <= 1.25 * traced  # the overhead per object errs on the safe side


def test_tree_reuse_across_moves_stays_in_one_forest_within_the_budget() -> None:
    game = klent.engine.games.get("go9")
    cap = 3 * MB
    player = Player(UniformEvaluator(game), PlayOptions(simulations=MANY, memory=cap), seed=0)
    first = player.decide()
    forest = player._movers["search"].tree.forest
    assert first.simulations < MANY
    player.play(first.action)
    inherited = player._movers["search"].reusable(player.actions)
    assert inherited is not None and inherited.visits > 1
    second = player.decide()
    assert player._movers["search"].tree.forest is forest  # continued in place: never two trees
    assert player._movers["search"].tree.visits == inherited.visits + second.simulations
    assert 0 < second.simulations and forest.nbytes <= cap
    assert player.state.legal_mask()[second.action]


def test_uci_hash_sets_the_memory_of_the_tree(untrained_model) -> None:
    out = Lines()
    uci = UciEngine(out, model=untrained_model("chess"))
    try:
        for command in ("setoption name Hash value 2", "setoption name Threads value 1", "position startpos",
                        f"go nodes {MANY}"):
            uci.handle(command)
        wait_for(lambda: any(line.startswith("bestmove") for line in out.lines()))
        small = uci._player._movers["search"].tree.forest
        assert small.max_bytes == 2 * MB and 0.7 * 2 * MB <= small.nbytes <= 2 * MB
        nodes = [int(m) for m in re.findall(r" nodes (\d+)", out.getvalue())]
        assert 0 < nodes[-1] < MANY
        uci.handle("setoption name Hash value 4")
        uci.handle(f"go nodes {MANY}")  # the same position: the tree grows on to the new size
        wait_for(lambda: sum(line.startswith("bestmove") for line in out.lines()) == 2)
        large = uci._player._movers["search"].tree.forest
        assert large.max_bytes == 4 * MB and 2 * MB < large.nbytes <= 4 * MB
    finally:
        uci.shutdown()


def test_gtp_analysis_ends_when_the_tree_holds_its_memory(untrained_model) -> None:
    cap = 2 * MB
    out = Lines()
    gtp = GtpEngine(GtpConfig(model=Path(untrained_model("go9")), options=PlayOptions(simulations=16, memory=cap),
                              seed=1), out=out)
    player = gtp.player(gtp.state)
    analysed = player.analyse
    finished = threading.Event()

    def analyse(*args, **kwargs) -> Decision:
        try:
            return analysed(*args, **kwargs)
        finally:
            finished.set()

    player.analyse = analyse  # type: ignore[method-assign]
    thread = threading.Thread(target=gtp.stream_analyze, args=("", ["b", "1"], "kata"))
    thread.start()
    try:
        # Without input the analysis would run on: it ends by itself, with the tree full.
        assert finished.wait(30), "the analysis ran past the tree's memory"
        assert not gtp._input_ready.is_set()
        tree = player._movers["search"].tree
        assert tree.forest.max_bytes == cap and 0.7 * cap <= tree.forest.nbytes <= cap
        last = [line for line in out.lines() if line.startswith("info")][-1]
        shown = sum(int(v) for v in re.findall(r"visits (\d+)", last))
        assert shown == tree.visits - 1  # the last line shows the whole, full tree
    finally:
        gtp._input_ready.set()  # input arrives: the command ends
        thread.join(10)
    assert not thread.is_alive() and out.getvalue().endswith("\n\n")


def test_klent_gtp_refuses_a_memory_below_one_mb() -> None:
    done = subprocess.run([sys.executable, "-m", "klent", "gtp", "--memory", "0"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode != 0 and "--memory must be >= 1 MB" in done.stderr
