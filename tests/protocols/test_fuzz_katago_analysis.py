"""A hypothesis fuzz of `klent analysis`, as `test_fuzz_gtp.py` is of GTP: the engine never exits
or hangs on input, every line it writes is one JSON object, and every query it refuses gets an
error line carrying the query's ``id``.

One process (a tiny model, small visit counts) answers every example.  Each example is one
line: a query drawn from a grammar of the protocol's fields with good and broken values, the
same with a hostile text in one of its places (numbers of thousands of digits or past a
double's range, NaN and Infinity, arrays and objects nested past the engine's limit or the JSON
reader's), or junk; the driver then waits for the query to end (an error line, or a final answer
for each turn it asked), so a hang is a timeout.  Examples are derandomized: CI runs the same ones.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from analysis_driver import AnalysisProcess
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from klent.protocols.katago_analysis import decode_line

FUZZ = settings(
    derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck), max_examples=90
)

anything = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
vertex = st.sampled_from(["E5", "C3", "G7", "pass", "A1", "J9", "Z9", "(2,3)", "(9,9)", "", "I5", "e5"])
move = st.tuples(st.sampled_from(["B", "W", "X", "b"]), vertex).map(list)
FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "moves": st.lists(move, max_size=6) | anything,
    "initialStones": st.lists(move, max_size=3) | anything,
    "initialPlayer": st.sampled_from(["B", "W", "Q"]) | anything,
    "rules": st.sampled_from(["chinese", "japanese", "tromp-taylor", "korean", "aga", "bogus"])
    | st.just({"scoring": "TERRITORY"}) | anything,
    "komi": st.sampled_from([7.5, 0.5, -3, 151, float("nan")]) | anything,
    "boardXSize": st.sampled_from([9, 9, 19, 0]) | anything,
    "boardYSize": st.sampled_from([9, 9, 13]) | anything,
    "analyzeTurns": st.lists(st.integers(-1, 7), max_size=3) | anything,
    "maxVisits": st.integers(-2, 12) | anything,
    "includeOwnership": st.booleans() | anything,
    "includeMovesOwnership": st.booleans(),
    "includePolicy": st.booleans() | anything,
    "includePVVisits": st.booleans(),
    "avoidMoves": st.lists(st.fixed_dictionaries({"player": st.sampled_from(["B", "W"]),
                                                  "moves": st.lists(vertex, max_size=3),
                                                  "untilDepth": st.integers(0, 3)}), max_size=2) | anything,
    "overrideSettings": st.fixed_dictionaries({}, optional={
        "reportAnalysisWinratesAs": st.sampled_from(["BLACK", "WHITE", "SIDETOMOVE", "RED"]),
        "maxTime": st.sampled_from([0.5, -1, 2]), "wideRootNoise": st.sampled_from([0.04, -1]),
        "humanSLProfile": st.just("rank_5k")}) | anything,
    "priority": st.integers(-10, 10) | anything,
    "reportDuringSearchEvery": st.sampled_from([0.01, 0, -1]) | anything,
}
query = st.fixed_dictionaries(
    {"id": st.sampled_from(["q"]) | anything},
    optional={**FIELDS, "action": st.sampled_from(["query_version", "clear_cache", "terminate", "fly"]),
              "terminateId": st.just("q")},
)
# Hostile texts, each put in one place of a query: numbers of thousands of digits, past a double's
# range or at its edges (the first two ended the engine once: float() overflowed), NaN, Infinity,
# and nesting.  Nesting just under the JSON reader's limit ended it too, in an action, whose echo
# recursed deeper; that band depends on the stack, and test_katago_analysis.py sweeps it.
HOSTILE = ["1" * 4000, "-" + "9" * 400, "9" * 308, "1" * 5000, "1e400", "-1e400", "1e-400", "5e-324", "NaN",
           "Infinity", "-Infinity", "18446744073709551616"]
DEPTHS = (65, 300, 100_000)  # just past the engine's MAX_NESTING, within the JSON reader's limit, past it
NESTED = ["[" * depth + "]" * depth for depth in DEPTHS] + ['{"a":' * depth + "1" + "}" * depth for depth in DEPTHS]
PLACE = "\x00here"  # where the hostile text goes, once the query is JSON text
# A query that gets as far as its analysis (a few visits), and an action, which is echoed.
BASES = [{"id": "q", "rules": "chinese", "komi": 7.5, "boardXSize": 9, "boardYSize": 9, "moves": [], "maxVisits": 4},
         {"id": "q", "action": "query_version"}]
# The places: the number fields that float() read first, then every field (maxVisits aside: a huge
# one is a long analysis, as in KataGo) and inside some.
SLOTS: list[tuple[str, Any]] = [
    ("komi", PLACE), ("reportDuringSearchEvery", PLACE), ("overrideSettings", {"maxTime": PLACE}),
    ("overrideSettings", {"wideRootNoise": PLACE}), ("x", PLACE), ("moves", [["B", PLACE]]),
    ("analyzeTurns", [0, PLACE]), ("avoidMoves", [{"player": "B", "moves": ["E5"], "untilDepth": PLACE}]),
    *((name, PLACE) for name in [*FIELDS, "id"] if name != "maxVisits")]
hostile = st.tuples(st.sampled_from(BASES), st.sampled_from(SLOTS), st.sampled_from(HOSTILE + NESTED)).map(
    lambda parts: json.dumps({**parts[0], parts[1][0]: parts[1][1]}).replace(json.dumps(PLACE), parts[2]))
line = query.map(json.dumps) | hostile | st.text(max_size=30) | st.just("{") | st.just("[" * 5000)


@pytest.fixture(scope="module")
def engine(ownership_model: str):
    process = AnalysisProcess("--model", ownership_model, "--threads", "1", "--max-visits", "8")
    yield process
    process.kill()


def turns_asked(raw: Any) -> int:
    turns = raw.get("analyzeTurns") if isinstance(raw, dict) else None
    return len(turns) if isinstance(turns, list) and turns else 1


@FUZZ
@given(text=line)
def test_every_line_ends_in_an_answer(engine: AnalysisProcess, text: str) -> None:
    try:
        raw = decode_line(text)
    except (ValueError, RecursionError):
        raw = None
    engine.send(text.replace("\n", " "))
    if not text.replace("\n", " ").strip():  # a blank line is no query, and is not answered (as KataGo)
        raw = {"id": "blank", "action": "clear_cache"}
        engine.send(raw)
    id = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else None
    is_action = isinstance(raw, dict) and "action" in raw
    finals = 0
    while True:
        answer = engine.next()
        if "error" in answer:
            assert answer.get("id") == id, (text, answer)
            break
        if "warning" in answer:
            continue
        assert answer.get("id") == id, (text, answer)
        if is_action:
            break
        finals += answer.get("isDuringSearch") is False
        if finals == turns_asked(raw):
            break
    engine.send({"id": "alive", "action": "query_version"})
    assert engine.next()["id"] == "alive"
