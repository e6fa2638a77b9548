"""Teacher labelling (klent.training.teacher) and distillation (klent.training.distill) with real Stockfish."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest
import torch

import klent.engine.games
from klent.matchplay.engine_process import GtpProcess
from klent.training import dagger, shards, teacher, teacher_chess, teacher_go
from klent.training.config import EvalConfig, OptimConfig, load_config
from klent.training.distill import (
    Distill,
    DistillConfig,
    LabelledSet,
    batches,
    distill_loss,
    joined_starts,
    to_samples,
    validation_metrics,
)
from klent.training.nets import NetConfig, build_net
from klent.training.selfplay import SelfPlayConfig
from klent.training.trainer import Trainer

CONFIGS = Path(__file__).resolve().parents[2] / "klent" / "training" / "configs"


def small_config(stockfish: str, **changes) -> teacher.LabelConfig:
    """Depth-2 labels in short games: seconds per shard."""
    settings = dict(teacher=stockfish, positions=300, depth=2, max_plies=40, games_per_shard=3,
                    validation_every=4, opening_plies=4)
    return teacher.LabelConfig(**{**settings, **changes})


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory, stockfish_path: str) -> Path:
    folder = tmp_path_factory.mktemp("labels") / "chess"
    teacher.label(small_config(stockfish_path, positions=1500), folder, jobs=2)
    return folder


@pytest.mark.parametrize("scale", ["wdl", "cp"])
def test_labels_equal_a_direct_stockfish_query(stockfish_path: str, scale: str) -> None:
    game = shards.rules("chess")
    config = small_config(stockfish_path, depth=5, value=scale)
    fens = ["r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
            "8/5pk1/6p1/8/3Q4/6P1/5P1K/3r4 b - - 0 40"]
    ours = teacher.open_teacher(config)
    direct = chess.engine.SimpleEngine.popen_uci(stockfish_path)
    direct.configure({"Threads": 1, "Hash": 16, "UCI_ShowWDL": True})
    try:
        for fen in fens:
            state = game.from_fen(fen)
            actions, values, _ = teacher_chess.label_position(ours, game, state, config.limit())
            board = chess.Board(fen)
            infos = direct.analyse(board, chess.engine.Limit(depth=5), multipv=board.legal_moves.count(), game=object())
            if scale == "wdl":
                expected = {info["pv"][0]: (wdl.wins - wdl.losses) / 1000
                            for info in infos for wdl in [info["wdl"].pov(board.turn)]}
            else:  # lichess's win probability sigmoid(0.00368208 cp), as 2p - 1
                expected = {info["pv"][0]: 2 / (1 + math.exp(-0.00368208 * info["score"].pov(board.turn).score()))
                            - 1 for info in infos}
            assert len(actions) == len(expected) == board.legal_moves.count()
            assert game.action_to_move(state, int(actions[0])) == infos[0]["pv"][0]  # the teacher's first line
            for action, value in zip(actions, values):
                move = game.action_to_move(state, int(action))
                assert value == pytest.approx(expected[move], abs=1e-6), move.uci()
    finally:
        ours.close()
        direct.quit()


@pytest.mark.parametrize("scale", ["wdl", "cp"])
def test_mate_is_worth_one_and_stalemate_nothing(stockfish_path: str, scale: str) -> None:
    game = shards.rules("chess")
    state = game.from_fen("k7/8/1K6/8/8/8/8/2Q5 w - - 0 1")
    config = small_config(stockfish_path, depth=4, value=scale)
    engine_ = teacher.open_teacher(config)
    try:
        actions, values, _ = teacher_chess.label_position(engine_, game, state, config.limit())
    finally:
        engine_.close()
    by_move = {game.action_to_text(state, int(a)): float(v) for a, v in zip(actions, values)}
    assert by_move["c1c8"] == 1.0  # Qc8 mate
    assert by_move["c1c7"] == 0.0  # Qc7 stalemate: a draw
    assert max(by_move.values()) == 1.0 and len(by_move) == len(list(state.board.legal_moves))


def test_a_shard_round_trips(tmp_path: Path) -> None:
    games = [teacher.LabelledGame(7, ["e2e4", "e7e5"], [11, 12], [np.array([1, 2]), np.array([3])],
                                  [np.array([0.5, -0.25], np.float32), np.array([0.0], np.float32)])]
    seen = {12}  # the second position is a duplicate of an earlier game's
    arrays, counts = teacher.shard_arrays(games, seen, teacher.LabelConfig(teacher="x"))
    assert counts["positions"] == 1 and counts["duplicates"] == 1 and seen == {11, 12}
    teacher.write_shard(tmp_path / "s.npz", arrays)
    back = teacher.read_shard(tmp_path / "s.npz")
    assert set(back) == set(arrays)
    for name in arrays:
        np.testing.assert_array_equal(back[name], arrays[name])
    assert str(back["game_moves"][0]) == "e2e4 e7e5" and back["label_start"].tolist() == [0, 2]


def _hashes(folder: Path) -> list[int]:
    return [int(h) for path in teacher.shard_paths(folder) for h in teacher.read_shard(path)["hash"]]


def test_sigkill_during_labelling_then_resume_loses_and_repeats_nothing(tmp_path: Path, stockfish_path: str) -> None:
    config = small_config(stockfish_path, positions=600)
    whole = tmp_path / "whole"
    teacher.label(config, whole, jobs=1)
    killed = tmp_path / "killed"
    script = (f"from klent.training import teacher; import sys\n"
              f"teacher.label(teacher.LabelConfig(**{dataclasses.asdict(config)!r}), sys.argv[1], jobs=2)\n")
    process = subprocess.Popen([sys.executable, "-c", script, str(killed)], start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(killed.glob("shard-*.npz"))) < 2:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # the labeller and its teachers, mid-shard
    process.wait()
    before = teacher.Manifest.read(killed)
    assert before is not None and 0 < before.positions < config.positions
    manifest = teacher.label(config, killed, jobs=2)
    resumed = _hashes(killed)
    assert len(resumed) == len(set(resumed)) == manifest.positions
    assert resumed == _hashes(whole)  # the same positions in the same order
    assert manifest.games == teacher.Manifest.read(whole).games


def test_a_student_plays_the_first_plies_after_the_opening_and_the_teacher_labels_them(
    tmp_path: Path, stockfish_path: str, gnugo_path: str
) -> None:
    """DAgger's positions: the student's reactive moves for k plies (k drawn per game), then
    the teacher's; chess labels every position, Go those from the teacher's first move on."""
    weights = Path(__file__).resolve().parents[2] / "weights"
    config = small_config(stockfish_path, student=str(weights / "chess.onnx"), student_plies=6, max_plies=16)
    student = teacher.open_student(config)
    chess_game = shards.rules("chess")
    drawn = []
    stockfish = teacher.open_teacher(config)
    try:
        records = [teacher.play_labelled_game(stockfish, config, index, student) for index in range(4)]
    finally:
        stockfish.close()
    for index, record in enumerate(records):
        rng = np.random.default_rng([config.seed, index])
        [rng.choice(teacher_chess.TEMPERATURES[config.value]) for _ in range(2)]  # the game's two strengths come first
        until = dagger.student_until(config, rng, student)
        drawn.append(until - config.opening_plies)
        assert len(record.hashes) == len(record.moves)  # every position labelled, the student's too
        state = chess_game.initial_state()
        for ply, text in enumerate(record.moves):
            action = chess_game.text_to_action(state, text)
            if config.opening_plies <= ply < until:
                assert action == dagger.student_move(student, state), (index, ply)
            state = state.play(action)
    assert max(drawn) > 0 and len(set(drawn)) > 1

    go = teacher.LabelConfig(game="go9", teacher=f"{gnugo_path} --mode gtp --level 1 --chinese-rules",
                             depth=None, max_plies=40, opening_plies=2, student=str(weights / "go9.onnx"),
                             student_plies=10)
    go_student = teacher.open_student(go)
    go_game = shards.rules("go9")
    gnugo = teacher.open_teacher(go)
    try:
        for index in range(3):
            record = teacher.play_labelled_go_game(gnugo, go, index, go_student)
            until = dagger.student_until(go, np.random.default_rng([go.seed, index]), go_student)
            assert record.first_ply == until and len(record.hashes) == len(record.moves) - until
            state = go_game.initial_state()
            for ply, vertex in enumerate(record.moves[:until]):
                action = go_game.parse_vertex(vertex)
                if ply >= go.opening_plies:
                    assert action == dagger.student_move(go_student, state), (index, ply)
                state = state.play(action)
    finally:
        gnugo.close()
    with pytest.raises(ValueError, match="student_plies"):
        teacher.LabelConfig(student=str(weights / "chess.onnx"))
    with pytest.raises(ValueError, match="cannot load the student"):
        teacher.open_student(dataclasses.replace(go, student=str(weights / "chess.onnx")))


def test_a_set_made_before_a_setting_existed_resumes(tmp_path: Path, stockfish_path: str) -> None:
    config = small_config(stockfish_path, positions=30)
    teacher.label(config, tmp_path / "set")
    manifest = json.loads((tmp_path / "set" / "manifest.json").read_text())
    del manifest["config"]["student"], manifest["config"]["student_plies"]  # as written before the option
    del manifest["config"]["value"]  # a set from before the centipawn scale: its WDL values
    (tmp_path / "set" / "manifest.json").write_text(json.dumps(manifest))
    assert teacher.label(dataclasses.replace(config, positions=60), tmp_path / "set").positions >= 60
    refused = dataclasses.replace(config, positions=90, value="cp")
    with pytest.raises(ValueError, match=r"other settings \(value\)"):
        teacher.label(refused, tmp_path / "set")


def test_a_labelled_set_is_split_by_game_and_walked_in_seeded_epochs(labelled: Path) -> None:
    game = klent.engine.games.get("chess")
    data = LabelledSet.load(labelled, game, progress=False)
    manifest = teacher.Manifest.read(labelled)
    assert len(data) == manifest.positions and data.validation.sum() == manifest.validation_positions
    assert 0 < data.validation.sum() < len(data)
    train = set(np.flatnonzero(~data.validation).tolist())
    epoch = [batches(data, 100, seed=3, iteration=i) for i in range(len(train) // 100 + 2)]
    first_epoch = np.concatenate(epoch)[: len(train)]
    assert set(first_epoch.tolist()) == train  # every training position once per epoch
    np.testing.assert_array_equal(batches(data, 100, 3, 5), batches(data, 100, 3, 5))
    samples = to_samples(data, np.arange(5), game.num_actions, temperature=0.0)
    for row in range(5):
        actions, values = data.labels(row)
        assert samples.masks[row].sum() == len(actions)
        assert samples.policy[row, actions[values.argmax()]] == 1.0
        np.testing.assert_allclose(samples.q_targets[row, actions], values)
        assert np.isnan(samples.q_targets[row, ~samples.masks[row]]).all()


def test_several_labelled_sets_are_fitted_as_one_each_keeping_its_split(labelled: Path) -> None:
    game = klent.engine.games.get("chess")
    one = LabelledSet.load(labelled, game, progress=False)
    both = Distill.load(DistillConfig(data=f"{labelled}, {labelled}"), game, 0, 0, 1, progress=False).sets[0]
    size = len(one)
    assert len(both) == 2 * size and both.description.count("Stockfish") == 2
    np.testing.assert_array_equal(both.validation, np.concatenate([one.validation, one.validation]))
    for row in (0, size - 1):
        for copy in (row, row + size):  # the second set's labels are its own, not shifted
            actions, values = both.labels(copy)
            np.testing.assert_array_equal(actions, one.labels(row)[0])
            np.testing.assert_array_equal(values, one.labels(row)[1])
    np.testing.assert_array_equal(both.obs[np.arange(size, 2 * size)], one.obs[np.arange(size)])
    with pytest.raises(ValueError, match="needs a labelled set"):
        Distill.load(DistillConfig(data=" , "), game, 0, 0, 1, progress=False)


def test_a_model_distilled_on_centipawns_says_so_and_scales_are_not_mixed(
    labelled: Path, tmp_path: Path, stockfish_path: str
) -> None:
    game = klent.engine.games.get("chess")
    teacher.label(small_config(stockfish_path, positions=40, value="cp"), tmp_path / "cp")
    on_centipawns = Distill.load(DistillConfig(data=str(tmp_path / "cp")), game, 0, 0, 1, progress=False)
    assert on_centipawns.provenance()["value_scale"] == "centipawns"
    on_outcomes = Distill.load(DistillConfig(data=str(labelled)), game, 0, 0, 1, progress=False)
    assert on_outcomes.provenance()["value_scale"] == "outcome"
    with pytest.raises(ValueError, match="different scales"):
        Distill.load(DistillConfig(data=f"{labelled},{tmp_path / 'cp'}"), game, 0, 0, 1, progress=False)


def test_distillation_lowers_the_loss_and_agrees_with_the_teacher_more_than_an_untrained_net(labelled: Path) -> None:
    game = klent.engine.games.get("chess")
    data = LabelledSet.load(labelled, game, progress=False)
    torch.manual_seed(0)
    model = build_net(game, NetConfig(blocks=1, channels=16))
    device = torch.device("cpu")
    before = validation_metrics(model, data, game.num_actions, device)
    validation = to_samples(data, np.flatnonzero(data.validation), game.num_actions, 0.05)

    def validation_loss() -> float:
        with torch.no_grad():
            batch = {k: torch.from_numpy(getattr(validation, k)) for k in ("masks", "policy", "q_targets")}
            model.eval()
            loss = float(distill_loss(model(torch.from_numpy(validation.obs)), batch)[0])
            model.train()
            return loss

    loss_before = validation_loss()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    from klent.training.fitting import fit

    for iteration in range(5):  # about one epoch: 1,500 positions overfit after that
        samples = to_samples(data, batches(data, 256, 0, iteration), game.num_actions, 0.05)
        fit(model, optimizer, samples, distill_loss, 64, 1, device)
    after = validation_metrics(model, data, game.num_actions, device)
    assert validation_loss() < loss_before
    assert after["val_top1"] > before["val_top1"]
    assert after["val_q_mse"] < before["val_q_mse"]
    assert after["val_regret"] < before["val_regret"]


def test_init_starts_klent_from_a_distilled_net(labelled: Path, tmp_path: Path) -> None:
    base = load_config(CONFIGS / "chess_distill_cpu.toml")
    config = dataclasses.replace(
        base, blocks=1, channels=8, iterations=2, export_every=1, keep_every=0,
        distill=dataclasses.replace(base.distill, data=str(labelled), positions=128),
        optim=OptimConfig(batch_size=64), eval=EvalConfig(every=1, games=0),
    )
    run = Trainer(config, tmp_path / "distill", threads=1)
    run.run(progress=False)
    run.close()
    record = json.loads((tmp_path / "distill" / "metrics.jsonl").read_text().splitlines()[-1])
    assert {"val_top1", "val_q_mse", "policy_loss", "value_loss"} <= set(record)
    distilled = run.model.state_dict()

    klent = load_config(CONFIGS / "chess_cpu.toml")
    follow = dataclasses.replace(
        klent, blocks=1, channels=8, heads=config.heads, init=str(tmp_path / "distill" / "checkpoint.pt"),
        game_options={"max_moves": 16}, selfplay=dataclasses.replace(klent.selfplay, games=2, steps=4),
        optim=OptimConfig(batch_size=8), eval=EvalConfig(every=0),
    )
    second = Trainer(follow, tmp_path / "klent", threads=1)
    for name, tensor in second.model.state_dict().items():
        assert torch.equal(tensor, distilled[name]), name
    second.run(iterations=1, progress=False)
    second.close()
    assert json.loads((tmp_path / "klent" / "metrics.jsonl").read_text())["iteration"] == 1
    with pytest.raises(ValueError, match="checkpoint.pt"):
        Trainer(dataclasses.replace(follow, init="weights/chess.onnx"), tmp_path / "onnx", threads=1)
    with pytest.raises(ValueError, match="this run builds"):
        Trainer(dataclasses.replace(follow, channels=16), tmp_path / "shape", threads=1)


def test_a_klent_run_fits_its_teachers_action_values_beside_its_games(labelled: Path, tmp_path: Path) -> None:
    base = load_config(CONFIGS / "chess_cpu.toml")

    def run(q_weight: float, name: str) -> dict:
        config = dataclasses.replace(
            base, blocks=1, channels=8, iterations=3, seed=3, game_options={"max_moves": 16},
            selfplay=dataclasses.replace(base.selfplay, games=2, steps=4),
            distill=DistillConfig(data=str(labelled), positions=256, q_weight=q_weight),
            optim=OptimConfig(batch_size=32, lr=3e-3), eval=EvalConfig(every=3, games=0),
        )
        trainer = Trainer(config, tmp_path / name, threads=1)
        trainer.run(progress=False)
        trainer.close()
        assert trainer.algorithm.provenance()["value_scale"] == "outcome"
        return json.loads((tmp_path / name / "metrics.jsonl").read_text().splitlines()[-1])

    taught, ignored = run(5.0, "taught"), run(0.0, "ignored")
    assert taught["teacher_positions"] == 256 and taught["teacher_q_loss"] > 0
    assert taught["val_q_mse"] < ignored["val_q_mse"]  # the teacher's held-out games, as distillation reports
    with pytest.raises(ValueError, match="teacher for Q"):
        dataclasses.replace(base, algo="gumbel-az", distill=DistillConfig(data=str(labelled)))


SILENT_TEACHER = """\
import sys
for line in sys.stdin:
    command = line.split()[:1]
    if command == ["uci"]:
        print("id name silent", "option name Threads type spin default 1 min 1 max 1",
              "option name Hash type spin default 16 min 1 max 16", "uciok", sep="\\n", flush=True)
    elif command == ["isready"]:
        print("readyok", flush=True)
    elif command == ["quit"]:
        break
"""


def test_a_chess_teacher_that_never_answers_go_ends_the_labelling_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A UCI teacher that takes ``go`` and never answers it was waited for for ever (the Go
    teacher's commands had 120 s); each of its answers now has `shards.TEACHER_TIMEOUT`."""
    from klent.cli import main

    script = tmp_path / "silent-teacher"
    script.write_text(f"#!{sys.executable}\n{SILENT_TEACHER}")
    script.chmod(0o755)
    monkeypatch.setattr(teacher_chess, "TEACHER_TIMEOUT", 1.0)
    started = time.monotonic()
    status = main(["distill", "label", "--out", str(tmp_path / "set"), "--positions", "5", "--depth", "1",
                   "--teacher", str(script), "--no-progress"])
    err = capsys.readouterr().err
    assert status == 2 and time.monotonic() - started < 30
    assert "the teacher failed" in err and "did not answer 'go depth 1" in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_go13_labelling_repeats_a_seed_and_resumes_where_it_stopped(tmp_path: Path, gnugo_path: str) -> None:
    """Three 13x13 games, short (GNU Go's scoring of each still costs seconds); resuming
    after a kill is the chess sets' test, the same labeller."""
    config = teacher.LabelConfig(game="go13", teacher=f"{gnugo_path} --mode gtp --level 1 --chinese-rules",
                                 positions=4, depth=None, max_plies=12, opening_plies=4, games_per_shard=1,
                                 validation_every=2, seed=13)
    first = teacher.label(config, tmp_path / "first", jobs=1)
    again = teacher.label(config, tmp_path / "again", jobs=1)
    assert (first.games, first.positions) == (again.games, again.positions) == (1, 8)
    assert _hashes(tmp_path / "again") == _hashes(tmp_path / "first")  # the seed's game, move for move
    grown = teacher.label(dataclasses.replace(config, positions=12), tmp_path / "again", jobs=1)
    assert (grown.games, grown.positions) == (2, 16)
    hashes = _hashes(tmp_path / "again")
    assert hashes[:8] == _hashes(tmp_path / "first") and len(set(hashes)) == 16  # a new game, none repeated


def test_the_label_command_says_what_it_did(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One run as a user starts it; the refusals in this process (each would cost a start-up)."""
    from klent.cli import main

    out = tmp_path / "set"
    done = subprocess.run([sys.executable, "-m", "klent", "distill", "label", "--out", str(out), "--positions", "20",
                           "--depth", "1", "--no-progress"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "positions" in done.stdout and teacher.Manifest.read(out).positions >= 20
    assert teacher.Manifest.read(out).config["value"] == "cp"  # a new set's default scale
    for flags, said in ((["--out", str(out), "--teacher", "no-such-engine"], "not found"),
                        (["--out", str(out), "--depth", "3"], "other settings (depth)"),
                        (["--out", str(out), "--depth", "1", "--value", "wdl"], "other settings (value)"),
                        (["--out", str(tmp_path / "s"), "--student-plies", "5"], "--student-plies needs --student"),
                        (["--out", str(tmp_path / "s"), "--student", str(tmp_path / "none.onnx")], "no student model")):
        assert main(["distill", "label", "--no-progress", *flags]) == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


RESIGNING_TEACHER = """\
import sys
# genmove: Black walls off column D, White column H, one point a move; call N resigns.
moves = [column + str(row) for row in range(1, 10) for column in "DH"]
resign_at, made = int(sys.argv[1]), 0
for line in sys.stdin:
    words = line.split()
    if words and words[0] == "set_random_seed":
        print("? unknown command\\n", flush=True)
        continue
    reply = ""
    if words and words[0] == "genmove":
        reply = "resign" if made == resign_at else moves[made]
        made += 1
    elif words and words[0] == "known_command":
        reply = "false"
    elif words and words[0] == "name":
        reply = "Scripted"
    print("= " + reply + "\\n", flush=True)
    if words and words[0] == "quit":
        break
"""


@pytest.mark.parametrize(("resign_at", "kept"), [(17, True), (18, False)])
def test_a_teachers_resignation_ends_its_game_counted_as_it_stands(tmp_path: Path, resign_at: int,
                                                                   kept: bool) -> None:
    """A ``genmove`` teacher that resigns: the game ends, its area without dead stones is the
    result and the ownership (Black walls off 36 points, White 8 or 18, komi 7.5), and a game
    whose count favours the side that resigned is dropped."""
    script = tmp_path / "teacher.py"
    script.write_text(RESIGNING_TEACHER)
    config = teacher.LabelConfig(game="go9", teacher=f"{sys.executable} {script} {resign_at}", positions=1,
                                 depth=None, max_plies=100, opening_plies=0)
    with GtpProcess(config.teacher) as scripted:
        record = teacher_go.play_labelled_go_game(scripted, config, 0)
    assert record.ownership is not None and len(record.moves) == resign_at
    white = 8 if resign_at == 17 else 18  # H1-H8 (H9 opens White's side to the middle), or all of H and J
    assert record.result == 36 - white - 7.5
    assert len(record.hashes) == len(record.teacher_moves) == (resign_at if kept else 0)


def test_label_starts_join_across_a_part_without_positions() -> None:
    """A shard can hold no position (its game's positions were all seen before, or it was
    resigned in the opening); the parts after it keep their offsets."""
    parts = [np.array([0, 2, 5]), np.array([0]), np.array([0, 1, 4])]
    np.testing.assert_array_equal(joined_starts(parts), [0, 2, 5, 6, 9])
    np.testing.assert_array_equal(joined_starts([np.array([0]), np.array([0, 3])]), [0, 3])
    np.testing.assert_array_equal(joined_starts([]), [0])


def test_pachi_teaches_by_its_moves_and_its_judgement_of_the_end(tmp_path: Path, pachi_path: str) -> None:
    """A teacher without ``top_moves`` (Pachi): its ``genmove`` is the one listed move, and the
    final owners are the area of the board without the stones it lists dead, so that each
    position's score agrees with the game's result, whether it was played out or resigned.
    Its search's win rate of each move it chose is the position's teacher value, which the Q
    targets mix with the outcome by ``teacher_value_weight``."""
    config = teacher.LabelConfig(game="go9", teacher=f"{pachi_path} -t =500 threads=1,pondering=0,pass_all_alive",
                                 positions=20, depth=None, max_plies=200, opening_plies=4, games_per_shard=1)
    manifest = teacher.label(config, tmp_path / "pachi", jobs=1)
    assert manifest.teacher_name.startswith("Pachi") and manifest.positions >= 20
    shard_rates = []
    for path in teacher.shard_paths(tmp_path / "pachi"):
        shard = teacher.read_shard(path)
        np.testing.assert_array_equal(np.diff(shard["label_start"]), 1)  # its move alone
        np.testing.assert_array_equal(shard["action"], shard["teacher_action"])
        shard_rates.append(shard["teacher_value"])
    rates = np.concatenate(shard_rates)
    assert np.isfinite(rates).all() and (np.abs(rates) <= 1).all()
    game = klent.engine.games.get("go9")
    data = LabelledSet.load(tmp_path / "pachi", game, progress=False)
    assert data.score is not None and data.ownership is not None
    outcome = data.value[data.label_start[:-1]]
    np.testing.assert_array_equal(np.sign(data.score), outcome)
    assert (np.abs(data.ownership).sum(axis=1) > 0).all()
    assert len(np.unique(rates)) > 2  # each position's own value, not one a game
    # Pachi's win rates lean the way its games went.
    assert np.corrcoef(rates, outcome)[0, 1] > 0
    mixed = LabelledSet.load(tmp_path / "pachi", game, progress=False, teacher_value_weight=0.25)
    np.testing.assert_allclose(mixed.value[mixed.label_start[:-1]], 0.75 * outcome + 0.25 * rates, rtol=1e-6)


def test_go_labels_hold_the_teachers_moves_result_and_ownership(tmp_path: Path, gnugo_path: str) -> None:
    config = teacher.LabelConfig(game="go9", teacher=f"{gnugo_path} --mode gtp --level 1 --chinese-rules",
                                 positions=40, depth=None, max_plies=60, opening_plies=4, games_per_shard=2,
                                 validation_every=2)
    manifest = teacher.label(config, tmp_path / "go", jobs=2)
    assert manifest.positions >= 40 and manifest.teacher_name == "GNU Go"
    game = klent.engine.games.get("go9")
    for path in teacher.shard_paths(tmp_path / "go"):
        shard = teacher.read_shard(path)
        assert set(np.unique(shard["ownership"])) <= {-1, 0, 1}
        assert (shard["ply"] >= 4).all()  # the random opening is not labelled
        for position in range(len(shard["ply"])):
            start, end = shard["label_start"][position], shard["label_start"][position + 1]
            listed = shard["action"][start:end]
            assert shard["teacher_action"][position] in listed or listed.tolist() == [game.pass_action]
            assert np.isnan(shard["teacher_value"][position])  # GNU Go values its moves in points only
            if shard["ply"][position] % 2 == 0:  # Black to move: ownership and outcome from Black's view
                area = int(shard["ownership"][position].sum()) - game.komi
                assert np.sign(area) == shard["outcome"][position]  # GNU Go's score is its ownership's
    data = LabelledSet.load(tmp_path / "go", game, progress=False)
    samples = to_samples(data, np.arange(len(data)), game.num_actions, 0.05)
    assert (samples.masks.sum(axis=1) > 1).all()  # every legal move, not only the labelled one
    assert (samples.policy.max(axis=1) == 1.0).all() and (np.abs(samples.returns) == 1).all()
    # The auxiliary targets: the final ownership and score from the mover's view, the score's
    # sign the game's outcome.
    assert data.ownership is not None and data.score is not None
    outcome = data.value[data.label_start[:-1]]
    np.testing.assert_array_equal(np.sign(data.score), outcome)
    assert samples.ownership is not None and samples.score is not None
    np.testing.assert_array_equal(samples.ownership, data.ownership)
    # Score-based Q targets: every listed move is labelled, the teacher's move (the best
    # listed) with tanh(final score / S), the others lower by their shortfall in GNU Go's points.
    by_score = LabelledSet.load(tmp_path / "go", game, progress=False, score_scale=10.0)
    shards = [teacher.read_shard(path) for path in teacher.shard_paths(tmp_path / "go")]
    assert len(by_score.action) == sum(len(shard["action"]) for shard in shards)
    scored = to_samples(by_score, np.arange(len(by_score)), game.num_actions, 0.0)
    np.testing.assert_array_equal(scored.actions, samples.actions)  # the policy target is unchanged
    np.testing.assert_allclose(scored.returns, np.tanh(data.score / 10.0), rtol=1e-5)
    labelled_moves = (~np.isnan(scored.q_targets)).sum(axis=1)
    assert labelled_moves.max() > 1 and (np.nanmax(scored.q_targets, axis=1) == scored.returns).all()
    assert (np.abs(scored.q_targets[~np.isnan(scored.q_targets)]) < 1).all()

    # A Go network with ownership and score heads distils from it, then KLENT goes on from it
    # (the shipped configs of both steps, made small).
    base = load_config(CONFIGS / "go9_distill_cpu.toml")
    config = dataclasses.replace(
        base, blocks=1, channels=8, iterations=2, export_every=1, keep_every=0,
        distill=dataclasses.replace(base.distill, data=str(tmp_path / "go"), positions=32),
        optim=OptimConfig(batch_size=16, symmetries=True), eval=EvalConfig(every=1, games=0),
    )
    run = Trainer(config, tmp_path / "distill", threads=1)
    run.run(progress=False)
    run.close()
    record = json.loads((tmp_path / "distill" / "metrics.jsonl").read_text().splitlines()[-1])
    assert {"ownership_loss", "score_loss", "val_top1", "val_ownership", "val_score_mae"} <= set(record)
    assert 0 <= record["val_ownership"] <= 1 and record["val_score_mae"] >= 0
    follow = dataclasses.replace(
        load_config(CONFIGS / "go9_klent_init_cpu.toml"), blocks=1, channels=8,
        init=str(tmp_path / "distill" / "checkpoint.pt"), selfplay=SelfPlayConfig(games=2, steps=4),
        optim=OptimConfig(batch_size=8), eval=EvalConfig(every=0),
    )
    second = Trainer(follow, tmp_path / "klent", threads=1)
    for name, tensor in second.model.state_dict().items():
        assert torch.equal(tensor, run.model.state_dict()[name]), name
    second.run(iterations=1, progress=False)
    second.close()
    assert "ownership_loss" in json.loads((tmp_path / "klent" / "metrics.jsonl").read_text())


@pytest.mark.parametrize(("line", "value"), [
    ("info depth 6 seldepth 8 multipv 2 score cp -35 wdl 20 900 80 nodes 1234 nps 9 pv e7e5 g1f3", -0.06),
    ("info depth 3 multipv 1 score mate 2 wdl 1000 0 0 nodes 10 pv d1h5", 1.0),
    ("info depth 3 score mate -1 nodes 10 pv e8d8", -1.0),  # a mate without WDL output
    ("info depth 9 score cp 400 upperbound nodes 99 pv a2a3", 2 / (1 + math.exp(-0.00368208 * 400)) - 1),  # no WDL
])
def test_a_raw_info_line_is_valued_as_python_chess_reads_it(line: str, value: float) -> None:
    from klent.protocols.uci_value import line_value

    assert line_value(line.split()) == pytest.approx(value, abs=1e-12)


def test_the_centipawn_scale_ignores_the_wdl_and_keeps_mates_at_one() -> None:
    from klent.protocols.uci_value import line_value

    line = "info depth 6 multipv 2 score cp -35 wdl 20 900 80 nodes 1234 pv e7e5 g1f3".split()
    assert line_value(line, use_wdl=False) == pytest.approx(2 / (1 + math.exp(0.00368208 * 35)) - 1, abs=1e-12)
    assert line_value("info depth 3 score mate 4 wdl 1000 0 0 pv d1h5".split(), use_wdl=False) == 1.0
    # Stockfish's WDL calls +5 pawns won outright; the centipawn scale still ranks it below +9
    five, nine = (line_value(f"info score cp {cp} wdl 1000 0 0 pv a2a3".split(), use_wdl=False) for cp in (500, 900))
    assert 0.6 < five < nine < 0.97


def test_the_policy_target_moves_its_best_weight_onto_the_first_of_equal_values() -> None:
    from klent.training.distill import teacher_policy

    values = np.array([0.9, 0.2, 0.9, 0.95], dtype=np.float32)  # index 3 is the best
    soft = teacher_policy(values, 0.05)
    mixed = teacher_policy(values, 0.05, best_weight=0.5)
    assert mixed.sum() == pytest.approx(1.0) and mixed[3] == pytest.approx(0.5 + 0.5 * soft[3])
    np.testing.assert_allclose(mixed[:3], 0.5 * soft[:3], rtol=1e-6)
    tied = teacher_policy(np.array([1.0, 1.0, 0.0], dtype=np.float32), 0.05, best_weight=1.0)
    assert tied.tolist() == [1.0, 0.0, 0.0]  # the teacher's line comes first among ties
    assert teacher_policy(values, 0.0, best_weight=0.3).tolist() == [0.0, 0.0, 0.0, 1.0]


def test_the_training_benchmark_times_a_distillation_run_against_its_training_step(
    labelled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from klent.bench.training import distill_throughput, main
    from klent.training.config import config_to_toml

    base = load_config(CONFIGS / "chess_distill_cpu.toml")
    config = dataclasses.replace(
        base, blocks=1, channels=8, export_every=2, eval=EvalConfig(every=0), keep_every=0,
        distill=dataclasses.replace(base.distill, data=str(labelled), positions=128), optim=OptimConfig(batch_size=64),
    )
    measured = distill_throughput(config, iterations=2, threads=1)
    assert measured["positions"] == len(LabelledSet.load(labelled, klent.engine.games.get("chess"), progress=False))
    # an iteration is its samples, its fitting, the checkpoint and half an export (one every 2)
    assert measured["seconds_per_iteration"] > measured["collect_seconds"] + measured["fit_seconds"] > 0
    assert measured["seconds_per_iteration"] > measured["export_seconds"] / 2
    assert measured["samples_per_second"] == pytest.approx(128 / measured["seconds_per_iteration"])
    assert 0 < measured["train_float32"] and 0 < measured["train_bfloat16"]

    small = tmp_path / "small.toml"
    small.write_text(config_to_toml(config))
    assert main(["--config", str(small), "--iterations", "1", "--threads", "1"]) in (0, 1)
    out = capsys.readouterr().out
    assert "chess, " in out and "samples/s = " in out and "% of the bound" in out
    with pytest.raises(SystemExit) as exit_info:
        main(["--config", str(CONFIGS / "chess_cpu.toml")])
    assert exit_info.value.code == 2
    assert "--config times distillation runs" in capsys.readouterr().err
