"""A hypothesis fuzz of the GTP front door, as tests/protocols/test_uci.py has for UCI: `klent gtp` never
exits or hangs on input, and a command that fails leaves the game as it was.

One `klent gtp` process (small untrained 9x9 model, 16 simulations) answers every example, so
the state one example leaves is where the next one starts.  Each input line is followed by a
``name`` command with an id of ours; its answer shows the engine is alive and answering, and
ends whatever the line started (an analysis stream).  Lines come from a grammar of the whole
command set with good and broken arguments (numbers of thousands of digits among them), plus
junk; files for ``loadsgf`` and ``printsgf`` live in a temporary folder (no devices: a bug
there would damage the machine).  Examples are derandomized: CI runs the same ones.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from klent.matchplay.engine_process import GtpProcess

FUZZ = settings(
    derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck), max_examples=85
)
ANSWER_TIMEOUT = 30.0  # seconds for a line and its sentinel; longer is a hang
SENTINEL_ID = 987654


class Driver:
    """Sends raw lines to a `klent gtp` process and reads what each line produced."""

    def __init__(self, process: GtpProcess) -> None:
        self.process = process

    def line(self, text: str) -> list[str]:
        """Write ``text`` and the sentinel; the output lines before the sentinel's answer."""
        stdin = self.process.process.stdin
        assert stdin is not None
        stdin.write(f"{text}\n{SENTINEL_ID} name\n")
        stdin.flush()
        deadline = time.monotonic() + ANSWER_TIMEOUT
        output = []
        while (line := self.process._next_line(text, deadline)) != f"={SENTINEL_ID} klent":
            output.append(line)
        assert self.process._next_line(text, deadline) == ""
        return output

    def board(self) -> list[str]:
        output = self.line("showboard")
        assert output[0].startswith("=") and output[-1] == "", output
        return output


def failed(output: list[str]) -> bool:
    """Whether the line's answer was a GTP error (a ``?`` reply)."""
    return any(line.startswith("?") for line in output)


# --- the grammar ----------------------------------------------------------------------------------

# Numbers far beyond any board or clock: one past int()'s 4,300 digits, 10^400 (float() overflows),
# 308 nines (finite as a float, infinite once multiplied), and 2^31 (just past GTP's int range).
LONG_NUMBERS = ["1" * 4301, "1" + "0" * 400, "9" * 308, "2147483648", "0" * 5000 + "7"]
# Every place a command takes a number or a vertex, for the long numbers; the first six lines
# each killed the engine once (int()'s digit limit, float overflow, int(inf)).
LONG_NUMBER_LINES = ["play b A{}", "set_free_handicap {}", "lz-analyze interval {}", "lz-analyze b {}",
                     "lz-analyze b 1{}", "kata-genmove_analyze b 1{}", "set_free_handicap C3 A{}", "play w {}",
                     "kata-analyze w maxmoves {}", "lz-analyze minmoves {}", "komi {}", "boardsize {}",
                     "fixed_handicap {}", "place_free_handicap {}", "time_settings {} 5 1", "time_settings 10 {} 1",
                     "time_settings 10 5 {}", "time_left b {} 0", "time_left w 10 {}",
                     "kgs-time_settings byoyomi 10 {} 3", "kgs-time_settings canadian {} 10 {}"]
colours = st.sampled_from(["b", "w", "black", "white", "B", "W", "x", "", "bw"])
vertices = st.sampled_from(["E5", "C3", "D4", "G7", "A1", "J9", "pass", "PASS", "resign", "I5", "T19",
                            "Z1", "E0", "E10", "e5", "", "5E", "A"])
numbers = st.sampled_from(["0", "1", "2", "5", "9", "10", "19", "-1", "7.5", "-7.5", "150", "150.5", "0.5",
                           "1e308", "nan", "inf", "-inf", "1_000", "\u0661", "\uff19", "abc", "",
                           "99999999999999999999"])
long_number_lines = st.tuples(st.sampled_from(LONG_NUMBER_LINES), st.sampled_from(LONG_NUMBERS)).map(
    lambda parts: parts[0].replace("{}", parts[1]))
junk = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=25)
ids = st.sampled_from(["", "", "", "1 ", "42 ", "007 ", "-1 ", "1.5 "])


def command(name: str, *args: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(*args).map(lambda values: " ".join([name, *values]).rstrip())


def analysis(name: str) -> st.SearchStrategy[str]:
    options = st.lists(
        st.sampled_from(["10", "interval 5", "interval 0", "interval -3", "interval x", "minmoves 2",
                         "maxmoves 3", "maxmoves 0", "ownership true", "ownership maybe", "avoid b E5 1",
                         "allow w pass 1", "bogus"]),
        max_size=3,
    )
    return st.tuples(colours, options).map(lambda parts: " ".join([name, parts[0], *parts[1]]).rstrip())


def file_commands(folder: Path) -> st.SearchStrategy[str]:
    loadable = st.sampled_from([str(folder / name) for name in SGF_FILES] + [
        str(folder / "missing.sgf"), str(folder), str(folder / "fifo"), "", "no such file"])
    writable = st.sampled_from([str(folder / "out.sgf"), str(folder / "games" / "out.sgf"), str(folder),
                                str(folder / "missing" / "out.sgf"), str(folder / "fifo"), ""])
    return st.one_of(
        command("loadsgf", loadable, st.sampled_from(["", "1", "3", "999", "-1", "x"])),
        command("printsgf", writable),
    )


SGF_FILES = {
    "game.sgf": "(;GM[1]FF[4]SZ[9]KM[6.5];B[ee];W[cc];B[gg])",
    "setup.sgf": "(;GM[1]FF[4]SZ[9]AB[aa][bb]AW[cc]PL[W])",
    "big.sgf": "(;GM[1]FF[4]SZ[19];B[pd])",
    "zlib.sgf": "(;FF[4]CA[zlib]SZ[9]PB[abc];B[ee])",
    "latin1.sgf": "(;FF[4]CA[latin-1]SZ[9]PB[\xe9];B[ee])",
    "komi.sgf": "(;FF[4]SZ[9]KM[1e308];B[ee])",
    "illegal.sgf": "(;FF[4]SZ[9];B[ee];W[ee])",
    "broken.sgf": "(;FF[4]SZ[9];B[ee",
    "empty.sgf": "",
}


def lines(folder: Path) -> st.SearchStrategy[str]:
    commands = st.one_of(
        command("play", colours, vertices),
        command("genmove", colours),
        command("reg_genmove", colours),
        command("kgs-genmove_cleanup", colours),
        st.sampled_from(["undo", "undo extra", "clear_board", "showboard", "final_score", "list_commands",
                         "protocol_version", "name", "version", "known_command play", "known_command",
                         "known_command quit", "boardsize", "komi", "play", "genmove", "time_left",
                         "final_status_list dead", "final_status_list alive", "final_status_list seki",
                         "final_status_list", "final_status_list x"]),
        command("boardsize", st.sampled_from(["9", "9", "13", "19", "1", "0", "25", "26", "-9", "9.0", "x"])),
        command("komi", numbers),
        command("fixed_handicap", numbers),
        command("place_free_handicap", numbers),
        command("set_free_handicap", vertices, vertices, vertices),
        command("time_settings", numbers, numbers, numbers),
        command("kgs-time_settings", st.sampled_from(["none", "absolute", "byoyomi", "canadian", "x"]),
                numbers, numbers, numbers),
        command("time_left", colours, numbers, numbers),
        analysis("lz-analyze"),
        analysis("kata-analyze"),
        analysis("lz-genmove_analyze"),
        analysis("kata-genmove_analyze"),
        file_commands(folder),
        junk,
        st.sampled_from(["", "#", "# comment", "   ", "\t", "\x00", "\x1b[A", "é€", "play\x00b E5", "= 1", "? x"]),
        long_number_lines,
    )
    line = st.tuples(ids, commands).map("".join)
    return line.filter(lambda text: "quit" not in text.lower())


# --- the fuzz -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("gtp-fuzz")
    for name, text in SGF_FILES.items():
        (folder / name).write_text(text, encoding="latin-1")
    (folder / "games").mkdir()
    os.mkfifo(folder / "fifo")
    return folder


def test_fuzzed_lines_never_kill_hang_or_change_the_game_on_error(untrained_model, files) -> None:
    process = GtpProcess([sys.executable, "-m", "klent", "gtp", "--model", untrained_model("go9"),
                          "--simulations", "16", "--seed", "1"])
    driver = Driver(process)
    counts = {"ok": 0, "failed": 0}

    @settings(FUZZ)
    @given(st.lists(lines(files), min_size=1, max_size=6))
    def run(sequence: list[str]) -> None:
        for text in sequence:
            before = driver.board()
            output = driver.line(text)
            if failed(output):
                counts["failed"] += 1
                assert driver.board() == before, (text, output)
            elif output:
                counts["ok"] += 1

    try:
        run()
        assert process.process.poll() is None
        assert process.send("protocol_version") == "2"
    finally:
        process.close()
    assert process.process.returncode == 0
    print(f"GTP fuzz: {counts['ok']} commands answered, {counts['failed']} refused")
    assert counts["ok"] > 50 and counts["failed"] > 50, counts
