"""KaTrain's own engine client (PyPI ``katrain``, `katrain.core.engine.KataGoEngine`) on
`klent analysis`, without a window: a game loaded and analysed move by move with ownership and
policy, a move played, continuous analysis stopped, and a move of KaTrain's policy AI.  Every
query is KaTrain's, as it sends them (japanese rules, priorities, ``reportAnalysisWinratesAs``
BLACK, ``maxTime``, ``wideRootNoise``); the session fails on any error KaTrain logs.

Run as a script (``python katrain_session.py MODEL``) by `test_katrain.py`: Kivy, which KaTrain
imports, takes over Python's logging in the process that imports it, so it must not be imported
into a test runner's process.  Kivy reads its settings from the environment when first
imported, so they are set before KaTrain is imported; its home and KaTrain's user folder are
made temporary.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

_HOME = tempfile.mkdtemp(prefix="katrain-home-")
for _name in ("KIVY_NO_ARGS", "KIVY_NO_CONSOLELOG", "KIVY_NO_FILELOG"):
    os.environ[_name] = "1"
os.environ["KIVY_HOME"] = os.path.join(_HOME, "kivy")
os.environ["HOME"] = _HOME  # KaTrain's user folder

from katrain.core.ai import generate_ai_move  # noqa: E402  (Kivy's settings come first)
from katrain.core.base_katrain import KaTrainBase  # noqa: E402
from katrain.core.constants import AI_POLICY, OUTPUT_ERROR  # noqa: E402
from katrain.core.engine import KataGoEngine  # noqa: E402
from katrain.core.game import Game, KaTrainSGF  # noqa: E402
from pysgf import Move  # noqa: E402  (KaTrain's own moves)

SGF = "(;GM[1]FF[4]SZ[9]KM[7.5]RU[Japanese];B[ee];W[cc];B[gc];W[cg];B[gg];W[ec];B[dd];W[dc])"
TIMEOUT = 120.0


class Recorder(KaTrainBase):
    """KaTrain without its window: logs recorded, state updates and GUI calls ignored."""

    def __init__(self) -> None:
        self.logged: list[tuple[int, str]] = []
        super().__init__(force_package_config=True, debug_level=0)

    def log(self, message: Any, level: int = 0) -> None:
        self.logged.append((level, str(message)))

    def update_state(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def errors(self) -> list[str]:
        return [message for level, message in self.logged if level == OUTPUT_ERROR]


def wait(condition: Callable[[], bool], what: str, katrain: Recorder) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert not katrain.errors(), katrain.errors()
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def session(model: str) -> None:
    """The whole session on `klent analysis` with ``model``; an AssertionError says what failed."""
    katrain = Recorder()
    config = dict(katrain.config("engine"))
    command = f"exec {sys.executable} -m klent analysis --model {model} --threads 1 --seed 3"
    config.update(backend="custom", altcommand=command, max_visits=24, fast_visits=8, max_time=5.0,
                  wide_root_noise=0.04, _enable_ownership=True)
    engine = KataGoEngine(katrain, config)
    try:
        play_through(katrain, engine)
    finally:
        engine.shutdown(finish=False)


def play_through(katrain: Recorder, engine: KataGoEngine) -> None:
    game = Game(katrain, engine, move_tree=KaTrainSGF.parse_sgf(SGF))
    katrain.game = game
    nodes = game.root.nodes_in_tree
    assert len(nodes) == 9

    # Loading the game analyses every move, japanese rules and all (a warning, not an error).
    wait(lambda: all(node.analysis_complete for node in nodes), "the game's analysis", katrain)
    for node in nodes:
        assert len(node.ownership) == 81 and len(node.policy) == 82
        assert node.analysis["root"]["visits"] >= 24 and node.analysis["moves"]
        assert node.score is not None
        assert all("scoreLead" in move and "winrate" in move for move in node.analysis["moves"].values())
    assert any("area scoring" in message for _, message in katrain.logged)

    # A move played is analysed at once; its points lost come from the scores klent reports.
    game.set_current_node(nodes[-1])
    played = game.play(Move.from_gtp("B2", player="B"))
    wait(lambda: played.analysis_complete, "the new move's analysis", katrain)
    assert played.points_lost is not None

    # Continuous analysis, stopped as KaTrain's button stops it.
    game.analyze_extra("ponder")
    wait(lambda: played.root_visits > 24, "continuous analysis to go beyond the move's visits", katrain)
    game.analyze_extra("stop")
    wait(engine.is_idle, "the engine to be idle after stop", katrain)

    # KaTrain's policy AI plays White's move from klent's policy.
    move, node = generate_ai_move(game, AI_POLICY, katrain.config(f"ai/{AI_POLICY}"))
    assert move is not None and node is not None and move.player == "W"
    wait(lambda: node.analysis_complete, "the AI move's analysis", katrain)
    assert engine.check_alive() and not katrain.errors()


if __name__ == "__main__":
    session(sys.argv[1])
    print("the KaTrain session ended without an error")
