"""The efficiency-curve harness (the KLENT paper's figure 5): the anchor evaluation
during training (klent/training/anchor.py, [eval] anchor*) against the real Fairy-Stockfish, its rows
through a resume, `klent plot --efficiency` and its reach table, the four efficiency configs,
and the one-line errors of a bad anchor."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import pytest

from klent.cli import main as klent_main
from klent.matchplay.config import go_limits
from klent.training.config import EvalConfig, TrainConfig, config_to_toml, load_config
from klent.training.metrics import read_metrics
from klent.training.selfplay import SelfPlayConfig
from klent.training.trainer import Trainer

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "klent" / "training" / "configs"
ANCHOR_KEYS = ("anchor_games", "anchor_wins", "anchor_draws", "anchor_losses", "anchor_score",
               "anchor_score_low", "anchor_score_high")


def tiny(game: str, fairy: str, **anchor: object) -> TrainConfig:
    """A run of a 1 x 8 network, 4 games x 2 moves per iteration, with the anchor after every
    iteration: 4 games from 2 one-ply openings against Fairy-Stockfish at its weakest."""
    config = load_config(CONFIGS / f"{game}_klent_cpu.toml")
    settings = {"anchor": fairy, "anchor_options": {"Skill Level": -20}, "anchor_go": "depth 1",
                "anchor_every_evaluations": 1, "anchor_games": 4, "anchor_opening_plies": 1, **anchor}
    return dataclasses.replace(
        config, blocks=1, channels=8, selfplay=SelfPlayConfig(games=4, steps=2, evaluator="torch"),
        eval=EvalConfig(every=0, **settings),  # type: ignore[arg-type]
    )


def test_the_anchor_plays_fairy_stockfish_and_its_rows_survive_a_resume(tmp_path: Path, fairy_path: str) -> None:
    out = tmp_path / "run"
    trainer = Trainer(tiny("gardner", fairy_path), out, threads=1, progress=False)
    trainer.run(iterations=1, progress=False)
    first = read_metrics(out / "metrics.jsonl")
    assert len(first) == 1
    row = first[0]
    assert row["anchor_wins"] + row["anchor_draws"] + row["anchor_losses"] == row["anchor_games"] == 4
    score = (row["anchor_wins"] + row["anchor_draws"] / 2) / 4
    assert row["anchor_score"] == score
    assert 0.0 <= row["anchor_score_low"] <= score <= row["anchor_score_high"] <= 1.0
    assert row["anchor_score_low"] < row["anchor_score_high"]
    # The trainer's count, which the match adds nothing to: 4 games x (2 moves + the state the
    # window ends in, which KLENT's lambda-return bootstraps from).
    assert row["simulator_evaluations"] == trainer.simulator_evaluations == 4 * (2 + 1)
    assert row["anchor_seconds"] > 0 and row["anchor_distinct_games"] >= 1
    match = out / "anchor" / "iteration-000001"
    games = [json.loads(line) for line in (match / "games.jsonl").read_text().splitlines()]
    assert len(games) == 4 and {g["first"] for g in games} == {0, 1}  # both colours
    assert {g["opening"] for g in games} == {0, 1}  # two openings, each twice
    summary = json.loads((match / "summary.json").read_text())
    assert summary["engine_names"][1].startswith("Fairy-Stockfish")
    assert summary["config"]["uci_go"] == ["depth 1", "depth 1"]

    resumed = Trainer(load_config_of(out), out, resume=True, threads=1, progress=False)
    resumed.run(iterations=2, progress=False)
    rows = read_metrics(out / "metrics.jsonl")
    assert [r["iteration"] for r in rows] == [1, 2]
    assert rows[0] == row  # the first iteration's anchor row is kept as it was
    assert all(rows[1][key] is not None for key in ANCHOR_KEYS)
    assert rows[1]["simulator_evaluations"] == resumed.simulator_evaluations == 2 * 4 * (2 + 1)


def load_config_of(run: Path) -> TrainConfig:
    return load_config(run / "config.toml")


def test_the_anchor_is_due_at_the_first_iteration_and_at_each_multiple_of_its_evaluations() -> None:
    cfg = EvalConfig(anchor="fairy-stockfish", anchor_every_evaluations=1000)
    assert cfg.anchor_due(0, 300)  # the start of the curve
    assert not cfg.anchor_due(300, 600) and not cfg.anchor_due(600, 999)
    assert cfg.anchor_due(999, 1000) and cfg.anchor_due(900, 2500)
    assert not cfg.anchor_due(1000, 1999)
    assert not EvalConfig().anchor_due(0, 10)  # no anchor named


def test_animal_shogi_plays_its_anchor_too(tmp_path: Path, fairy_path: str) -> None:
    config = tiny("animal_shogi", fairy_path, anchor_games=2)
    Trainer(config, tmp_path / "run", threads=1, progress=False).run(iterations=1, progress=False)
    row = read_metrics(tmp_path / "run" / "metrics.jsonl")[0]
    assert row["anchor_wins"] + row["anchor_draws"] + row["anchor_losses"] == 2


def write_run(folder: Path, game: str, algo: str, points: list[tuple[int, float]]) -> Path:
    """A fake run folder: its config.toml and a metrics line per (evaluations, anchor score)."""
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(f'game = "{game}"\nalgo = "{algo}"\nseed = 0\n\n[klent]\npreset = "klent"\n')
    lines = [{"iteration": i + 1, "simulator_evaluations": x, "samples": x, "anchor_score": y}
             for i, (x, y) in enumerate(points)]
    lines.insert(1, {"iteration": 0, "simulator_evaluations": 5, "samples": 5})  # no anchor here
    (folder / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def test_plot_efficiency_groups_seeds_draws_the_figure_and_prints_the_reach_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = [10**3, 10**4, 10**5, 10**6, 10**7]
    runs = [
        write_run(tmp_path / "gardner-klent-s0", "gardner", "klent", list(zip(grid, [0.1, 0.5, 0.7, 0.8, 0.9]))),
        write_run(tmp_path / "gardner-klent-s1", "gardner", "klent", list(zip(grid, [0.1, 0.3, 0.7, 0.8, 0.9]))),
        write_run(tmp_path / "gardner-gaz-s0", "gardner", "gumbel-az", list(zip(grid, [0.0, 0.1, 0.3, 0.7, 0.8]))),
        write_run(tmp_path / "gardner-gaz-s1", "gardner", "gumbel-az", list(zip(grid, [0.0, 0.1, 0.2, 0.4, 0.6]))),
        write_run(tmp_path / "shogi-klent-s0", "animal_shogi", "klent", list(zip(grid, [0.1, 0.2, 0.3, 0.4, 0.45]))),
    ]
    png = tmp_path / "efficiency.png"
    assert klent_main(["plot", "--efficiency", *map(str, runs), "-o", str(png), "--reach", "0.5"]) == 0
    assert png.read_bytes().startswith(b"\x89PNG") and png.stat().st_size > 10_000
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith(("gardner", "animal"))]
    table = {(row[0], row[1]): row for row in rows}
    klent_reach = [1e4, 10**4.5]  # seed 0 reaches 0.5 at 1e4, seed 1 half-way (in log) to 1e5
    gaz_reach = [10**5.5, 10**6.5]
    klent_mean, gaz_mean = math.sqrt(klent_reach[0] * klent_reach[1]), math.sqrt(gaz_reach[0] * gaz_reach[1])
    klent_row, gaz_row = table[("gardner", "klent")], table[("gardner", "gumbel-az")]
    assert klent_row[2] == "2/2" and float(klent_row[3]) == pytest.approx(klent_mean, rel=1e-2)
    assert float(klent_row[4]) == pytest.approx(1e4, rel=1e-2)
    assert float(klent_row[5]) == pytest.approx(10**4.5, rel=1e-2)
    assert klent_row[6] == "1.00x"
    assert gaz_row[2] == "2/2" and float(gaz_row[3]) == pytest.approx(gaz_mean, rel=1e-2)
    assert gaz_row[6] == f"{gaz_mean / klent_mean:.2f}x" == "56.23x"  # 10 ** (6 - 4.25)
    shogi = table[("animal_shogi", "klent")]
    assert shogi[2] == "0/1" and shogi[3] == "-" and "not by 1e+07" in " ".join(shogi)

    # Runs without anchor rows are left out; grouping by a setting the configs lack is an error.
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "config.toml").write_text('game = "gardner"\nalgo = "klent"\n')
    (bare / "metrics.jsonl").write_text(json.dumps({"iteration": 1, "simulator_evaluations": 8}) + "\n")
    empty = tmp_path / "empty"  # a run of the grid that has not finished an iteration yet
    empty.mkdir()
    assert klent_main(["plot", "--efficiency", str(runs[0]), str(bare), str(empty), "-o", str(png)]) == 0
    out = capsys.readouterr().out
    assert "bare: no anchor evaluation yet, left out" in out
    assert f"{empty}: no complete iteration in metrics.jsonl yet, left out" in out
    assert klent_main(["plot", "--efficiency", str(runs[0]), "--group-by", "net.blocks", "-o", str(png)]) == 2
    assert "no setting 'net.blocks'" in capsys.readouterr().err


@pytest.mark.parametrize(("key", "value", "named"), [
    ("anchor_options", '{"Skil Level" = 3}', "has no option 'Skil Level'"),
    ("anchor", '"no-such-engine-here"', "[eval] anchor: cannot start 'no-such-engine-here'"),
    ("anchor_go", '"deph 2"', "[eval] anchor_go: UCI search limit 'deph 2'"),
    ("anchor_games", "3", "[eval] anchor_games must be even"),
])
def test_a_bad_anchor_is_a_one_line_error_before_any_training(
    tmp_path: Path, fairy_path: str, capsys: pytest.CaptureFixture[str], key: str, value: str, named: str
) -> None:
    config = config_to_toml(tiny("gardner", fairy_path))
    path = tmp_path / "bad.toml"
    path.write_text(re.sub(rf"^{key} = .*$", f"{key} = {value}", config, count=1, flags=re.MULTILINE))
    assert klent_main(["train", "--config", str(path), "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert named in err and len(err.splitlines()) == 1
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


def test_an_anchor_for_a_game_uci_does_not_play_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "countup.toml"
    path.write_text((CONFIGS / "countup_cpu.toml").read_text() + 'anchor = "fairy-stockfish"\n')
    with pytest.raises(ValueError, match=r"\[eval\] anchor plays UCI games .* not countup"):
        load_config(path)


def test_go_limits_read_the_words_an_engine_obeys() -> None:
    assert go_limits("") == {}
    assert go_limits("depth 2 nodes 400") == {"depth": 2, "nodes": 400}
    for bad in ("depth", "depth two", "depth 0", "wtime 100", "depth 2 nodes"):
        with pytest.raises(ValueError, match="UCI search limit"):
            go_limits(bad)


def test_the_efficiency_configs_differ_only_in_the_algorithm_its_collection_window_and_budget() -> None:
    for game in ("gardner", "animal_shogi"):
        klent_run = load_config(CONFIGS / f"{game}_klent_cpu.toml")
        gaz_run = load_config(CONFIGS / f"{game}_gumbel_az_cpu.toml")
        assert (klent_run.algo, gaz_run.algo) == ("klent", "gumbel-az") and klent_run.game == gaz_run.game == game
        assert klent_run.eval.anchor == "fairy-stockfish" and klent_run.eval.anchor_every_evaluations > 0
        # The paper's appendix C: a search-based iteration plays 256 moves per game, a model-free one 2048.
        assert klent_run.selfplay.steps == 8 * gaz_run.selfplay.steps
        same = dataclasses.replace(gaz_run, algo="klent", selfplay=klent_run.selfplay, iterations=klent_run.iterations)
        assert same == klent_run


def test_klent_train_seed_overrides_the_config_of_a_new_run_only(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "countup.toml"
    config.write_text((CONFIGS / "countup_cpu.toml").read_text().replace("iterations = 300", "iterations = 1"))
    out = tmp_path / "run"
    assert klent_main(["train", "--config", str(config), "--seed", "7", "--out", str(out), "--no-progress"]) == 0
    assert load_config(out / "config.toml").seed == 7
    assert klent_main(["train", "--out", str(out), "--resume", "--seed", "8", "--no-progress"]) == 2
    assert "--seed cannot change a run being resumed" in capsys.readouterr().err
