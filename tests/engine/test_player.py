"""The player facade: positions, tree reuse, reactive and search decisions, analyses, model
loading and model metadata, resigning."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import onnxruntime
import pytest

import klent.engine.games as games
from klent.cli import main as klent_main
from klent.engine.games.base import IllegalMoveError
from klent.engine.network import ModelFormatError, ModelMismatchError, OnnxEvaluator
from klent.engine.player import (
    FIRST_ANALYSIS_SEARCH,
    Decision,
    Player,
    PlayOptions,
    ResignTracker,
    go_board_sizes,
    model_path_for,
    read_model_info,
)


@pytest.fixture()
def player(untrained_model) -> Player:
    return Player.load(games.get("countup"), model=untrained_model("countup"), seed=1)


def test_reactive_decision_is_the_policy_argmax(player: Player) -> None:
    decision = player.decide(PlayOptions(mode="reactive"))
    prior = decision.result.prior
    assert decision.action == int(prior.argmax())
    assert decision.simulations == 0
    assert decision.move == f"+{decision.action + 1}"
    assert -1.0 <= decision.value <= 1.0 and 0.0 <= decision.winrate <= 1.0
    assert [m.action for m in decision.top_moves] == sorted(range(2), key=lambda a: -prior[a])
    assert decision.top_moves[0].action == decision.action


def test_search_decision_reports_its_visits(player: Player) -> None:
    decision = player.decide(PlayOptions(mode="search", simulations=16))
    assert decision.simulations == 16
    assert sum(m.visits for m in decision.top_moves) == 16
    assert all(m.pv[0] == m.move for m in decision.top_moves)
    assert decision.pv[0] == decision.move
    # the player's position did not move
    assert player.state.move_number == 0


def test_tree_is_reused_when_the_position_extends(player: Player) -> None:
    first = player.decide(PlayOptions(simulations=32))
    reply = first.action
    player.play(reply)
    reused = player._movers["search"].reusable(player.actions)
    assert reused is not None and reused.visits == int(first.result.visits[reply])
    player.set_position(games.get("countup").initial_state(), [reply])
    assert player._movers["search"].reusable(player.actions) is None  # another initial state object: fresh tree


def test_bad_moves_change_nothing(player: Player) -> None:
    player.play(1)
    with pytest.raises(IllegalMoveError):
        player.play(5)
    assert player.actions == [1]
    player.undo()
    assert player.actions == [] and player.state.move_number == 0
    with pytest.raises(IndexError):
        player.undo()


def test_no_move_in_a_finished_game(player: Player) -> None:
    for action in (1, 1, 1, 1):
        player.play(action)
    assert player.state.is_terminal
    with pytest.raises(IllegalMoveError):
        player.decide()


def test_stop_flag_returns_a_legal_move(player: Player) -> None:
    stop = threading.Event()
    stop.set()
    decision = player.decide(PlayOptions(simulations=10_000), stop=stop)
    assert decision.action in (0, 1) and decision.simulations < 10_000


def test_model_loading_errors(tmp_path: Path, untrained_model) -> None:
    go = games.get("countup10_3")
    with pytest.raises(FileNotFoundError, match="no model for countup10_3"):
        Player.load(go, weights_dir=tmp_path)
    shutil.copy(untrained_model("countup"), model_path_for(go, tmp_path))
    with pytest.raises(ModelMismatchError):
        Player.load(go, weights_dir=tmp_path)


def test_go_board_sizes_are_those_with_files(tmp_path: Path, untrained_model) -> None:
    assert go_board_sizes(weights_dir=tmp_path) == []
    shutil.copy(untrained_model("go9"), model_path_for(games.get("go9"), tmp_path))
    assert go_board_sizes(weights_dir=tmp_path) == [9]
    assert go_board_sizes(model=untrained_model("go7")) == [7]  # the one model given
    assert go_board_sizes(PlayOptions(mode="td"), weights_dir=tmp_path) == list(range(5, 20))  # no file needed
    assert go_board_sizes(PlayOptions(mode="dyna2"), weights_dir=tmp_path) == []  # no go<N>-td.npz
    with pytest.raises(ValueError, match="is a model for countup"):
        go_board_sizes(model=untrained_model("countup"))


# --- analysis: repeated searches on one tree ---------------------------------------------------


def test_analysis_grows_one_tree_until_told_to_stop(player: Player) -> None:
    seen: list[Decision] = []

    def update(decision: Decision) -> bool:
        seen.append(decision)
        return len(seen) < 4

    last = player.analyse(update, threading.Event(), PlayOptions(top_moves=2))
    assert last is seen[-1] and len(seen) == 4
    assert seen[0].simulations == FIRST_ANALYSIS_SEARCH
    assert all(later.visits > earlier.visits for earlier, later in zip(seen, seen[1:]))
    assert all(len(d.top_moves) == 2 for d in seen)


def test_analysis_keeps_its_budgets(player: Player) -> None:
    seen: list[Decision] = []
    player.analyse(lambda d: seen.append(d) is None, threading.Event(), simulations=100)
    assert sum(d.simulations for d in seen) == 100
    stop = threading.Event()
    stop.set()
    assert player.analyse(lambda d: True, stop).simulations < FIRST_ANALYSIS_SEARCH
    start = time.perf_counter()
    player.analyse(lambda d: True, threading.Event(), time=0.3, interval=0.05)
    assert time.perf_counter() - start < 2.0
    calls: list[Decision] = []
    reactive = player.analyse(lambda d: calls.append(d) is None, threading.Event(), PlayOptions(mode="reactive"))
    assert calls == [reactive] and reactive.simulations == 0


def test_candidates_restrict_the_choice_not_the_search(player: Player) -> None:
    free = player.decide(PlayOptions(simulations=32))
    other = 1 - free.action
    restricted = player.decide(PlayOptions(simulations=32, candidates=(other,)))
    assert restricted.action == other and [m.action for m in restricted.top_moves] == [other]
    assert restricted.pv[0] == restricted.move and restricted.result.visits.sum() == 32


def test_ponder_move_depth_and_seldepth(player: Player) -> None:
    searched = player.decide(PlayOptions(simulations=32))
    assert searched.ponder == searched.pv[1] and searched.depth == len(searched.pv)
    assert searched.seldepth >= searched.depth and searched.visits == 33
    assert player.decide(PlayOptions(mode="reactive")).ponder is None  # no tree, no network call
    reactive = player.decide(PlayOptions(mode="reactive", ponder=True))
    assert reactive.ponder in ("+1", "+2") and reactive.seldepth == 1 and reactive.visits == 0
    for action in (1, 1, 1):
        player.play(action)
    won = player.decide(PlayOptions(simulations=8, ponder=True))
    assert won.ponder is None and won.outcome == 1.0  # the move wins
    assert all(m.outcome == 1.0 and len(m.pv) == 1 for m in won.top_moves)


def test_options_within_a_clock_budget() -> None:
    search = PlayOptions(simulations=400, time=2.0)
    assert search.within(None) is search
    assert search.within(5.0).time == 2.0 and search.within(0.5) == PlayOptions(simulations=400, time=0.5)
    assert search.within(0.0).mode == "reactive"  # out of time: the network's one call
    assert PlayOptions(mode="td", simulations=100).within(0.0).simulations == 0  # what TD's memory knows
    reactive = PlayOptions(mode="reactive")
    assert reactive.within(1.0) is reactive


# --- resigning ---------------------------------------------------------------------------------


def test_resign_after_consecutive_lost_moves_only() -> None:
    tracker = ResignTracker(lost_value=-0.9, moves=2)
    assert [tracker.should_resign(v) for v in (-0.95, 0.0, -0.9, -1.0)] == [False, False, False, True]
    never = ResignTracker.from_winrate(0.0, moves=1)
    assert not any(never.should_resign(-1.0) for _ in range(5))
    gtp = ResignTracker.from_winrate(0.05, moves=1)
    assert gtp.should_resign(-0.95) and not gtp.should_resign(-0.8)


# --- model metadata without a runtime session --------------------------------------------------


def test_model_info_is_read_without_onnx_runtime(untrained_model, monkeypatch, tmp_path: Path) -> None:
    path = untrained_model("countup")
    session_info = OnnxEvaluator(path).info
    monkeypatch.setattr(onnxruntime, "InferenceSession", None)  # any session would fail now
    assert read_model_info(path) == session_info
    assert session_info.game == "countup" and session_info.has_action_values
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\xff" * 64)
    with pytest.raises(ModelFormatError, match="not an ONNX model"):
        read_model_info(junk)
    with pytest.raises(FileNotFoundError):
        read_model_info(tmp_path / "missing.onnx")


def test_importing_the_search_does_no_work() -> None:
    code = "import klent.engine.search.gumbel as g; print(g.warm_up.cache_info().currsize)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "0"


def test_go_and_chess_search_with_the_measured_floor_the_small_games_with_mctxs(monkeypatch) -> None:
    """The rescaling floor measured stronger at play (benchmarks/RESULTS.md) is Go's and
    chess's default; a game not measured keeps mctx's; an explicit floor wins over both.  So
    with the wave size: chess's measured one, 32 for the other games, or the one given."""
    import klent.engine.player.gumbel_mover

    seen = []
    real = klent.engine.player.gumbel_mover.search
    monkeypatch.setattr(klent.engine.player.gumbel_mover, "search", lambda state, network, limits, config, **rest: (
        seen.append((config.rescale_floor, config.wave_size)), real(state, network, limits, config=config, **rest))[1])
    for name, default in (("chess", (2.0, 4)), ("go9", (2.0, 32)), ("gardner", (1e-8, 32)),
                          ("animal_shogi", (1e-8, 32))):
        player = Player.without_model(games.get(name), PlayOptions(simulations=4, go_rules=False))
        player.decide()
        player.decide(PlayOptions(simulations=4, go_rules=False, rescale_floor=0.5, wave_size=3))
        assert seen == [default, (0.5, 3)], name
        seen.clear()
    with pytest.raises(ValueError, match="wave_size must be >= 1"):
        PlayOptions(wave_size=0)


def test_a_floor_on_the_rescaling_keeps_the_search_on_the_policy_in_a_decided_game(capsys) -> None:
    """White to move can capture three black stones in atari (E7) in a game the shipped go9
    model already calls won (every move's value within 0.05 of 1; within 0.02 for the distilled
    models, 0.031 for the KLENT continuation of a3f3b98): with mctx's floor (1e-8) the search
    chooses by differences of a thousandth, away from the policy (measured with the models of
    74b9417, c8b1282 and the dense one after them: D4, D4, D3; a floor of 0.1 still left the
    policy with the last); with Go's default floor of 2 it keeps to the policy's first choice
    (E7, E4 and E7 for those models; the continuation of a3f3b98 plays E7 with either floor)."""
    game = games.get("go9")
    rows = [".........", "XXXXXXXXX", "OOOO.OOOO", "OOOXXXOOO", "OOOOOOOOO"] + ["........."] * 4
    black = [r * 9 + c for r, row in enumerate(rows) for c, ch in enumerate(row) if ch == "X"]
    white = [r * 9 + c for r, row in enumerate(rows) for c, ch in enumerate(row) if ch == "O"]
    player = Player.load(game, threads=1, seed=0)
    player.set_position(game.setup_state(black, white, 1))
    policy = player.decide(PlayOptions(mode="reactive", go_rules=False))
    decided = [stat.q for stat in policy.top_moves]
    assert min(decided) > 0.95, f"the shipped model no longer calls this game won: {decided}"
    assert "E7" in [stat.move for stat in policy.top_moves[:2]]  # the capture, among its first choices
    assert player.decide(PlayOptions(simulations=800, go_rules=False)).move == policy.move
    with pytest.raises(ValueError, match="rescale_floor must be within"):
        PlayOptions(rescale_floor=0.0)
    for command in ("gtp", "uci"):  # argparse refuses it: usage, then one line that names it
        with pytest.raises(SystemExit) as refused:
            klent_main([command, "--rescale-floor", "3"])
        assert refused.value.code == 2
        assert "argument --rescale-floor: 3 is not within (0, 2]" in capsys.readouterr().err
        with pytest.raises(SystemExit) as refused:
            klent_main([command, "--wave-size", "0"])
        assert refused.value.code == 2
        assert "argument --wave-size: 0 is not >= 1" in capsys.readouterr().err


def test_the_device_asked_for_reaches_the_network(untrained_model, devices_asked: list[str]) -> None:
    # `--device` of klent gtp, uci and serve, and the bot's [engine] device, end here.
    player = Player.load(games.get("countup"), model=untrained_model("countup"), device="cpu")
    assert devices_asked == ["cpu"] and player.evaluator.providers == ["CPUExecutionProvider"]
