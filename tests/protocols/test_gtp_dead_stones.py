"""Dead stones at the end of a Go game: what klent's GTP engine counts, when it passes, and
that GNU Go, as the referee, agrees (klent/protocols/gtp.py, "Dead stones" and "Passing").

The model (conftest's ``ownership_model``) predicts that Black owns columns A-E and White F-J.
The position: a Black wall on E and a White wall on F, and three White stones in atari inside
Black's side -- dead to any referee, but alive to a count of the stones as they stand, which
then hands White the whole left side (its points touch both colours).
"""

from __future__ import annotations

import sys
import time

import pytest

from klent.matchplay.engine_process import GtpProcess

BLACK = [f"E{row}" for row in range(1, 10)] + ["A2", "A3", "B4", "C3", "D2", "B1"]
WHITE = [f"F{row}" for row in range(1, 10)] + ["B2", "C2", "B3"]
DEAD = "B2 B3 C2"


def set_up(gtp: GtpProcess, stones: dict[str, list[str]]) -> None:
    gtp.send("boardsize 9")
    gtp.send("clear_board")
    gtp.send("komi 7.5")
    for colour, vertices in stones.items():
        for vertex in vertices:
            gtp.send(f"play {colour} {vertex}")


@pytest.fixture()
def klent(ownership_model):
    process = GtpProcess([sys.executable, "-m", "klent", "gtp", "--model", ownership_model, "--simulations", "8",
                          "--resign-threshold", "0", "--seed", "1"])
    yield process
    process.close()


@pytest.fixture()
def gnugo(gnugo_path):
    process = GtpProcess([gnugo_path, "--mode", "gtp", "--chinese-rules", "--level", "1"])
    yield process
    process.close()


def test_the_score_and_dead_stones_are_a_referees(klent, gnugo) -> None:
    for engine in (klent, gnugo):
        set_up(engine, {"b": BLACK, "w": WHITE})
    dead = [set(engine.send("final_status_list dead").split()) for engine in (klent, gnugo)]
    assert dead[0] == dead[1] == set(DEAD.split())
    # Black: columns A-E (45 points); White: F-J (36); komi 7.5.
    assert klent.send("final_score") == gnugo.send("final_score") == "B+1.5"
    alive = klent.send("final_status_list alive").split("\n")
    assert not any(set(chain.split()) & set(DEAD.split()) for chain in alive)
    assert any("E1" in chain.split() for chain in alive)


def test_no_pass_with_own_dead_stones_on_the_board(klent, ownership_model) -> None:
    """White would win a count of the stones as they stand, and loses the referee's count:
    after Black's pass White plays on instead of ending the game.  With --all-stones-alive (the
    judgement before the ownership head) it passes into the lost count, and scores as before."""
    set_up(klent, {"b": BLACK, "w": WHITE})
    klent.send("play b pass")
    assert klent.send("genmove w").lower() != "pass"
    before = GtpProcess([sys.executable, "-m", "klent", "gtp", "--model", ownership_model, "--simulations", "8",
                         "--resign-threshold", "0", "--all-stones-alive"])
    try:
        set_up(before, {"b": BLACK, "w": WHITE})
        before.send("play b pass")
        assert before.send("genmove w").lower() == "pass"
        assert before.send("final_status_list dead") == "" and before.send("final_score").startswith("W+")
    finally:
        before.close()


def test_dead_opponent_stones_are_captured_before_passing(klent) -> None:
    """Black wins the referee's count but not the stones' count: after White's pass Black
    plays on (the capture C1 when its network would pass) until the stones are off the board,
    then passes."""
    set_up(klent, {"b": BLACK, "w": WHITE})
    klent.send("play w pass")
    assert klent.send("genmove b").lower() != "pass"
    klent.send("undo")
    klent.send("play b C1")  # the capture
    klent.send("play w pass")
    assert klent.send("genmove b").lower() == "pass"


def test_a_won_game_ends_with_a_pass(klent, gnugo) -> None:
    """Without the dead stones Black wins either count: it passes after White's pass."""
    white = [v for v in WHITE if v not in DEAD.split()]
    set_up(klent, {"b": BLACK, "w": white})
    klent.send("play w pass")
    assert klent.send("genmove b").lower() == "pass"
    set_up(gnugo, {"b": BLACK, "w": white})
    assert gnugo.send("final_score") == klent.send("final_score") == "B+1.5"


def analysis_line(gtp: GtpProcess, command: str) -> str:
    """The first ``info`` line of a streamed analysis, which the next command then stops."""
    gtp.process.stdin.write(command + "\n")
    gtp.process.stdin.flush()
    assert gtp._next_line(command, time.monotonic() + 30) == "="
    line = gtp._next_line(command, time.monotonic() + 30)
    assert gtp.send("name") == "klent"  # ends the stream; its empty line is skipped as noise
    return line


def test_kata_analyze_reports_the_ownership(klent, untrained_model) -> None:
    """``ownership true``: 81 values after the moves, +1 = the side to move's, row by row from
    A9; a model without the head prints none."""
    set_up(klent, {"b": BLACK, "w": WHITE})
    line = analysis_line(klent, "kata-analyze b interval 10 ownership true")
    assert line.startswith("info move ")
    values = [float(v) for v in line.split(" ownership ")[1].split()]
    assert len(values) == 81
    rows = [values[9 * r : 9 * r + 9] for r in range(9)]
    assert all(v > 0.99 for row in rows for v in row[:5]) and all(v < -0.99 for row in rows for v in row[5:])
    white = analysis_line(klent, "kata-analyze w interval 10 ownership true")
    assert [-float(v) for v in white.split(" ownership ")[1].split()] == pytest.approx(values)
    assert "ownership" not in analysis_line(klent, "kata-analyze b interval 10")
    plain = GtpProcess([sys.executable, "-m", "klent", "gtp", "--model", untrained_model("go9")])
    try:
        assert "ownership" not in analysis_line(plain, "kata-analyze b interval 10 ownership true")
    finally:
        plain.close()
