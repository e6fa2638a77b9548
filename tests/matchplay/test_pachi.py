"""Pachi in the bench: `klent match` against the real Pachi (built by scripts/install-pachi.sh),
and the GTP habits of Pachi's that matchplay meets: a version that goes on with a chat greeting,
time commands read as whole seconds, dead groups listed one per line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from klent.engine.games.sgf import read_sgf
from klent.matchplay import engine_process
from klent.matchplay.engine_process import GtpProcess, find_program
from klent.matchplay.go_arena import gtp_engine_name, gtp_seconds

REPO = Path(__file__).resolve().parents[2]
# GNU Go as a cheap referee (see test_match.py's CHEAP_REFEREE): the score is not what these test.
CHEAP_REFEREE = "--mode gtp --chinese-rules --level 0"
# Pachi as the bench plays it: 500 playouts a move (its least: below, it aborts), one thread, no
# thinking on the opponent's time (on by default), dead stones captured before it passes.
PACHI = "pachi -t =500 threads=1,pondering=0,pass_all_alive"
PACHI_NAME = "Pachi UCT 11.99 (Genjo-devel)"


def klent_match(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "klent", "match", *args], capture_output=True, text=True,
                          timeout=300)


def test_klent_match_plays_pachi_at_fixed_playouts_with_gnugo_as_referee(
    untrained_model, gnugo_path, pachi_path, tmp_path
) -> None:
    """Two short games against Pachi named as the docs name it, a bare `pachi`: no forfeit on
    either side, legal records, and Pachi named without its KGS greeting."""
    model = untrained_model("go9")
    ours = f"{sys.executable} -m klent gtp --model {model} --mode reactive --resign-threshold 0"
    out = tmp_path / "match"
    completed = klent_match("--engine1", ours, "--engine2", PACHI, "--game", "go9", "--games", "2",
                            "--max-moves", "24", "--time-per-move", "5", "--referee", f"{gnugo_path} {CHEAP_REFEREE}",
                            "--out", str(out))
    assert completed.returncode == 0, completed.stderr
    report = json.loads((out / "summary.json").read_text())
    assert report["engine_names"][1] == PACHI_NAME
    games = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert sorted(g["first"] for g in games) == [0, 1]
    for g in games:
        assert "referee score" in g["reason"] or g["reason"] == "resignation", g  # no forfeit
        record = read_sgf((out / g["record"]).read_bytes())  # refuses an illegal move
        assert len(record.moves) == g["moves"] and record.result == g["result"]
        assert (record.black, record.white)[1 - g["first"]] == PACHI_NAME


def test_a_time_per_move_reaches_pachi_in_whole_seconds(untrained_model, gnugo_path, pachi_path, tmp_path) -> None:
    """GTP's time commands take whole seconds: Pachi reads ``time_settings 0 0.5 1`` as a
    byo-yomi of 0 seconds and aborts, so half a second a move reaches it as 1 (within the grace)."""
    model = untrained_model("go9")
    ours = f"{sys.executable} -m klent gtp --model {model} --mode reactive --resign-threshold 0"
    out = tmp_path / "match"
    completed = klent_match("--engine1", ours, "--engine2", f"{pachi_path} threads=1,pondering=0", "--games", "1",
                            "--max-moves", "10", "--time-per-move", "0.5", "--referee",
                            f"{gnugo_path} {CHEAP_REFEREE}", "--out", str(out))
    assert completed.returncode == 0, completed.stderr
    (game,) = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert game["reason"] == "move cap, referee score", game
    assert "time_settings 0 1/1*0" in (out / "engine2.stderr.log").read_text()  # Pachi's own echo of it
    assert [gtp_seconds(s) for s in (0.05, 0.5, 1.0, 1.5, 10.0)] == [1, 1, 1, 1, 10]


def test_pachi_lists_each_dead_group_on_a_line_of_its_own(pachi_path) -> None:
    """`final_status_list dead` as Pachi answers it, one group a line, is read whole; and with
    ``pass_all_alive`` Pachi calls every stone alive, so such a Pachi cannot be a referee."""
    moves = [f"{colour} {column}{row}" for row in range(1, 10) for colour, column in (("b", "D"), ("w", "F"))]
    # Dead in the other side's area, each in atari: White's B2 and B8, Black's H5.
    moves += ["b A2", "w B2", "b B1", "w B8", "b B3", "w H4", "b A8", "w H6", "b B9", "w J5", "b B7", "w pass",
              "b H5"]
    for options, dead, score in (("", ["B2", "B8", "H5"], "W+7.5"), (",pass_all_alive", [], "W+3.5")):
        with GtpProcess(f"{pachi_path} -s 1 -t =500 threads=1{options}") as pachi:  # -s: its random seed
            for command in ["boardsize 9", "clear_board", "komi 7.5", *(f"play {move}" for move in moves)]:
                pachi.send(command)
            reply = pachi.send("final_status_list dead", timeout=60.0)
            assert sorted(reply.split()) == dead and len(reply.splitlines()) == len(dead), reply
            assert pachi.send("final_score", timeout=60.0) == score


def test_the_engine_name_leaves_out_pachis_greeting() -> None:
    greeting = ("11.99 (Genjo-devel): If you believe you have won but I am still playing, please help me "
                "understand by capturing all dead stones. Anyone can send me 'winrate' in private chat to get "
                "my assessment of the position.  Have a nice game!")
    assert gtp_engine_name("Pachi UCT", greeting) == PACHI_NAME
    assert gtp_engine_name("GNU Go", "3.8") == "GNU Go 3.8"
    assert gtp_engine_name("klent", "") == "klent"
    assert gtp_engine_name("Leela Zero", "0.17\nsecond line") == "Leela Zero 0.17"


def test_a_program_in_the_virtualenv_is_found_first_and_run_by_its_bare_name(tmp_path, monkeypatch) -> None:
    """`find_program` looks in the virtualenv's bin/ (where Pachi is built), then PATH, then
    /usr/games; an engine named without a path runs the program it finds."""
    scripts, elsewhere = tmp_path / "venv-bin", tmp_path / "path-bin"
    for folder, says in ((scripts, "virtualenv"), (elsewhere, "path")):
        folder.mkdir()
        program = folder / "fake-engine"
        program.write_text(f"#!/bin/sh\nread line\nprintf '= {says}\\n\\n'\n")
        program.chmod(0o755)
    real_get_path = sysconfig.get_path
    monkeypatch.setattr(engine_process.sysconfig, "get_path",
                        lambda name, *a, **k: str(scripts) if name == "scripts" else real_get_path(name, *a, **k))
    monkeypatch.setenv("PATH", f"{elsewhere}{os.pathsep}{os.environ['PATH']}")
    assert find_program("fake-engine") == str(scripts / "fake-engine")
    with GtpProcess("fake-engine") as engine:
        assert engine.send("name") == "virtualenv"
    (scripts / "fake-engine").unlink()
    assert find_program("fake-engine") == str(elsewhere / "fake-engine")
    assert find_program("no-such-engine-anywhere") is None


def test_the_install_script_leaves_a_working_pachi_alone(pachi_path) -> None:
    """scripts/install-pachi.sh (which `make test` runs) does nothing when klent finds a Pachi
    that answers GTP: no download, no build, the program untouched."""
    before = os.stat(pachi_path).st_mtime_ns
    done = subprocess.run(["bash", str(REPO / "scripts" / "install-pachi.sh"), sys.prefix],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == "", done
    assert os.stat(pachi_path).st_mtime_ns == before
    usage = subprocess.run(["bash", str(REPO / "scripts" / "install-pachi.sh"), "--help"], capture_output=True,
                           text=True, timeout=30)
    assert usage.returncode == 0 and usage.stdout.startswith("usage: ")


def test_the_install_script_says_in_one_line_what_is_missing(tmp_path) -> None:
    venv = tmp_path / "no-venv"
    done = subprocess.run(["bash", str(REPO / "scripts" / "install-pachi.sh"), str(venv)], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 1 and done.stderr.strip().splitlines() == [
        f"install-pachi: no virtualenv at {venv} (run make setup first)"]
