"""A hypothesis fuzz of `klent uci`, as `test_fuzz_gtp.py` is of GTP: the engine never exits or
hangs on input, never answers through its catch-all, and every ``go`` gets one ``bestmove``.

One `klent uci` process (the small untrained chess model) answers every example, so the state
one example leaves is where the next one starts.  Each line is followed by ``stop`` and
``isready``: ``readyok`` shows the engine alive and reading, and the ``bestmove`` lines are
counted against the ``go`` commands sent.  Lines come from a grammar of the whole command set
with good and broken arguments (numbers of thousands of digits, past 64 bits and past a float's
range, in every numeric place, and move lists thousands long among them), plus junk.  Examples
are derandomized: CI runs the same ones.
"""

from __future__ import annotations

import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from uci_driver import RawEngine

FUZZ = settings(
    derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck), max_examples=120
)
ANSWER_TIMEOUT = 20.0  # seconds for a line's readyok and bestmove; longer is a hang
COMMANDS = ("uci", "debug", "isready", "setoption", "register", "ucinewgame", "position", "go", "stop",
            "ponderhit", "quit")


# --- the grammar ----------------------------------------------------------------------------------

START_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -"
MOVE_TEXTS = ["e2e4", "e7e5", "g1f3", "b8c6", "e1g1", "a7a8q", "e2e5", "zz", "0000", "Nf3"]
FENS = [
    "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
    "6k1/5ppp/8/8/8/8/5PPP/4R1K1 w - - 0 1",
    "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",
    "8/8/8/8 w - -",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",
]
# Numbers far beyond any clock or count: one past int()'s 4,300 digits, 10^400 (a float
# overflows), 308 nines (a float, until multiplied), 2^63 (past 64 bits) and 2^63 - 1, 5,000
# leading zeros; and what int() alone would read: "1_000", another script's digit.
LONG_NUMBERS = ["1" * 4301, "1" + "0" * 400, "9" * 308, "-" + "9" * 400, "9223372036854775808",
                "9223372036854775807", "0" * 5000 + "7", "1e400", "1_000", "\u0661"]
# Every place a command takes a number, for the long numbers; the first four lines each left a
# `go` without its bestmove once (a float overflow), the fifth made every search of its position
# fail, the sixth planned more simulations than memory holds.
LONG_NUMBER_LINES = ["go wtime {} btime {}", "go movetime {}", "go wtime 1000 btime 1000 winc {} binc {}",
                     "go wtime 1000 btime 1000 movestogo {}", f"position fen {START_FEN} 0 {{}}", "go nodes {}",
                     "go depth {}", "go mate {}", f"position fen {START_FEN} {{}} 1 moves e2e4",
                     "setoption name Hash value {}", "setoption name Threads value {}",
                     "setoption name MultiPV value {}", "setoption name Move Overhead value {}",
                     "setoption name SyzygyProbeLimit value {}", "setoption name Simulations value {}"]
# `go searchmoves` thousands of moves long: repeated, illegal, unreadable.
LONG_MOVE_LISTS = ["go nodes 8 searchmoves " + " ".join(["e2e4", "d2d4"] * 2000),
                   "go nodes 8 searchmoves " + " ".join(["zz"] * 5000) + " e2e4",
                   "go searchmoves " + " ".join([a + b for a in ("a1", "b2", "c7", "h8") for b in MOVE_TEXTS] * 200)]
numbers = st.sampled_from(["0", "1", "5", "20", "-7", "100000000000", "1e3", "abc", ""])
option_names = st.sampled_from(["MultiPV", "Simulations", "Move Overhead", "SearchMode", "Hash",
                                "UCI_ShowWDL", "Ponder", "Threads", "NoSuchOption", "", "name"])
option_values = st.one_of(numbers, st.sampled_from(["true", "false", "reactive", "gumbel", "2"]))
go_parts = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["wtime", "btime", "winc", "binc", "movestogo", "depth",
                                   "nodes", "movetime", "mate"]), numbers).map(" ".join),
        st.sampled_from(["infinite", "ponder", "searchmoves e2e4 d2d4", "searchmoves zz", "bogus"]),
    ),
    max_size=5,
).map(lambda parts: " ".join(["go", *parts]))
position = st.tuples(
    st.one_of(st.just("startpos"), st.sampled_from(FENS).map(lambda fen: "fen " + fen)),
    st.lists(st.sampled_from(MOVE_TEXTS), max_size=4),
).map(lambda p: f"position {p[0]}" + (" moves " + " ".join(p[1]) if p[1] else ""))
long_number_lines = st.tuples(st.sampled_from(LONG_NUMBER_LINES), st.sampled_from(LONG_NUMBERS)).map(
    lambda parts: parts[0].replace("{}", parts[1]))
junk = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=30)
lines = st.one_of(
    go_parts,
    position,
    junk.map(lambda text: f"position fen {text}"),
    st.tuples(junk, st.sampled_from(["", " moves e2e4", " moves"])).map(lambda p: f"position fen {p[0]}{p[1]}"),
    st.tuples(option_names, option_values).map(lambda o: f"setoption name {o[0]} value {o[1]}"),
    st.sampled_from(["stop", "ponderhit", "isready", "ucinewgame", "uci", "debug on", "register later",
                     "position", "setoption name", "go searchmoves", "\t", "é€\x00", "go go go"]),
    junk,
    long_number_lines,
    st.sampled_from(LONG_MOVE_LISTS),
).filter(lambda text: "quit" not in text.split())


def command(line: str) -> str | None:
    """The command a line runs: unknown tokens before it are skipped, as UCI asks."""
    return next((token for token in line.split() if token in COMMANDS), None)


# --- the fuzz -------------------------------------------------------------------------------------


class Driver:
    """Sends lines to a `klent uci` process and counts its ``bestmove``s against its ``go``s."""

    def __init__(self, engine: RawEngine) -> None:
        self.engine = engine
        self.goes = 0
        self.bestmoves = 0

    def line(self, text: str) -> list[str]:
        """Send ``text``, ``stop`` and ``isready``; the output up to ``readyok`` and up to the
        ``bestmove`` of every ``go`` sent so far."""
        self.goes += command(text) == "go"
        self.engine.send(text, "stop", "isready")
        output = self.engine.until(lambda line: line == "readyok", ANSWER_TIMEOUT)
        self.bestmoves += sum(line.startswith("bestmove") for line in output)
        while self.bestmoves < self.goes:
            output += self.engine.until(lambda line: line.startswith("bestmove"), ANSWER_TIMEOUT)
            self.bestmoves += 1
        assert self.bestmoves == self.goes, (text[:80], output[-3:])
        return output


def test_fuzzed_lines_never_kill_hang_or_lose_a_bestmove(untrained_model) -> None:
    engine = RawEngine([sys.executable, "-m", "klent", "uci", "--model", untrained_model("chess")])
    driver = Driver(engine)
    engine.ready(timeout=60)
    seen: list[str] = []

    @FUZZ
    @given(st.lists(lines, min_size=1, max_size=4))
    def run(sequence: list[str]) -> None:
        driver.line("setoption name Threads value 1")
        for text in sequence:
            output = driver.line(text)
            # The catch-alls that keep the engine alive must not be what handled the input.
            assert not [line for line in output if " failed: " in line], (text[:80], output[-3:])
            assert all(len(line) < 1000 for line in output if line.startswith("info string")), text[:80]
            seen.extend(output)

    try:
        run()
        assert not any(line.startswith("bestmove") for line in engine.quiet_for(0.3))
    finally:
        assert engine.close() == 0
    assert engine.process.stderr is not None and engine.process.stderr.read() == ""
    # The grammar reached the search, not only the error paths.
    assert sum(line.startswith("bestmove") and line != "bestmove (none)" for line in seen) > 30
    assert any(" pv " in line for line in seen)
