"""TD search and Dyna-2 as play modes: the `Player` without a network (its transient memory
carried between the moves of a game, Go's move rules and the dead-stone judgement fed by the
simulated games), `klent gtp --mode td|dyna2`, and `klent train --algo td-learning`.  The
HTTP side is in test_server.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from klent.cli import main as klent_main
from klent.engine.games import get
from klent.engine.games.go import GoGame
from klent.engine.player import MoveRule, Player, PlayOptions, ShapeWeights, load_td_weights, model_path_for
from klent.engine.search.td import TdConfig
from klent.matchplay.engine_process import GtpFailure, GtpProcess


def td_player(game: GoGame, simulations: int = 20, **options) -> Player:
    return Player(None, PlayOptions(mode="td", simulations=simulations, **options), seed=0, game=game)


def small_weights(path: Path, size: int = 9) -> Path:
    """A small Dyna-2 memory (1x1 and 2x2 shapes, shared by location) of random weights."""
    count = ShapeWeights.weight_count(size, (1, 2), ("LI",))
    ShapeWeights(size, (1, 2), ("LI",), np.random.default_rng(0).normal(0, 0.1, count)).save(path)
    return path


# --- the Player ----------------------------------------------------------------------------


def test_player_without_a_network_carries_the_transient_memory_through_a_game():
    game = GoGame(9)
    player = td_player(game)
    first = player.decide()
    assert first.simulations == 20 and first.visits == 0 and first.result.ownership is not None
    memory = player._td["td"].search(player.options.td)
    learnt = memory.transient.copy()
    assert learnt.any()
    player.play(first.action)
    player.play(next(a for a in (40, 41) if a != first.action))
    player.decide(PlayOptions(mode="td", simulations=0))  # no simulation: chosen on what it knows
    assert player._td["td"].search(player.options.td) is memory and np.array_equal(memory.transient, learnt)
    player.decide()
    assert not np.array_equal(memory.transient, learnt)
    player.set_position(game.initial_state())  # a new game forgets it
    assert not memory.transient.any()


def test_td_decision_lists_the_moves_by_their_learnt_values():
    game = GoGame(9)
    decision = td_player(game, top_moves=5).decide()
    stats = decision.top_moves
    assert stats[0].action == decision.action and decision.value == pytest.approx(stats[0].q)
    assert [m.q for m in stats[1:]] == sorted((m.q for m in stats[1:]), reverse=True)
    assert stats[0].q >= max(m.q for m in stats[1:] if m.move != "pass")
    assert all(m.visits == 0 and m.prior == pytest.approx(1 / 82) for m in stats)
    assert decision.pv == [decision.move] and decision.rule is None


def test_go_rules_apply_to_td_moves():
    # Black owns the whole 5x5 board and White has passed: Black's pass ends the game won.
    game = GoGame(5, komi=0.5)
    black = [p for p in range(15) if p not in (6, 8)]
    state = game.setup_state(black=black, to_play=1).play(game.pass_action)
    player = td_player(game)
    player.set_position(state.start(), state.moves())
    decision = player.decide()
    assert decision.action == game.pass_action and decision.rule is MoveRule.PASS_WINS


def test_dead_stones_are_judged_by_simulated_games_without_a_network():
    game = GoGame(5, komi=0.5)
    rows = ["XXXXX", "X.X.X", "XXXXX", "X.O.X", "XXXXX"]
    black = [r * 5 + c for r, row in enumerate(rows) for c, ch in enumerate(row) if ch == "X"]
    state = game.setup_state(black=black, white=[17], to_play=1)
    player = td_player(game)
    player.set_position(state)
    judgement = player.judged()
    assert judgement.dead == frozenset({17}) and judgement.judged.score() == 25 - 0.5


def test_dyna2_needs_its_permanent_weights(tmp_path):
    game = GoGame(9)
    dyna2 = PlayOptions(mode="dyna2", simulations=10)
    with pytest.raises(FileNotFoundError) as missing:
        Player.load(game, options=dyna2, weights_dir=tmp_path)
    assert "no Dyna-2 weights for go9" in str(missing.value) and "\n" not in str(missing.value)
    with pytest.raises(ValueError, match="Dyna-2 needs permanent weights"):
        Player(None, dyna2, game=game)
    small_weights(tmp_path / "go9-td.npz")
    player = Player.load(game, options=dyna2, weights_dir=tmp_path, seed=0)
    assert player.evaluator is None and player.permanent is not None
    assert player.state.legal_mask()[player.decide().action]
    with pytest.raises(ValueError, match="not for go7"):
        load_td_weights(GoGame(7), tmp_path / "go9-td.npz")


def test_td_parameters_reach_the_search_and_new_ones_start_a_new_memory():
    game = GoGame(9)
    one_by_one = TdConfig(shapes=(1,), greedy_moves=0)
    player = Player(None, PlayOptions(mode="td", simulations=10, td=one_by_one), game=game, seed=0)
    player.decide()
    memory = player._td["td"].search(player.options.td)
    assert memory.config == TdConfig(shapes=(1,), greedy_moves=0, seed=0)
    assert memory.transient.size == ShapeWeights.weight_count(9, (1,), ("none",)) and memory.transient.any()
    player.decide()
    assert player._td["td"].search(player.options.td) is memory  # the same parameters keep the memory
    player.decide(PlayOptions(mode="td", simulations=10))  # the defaults: another search
    default = player._td["td"].search(TdConfig())
    assert default is not memory and default.config.shapes == (1, 2)


def test_td_modes_refuse_other_games_and_network_modes_need_a_network():
    with pytest.raises(ValueError, match="TD search plays Go, not chess"):
        Player.load(get("chess"), options=PlayOptions(mode="td", simulations=10))
    with pytest.raises(ValueError, match="needs a network"):
        Player(None, PlayOptions(mode="search"), game=GoGame(9))
    with pytest.raises(ValueError, match="no network"):
        td_player(GoGame(9)).decide(PlayOptions(mode="reactive"))
    with pytest.raises(ValueError, match="td needs a number of simulations or a time budget"):
        PlayOptions(mode="td", simulations=None)


def test_td_chooses_among_the_networks_most_probable_moves():
    game = GoGame(9)
    options = PlayOptions(mode="td", simulations=30, td_root_moves=3)
    player = Player.load(game, options=options, seed=0, threads=1)
    player.play(40)
    decision = player.decide()
    prior = decision.result.prior
    assert decision.action in np.argsort(-prior)[:3]
    assert prior.max() > 2 / 81  # the network's policy, not the uniform prior of TD search alone
    assert decision.simulations == 30
    with pytest.raises(ValueError, match="td_root_moves must be >= 0"):
        PlayOptions(mode="td", td_root_moves=-1)


def test_td_root_policy_plays_the_simulations_first_moves_among_the_candidates():
    """With ``td_root_policy`` the simulated games open with the network's candidates: in
    one-move simulated games (the move cap one move ahead), the simulations' ownership (from
    the mover's view) shows the mover's stone on those points only."""
    game = GoGame(9, max_moves=2)
    options = PlayOptions(mode="td", simulations=60, td_root_moves=2, td_root_policy=True)
    player = Player.load(game, options=options, seed=0, threads=1)
    player.play(40)
    decision = player.decide()
    candidates = np.argsort(-decision.result.prior, kind="stable")[:2]
    assert decision.action in candidates
    ownership = decision.result.ownership
    assert ownership is not None
    mine = np.flatnonzero(ownership.ravel() > 0)
    assert 1 <= mine.size <= 2 and set(mine.tolist()) <= set(candidates.tolist())
    assert ownership.ravel()[mine].sum() == pytest.approx(1.0)  # one of them in every simulated game
    with pytest.raises(ValueError, match="td_root_policy .* needs td_root_moves"):
        PlayOptions(mode="td", td_root_policy=True)


# --- GTP -----------------------------------------------------------------------------------


def gtp(*args: str) -> GtpProcess:
    return GtpProcess([sys.executable, "-m", "klent", "gtp", "--simulations", "10", "--seed", "1",
                       "--resign-threshold", "0", *args])


def test_gtp_plays_td_search_without_a_model():
    process = gtp("--mode", "td", "--weights-dir", "/nonexistent")
    try:
        process.send("boardsize 9")
        process.send("clear_board")
        process.send("play b E5")
        move = process.send("genmove w")
        assert move != "E5" and GoGame(9).parse_vertex(move) < 81
        process.send(f"play b {'D4' if move != 'D4' else 'F6'}")
        assert process.send("genmove w") not in ("resign", "")
        assert process.send("final_score").startswith(("B+", "W+", "0"))
        with pytest.raises(GtpFailure, match="analysis needs a network"):
            process.send("lz-analyze b 100")
    finally:
        process.close()


def test_gtp_td_with_the_network_at_the_root(capsys):
    for policy in ([], ["--td-root-policy"]):
        process = gtp("--mode", "td", "--td-root-moves", "2", *policy, "--model", str(model_path_for(GoGame(9))))
        try:
            assert process.send("genmove b") not in ("pass", "resign")
        finally:
            process.close()
    assert klent_main(["gtp", "--mode", "search", "--td-root-moves", "2"]) == 2
    assert "--td-root-moves is for --mode td or dyna2" in capsys.readouterr().err
    assert klent_main(["gtp", "--mode", "td", "--td-root-policy"]) == 2
    assert "--td-root-policy draws among the network's candidates" in capsys.readouterr().err


def test_gtp_takes_the_td_parameters(capsys):
    process = gtp("--mode", "td", "--td-shapes", "1", "--td-sharing", "LD", "--td-lambda", "0", "--td-epsilon",
                  "0.2", "--td-alpha", "0.05", "--td-greedy-moves", "10", "--weights-dir", "/nonexistent")
    try:
        assert process.send("genmove b") not in ("pass", "resign")
    finally:
        process.close()
    for flags, error in [
        (["--mode", "td", "--td-shapes", "1,4"], "TD search parameters: shapes must be a sorted selection"),
        (["--mode", "dyna2", "--td-epsilon", "2"], "TD search parameters: epsilon must be within [0, 1]"),
        (["--mode", "td", "--td-shapes", "two"], "--td-shapes takes square sizes such as 1,2,3"),
        (["--mode", "td", "--td-sharing", "LX"], "TD search parameters: sharing must be distinct names"),
        (["--mode", "search", "--td-alpha", "0.2"], "the --td-* parameters are for --mode td or dyna2"),
    ]:
        assert klent_main(["gtp", *flags]) == 2
        assert error in capsys.readouterr().err


def test_gtp_plays_dyna2_with_a_weights_file(tmp_path):
    process = gtp("--mode", "dyna2", "--td-weights", str(small_weights(tmp_path / "small.npz")))
    try:
        assert process.send("genmove b") != "pass"  # the weights' size, 9x9, is the default
        with pytest.raises(GtpFailure, match="unacceptable size"):
            process.send("boardsize 13")
    finally:
        process.close()


def test_gtp_dyna2_without_weights_is_a_one_line_error(tmp_path, capsys):
    assert klent_main(["gtp", "--mode", "dyna2", "--td-weights", str(tmp_path / "none.npz")]) == 2
    assert klent_main(["gtp", "--mode", "td", "--td-weights", str(tmp_path / "none.npz")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and "no Dyna-2 weights file" in lines[0] and "need --mode dyna2" in lines[1]
    process = gtp("--mode", "dyna2", "--weights-dir", str(tmp_path))
    try:
        with pytest.raises(GtpFailure, match="no Dyna-2 weights for go19"):
            process.send("genmove b")
    finally:
        process.close()


# --- klent train --algo td-learning --------------------------------------------------------


def test_train_td_learning_writes_loadable_weights_without_torch(tmp_path):
    out = tmp_path / "run"
    script = (
        "import sys\n"
        "from klent.cli import main\n"
        f"code = main(['train', '--algo', 'td-learning', '--game', 'go5', '--out', {str(out)!r}, "
        "'--games', '12', '--no-progress'])\n"
        "assert code == 0, code\n"
        "assert 'torch' not in sys.modules, 'td-learning imported torch'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=600)
    weights = ShapeWeights.load(out / "go5-td.npz")
    assert weights.size == 5 and weights.info["games"] == 12 and weights.theta.any()
    assert json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])["games"] == 12
    assert klent_main(["train", "--algo", "td-learning", "--game", "go5", "--out", str(out), "--games", "20",
                       "--resume", "--no-progress"]) == 0
    assert ShapeWeights.load(out / "go5-td.npz").info["games"] == 20
    game = GoGame(5)
    decision = Player.load(game, options=PlayOptions(mode="dyna2", simulations=5), weights_dir=out).decide()
    assert game.initial_state().legal_mask()[decision.action]


def test_train_td_learning_refuses_torch_options(tmp_path, capsys):
    assert klent_main(["train", "--algo", "td-learning", "--out", str(tmp_path), "--minutes", "1"]) == 2
    assert klent_main(["train", "--algo", "td-learning", "--out", str(tmp_path), "--resume"]) == 2
    assert klent_main(["train", "--algo", "td-learning", "--game", "chess", "--out", str(tmp_path),
                       "--games", "1", "--no-progress"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3 and "no --minutes" in lines[0] and "nothing to resume" in lines[1]
    assert "TD learning plays Go, not chess" in lines[2]
