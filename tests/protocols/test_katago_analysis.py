"""`klent analysis`: KataGo's JSON analysis protocol, driven as a subprocess the way its clients
drive it, against the spec's fields (KataGo's docs/Analysis_Engine.md).

The model is `ownership_model` (conftest): its ownership head says Black owns columns A-E and
White F-J, which makes the perspective of every reported value checkable.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from analysis_driver import AnalysisProcess

import klent.cli
from klent.protocols import katago_analysis
from klent.protocols.katago_query import QueryError, parse_query

BASE: dict[str, Any] = {"rules": "chinese", "komi": 7.5, "boardXSize": 9, "boardYSize": 9, "moves": []}
MOVE_FIELDS = {"move", "visits", "winrate", "scoreLead", "scoreMean", "scoreStdev", "prior", "utility", "lcb",
               "order", "pv"}
LONG = 10_000_000  # visits of an analysis that only `terminate` ends


@pytest.fixture
def engine(ownership_model: str):
    process = AnalysisProcess("--model", ownership_model, "--threads", "1", "--analysis-threads", "2", "--seed", "1")
    yield process
    process.kill()


def query(id: str, **fields: Any) -> dict[str, Any]:
    return {"id": id, **BASE, **fields}


def test_an_answer_has_the_spec_fields(engine: AnalysisProcess) -> None:
    engine.send(query("q", moves=[["B", "E5"], ["W", "C3"]], analyzeTurns=[0, 1, 2], maxVisits=40,
                      includeOwnership=True, includeMovesOwnership=True, includePolicy=True, includePVVisits=True))
    answers = {}
    while len(answers) < 3:
        answer = engine.final("q")
        answers[answer["turnNumber"]] = answer
    assert sorted(answers) == [0, 1, 2]
    for turn, answer in answers.items():
        assert answer["id"] == "q" and answer["isDuringSearch"] is False
        infos = answer["moveInfos"]
        assert infos and [m["order"] for m in infos] == list(range(len(infos)))
        assert [m["visits"] for m in infos] == sorted((m["visits"] for m in infos), reverse=True)
        for info in infos:
            assert MOVE_FIELDS <= info.keys()
            assert info["pv"][0] == info["move"] and len(info["pvVisits"]) == len(info["pv"])
            assert info["pvVisits"][0] == info["visits"] >= 1
            assert 0 <= info["winrate"] <= 1 and 0 <= info["prior"] <= 1 and info["lcb"] <= info["winrate"]
            assert len(info["ownership"]) == 81
        root = answer["rootInfo"]
        assert {"visits", "winrate", "scoreLead", "utility", "thisHash", "symHash"} <= root.keys()
        assert root["visits"] == 41 and sum(m["visits"] for m in infos) == 40
        assert len(answer["ownership"]) == 81
        policy = answer["policy"]
        assert len(policy) == 82 and math.isclose(sum(p for p in policy if p >= 0), 1.0, abs_tol=1e-3)
        occupied = {1: [4 * 9 + 4], 2: [4 * 9 + 4, 6 * 9 + 2]}.get(turn, [])  # E5 (row 4), C3 (row 6)
        assert all(policy[point] == -1 for point in occupied)
        assert sum(p == -1 for p in policy) == len(occupied)


def test_values_are_reported_from_the_side_asked(engine: AnalysisProcess) -> None:
    """White to move: the side to move's view calls Black's columns White's loss; BLACK's view
    calls them Black's, and turns winrate and score around."""
    moves = [["B", "E5"]]
    engine.send(query("mover", moves=moves, maxVisits=8, includeOwnership=True))
    engine.send(query("black", moves=moves, maxVisits=8, includeOwnership=True,
                      overrideSettings={"reportAnalysisWinratesAs": "BLACK"}))
    finals: dict[str, dict[str, Any]] = {}
    while len(finals) < 2:  # in whichever order they finish
        answer = engine.next()
        if answer.get("isDuringSearch") is False:
            finals[answer["id"]] = answer
    mover, black = finals["mover"], finals["black"]
    assert mover["ownership"][0] < -0.9 and mover["ownership"][8] > 0.9  # A9 Black's, J9 White's: White to move
    assert black["ownership"][0] > 0.9 and black["ownership"][8] < -0.9
    assert black["rootInfo"]["scoreLead"] == pytest.approx(-mover["rootInfo"]["scoreLead"], abs=1e-4)
    assert black["rootInfo"]["winrate"] == pytest.approx(1 - mover["rootInfo"]["winrate"], abs=1e-6)


def test_territory_rules_and_unknown_settings_are_warned_about_not_refused(engine: AnalysisProcess) -> None:
    engine.send(query("jp", rules="japanese", maxVisits=4, antiMirror=1,
                      overrideSettings={"playoutDoublingAdvantage": 1, "humanSLProfile": "rank_5k", "maxTime": 5}))
    lines = engine.until(lambda a: a.get("isDuringSearch") is False)
    warnings = {a["field"]: a["warning"] for a in lines if "warning" in a}
    assert set(warnings) == {"rules", "overrideSettings", "antiMirror"}
    assert "area scoring" in warnings["rules"]
    assert "humanSLProfile" in warnings["overrideSettings"]
    assert "playoutDoublingAdvantage" in warnings["overrideSettings"]
    assert all(a["id"] == "jp" for a in lines) and "moveInfos" in lines[-1]


def test_handicap_compensation_is_added_to_the_komi(engine: AnalysisProcess) -> None:
    stones = [["B", "C3"], ["B", "G7"]]
    engine.send(query("h", rules="chinese", komi=0.5, initialStones=stones, initialPlayer="W", maxVisits=4))
    lines = engine.until(lambda a: a.get("isDuringSearch") is False)
    assert [a["field"] for a in lines if "warning" in a] == ["whiteHandicapBonus"]
    assert lines[-1]["rootInfo"]["currentPlayer"] == "W"


@pytest.mark.parametrize(("bad", "field"), [
    ({"moves": [["B", "E5"], ["W", "E5"]]}, "moves"),
    ({"moves": [["B", "Z9"]]}, "moves"),
    ({"moves": "E5"}, "moves"),
    ({"boardXSize": 19, "boardYSize": 19}, "boardXSize"),
    ({"boardYSize": 7}, "boardYSize"),
    ({"rules": "go-as-i-like"}, "rules"),
    ({"komi": 1e9}, "komi"),
    ({"analyzeTurns": [5]}, "analyzeTurns"),
    ({"maxVisits": 0}, "maxVisits"),
    ({"includeOwnership": "yes"}, "includeOwnership"),
    ({"overrideSettings": {"reportAnalysisWinratesAs": "NOBODY"}}, "overrideSettings.reportAnalysisWinratesAs"),
    ({"initialStones": [["B", "pass"]]}, "initialStones"),
    ({"avoidMoves": [{"player": "B", "moves": ["E5"]}]}, "avoidMoves"),
    ({"priority": 1.5}, "priority"),
])
def test_a_bad_query_is_an_error_line_with_its_id_and_field(engine: AnalysisProcess, bad: dict, field: str) -> None:
    engine.send(query("bad", **bad))
    answer = engine.next()
    assert answer == {"error": answer["error"], "field": field, "id": "bad"}
    if field == "moves" and bad["moves"] != "E5":
        assert "Illegal move" in answer["error"] or "location" in answer["error"]
    engine.send({"id": "alive", "action": "query_version"})
    assert engine.next()["id"] == "alive"


def test_lines_that_are_not_queries(engine: AnalysisProcess) -> None:
    for line in ["not json", "[1, 2]", '{"moves": []}', '{"id": 5}', '{"id": "x", "action": "fly"}',
                 "[" * 100_000, '{"id": "nan", "komi": NaN, "rules": "chinese", "boardXSize": 9, "boardYSize": 9}']:
        engine.send(line)
        assert "error" in engine.next()
    assert engine.close() == 0


def test_numbers_past_a_doubles_range_nan_and_infinity_are_not_json(engine: AnalysisProcess) -> None:
    """A komi, reportDuringSearchEvery, maxTime or wideRootNoise of 4,000 digits ended `klent
    analysis` (float() of it overflows), and 1e400, NaN or Infinity in an action was answered
    "internal error" (its echo is not JSON).  KataGo's JSON reader refuses them all: so does
    klent's, and the engine reads on."""
    huge = "1" * 4000
    lines = [json.dumps(query("k", komi="@")).replace('"@"', huge),
             json.dumps(query("r", reportDuringSearchEvery="@")).replace('"@"', huge),
             json.dumps(query("t", overrideSettings={"maxTime": "@"})).replace('"@"', huge),
             json.dumps(query("w", overrideSettings={"wideRootNoise": "@"})).replace('"@"', "-" + huge),
             '{"id": "e", "action": "query_version", "x": 1e400}', '{"id": "n", "action": "clear_cache", "x": NaN}',
             '{"id": "i", "action": "query_models", "x": -Infinity}']
    for line in lines:
        engine.send(line)
        answer = engine.next()
        assert answer.keys() == {"error"} and "could not parse the query" in answer["error"], (line[:60], answer)
    engine.send({"id": "alive", "action": "query_version"})
    assert engine.next()["id"] == "alive"


@pytest.mark.parametrize(("field", "where"), [
    ("komi", "komi"), ("reportDuringSearchEvery", "reportDuringSearchEvery"),
    ("overrideSettings.maxTime", "overrideSettings.maxTime"),
    ("overrideSettings.wideRootNoise", "overrideSettings.wideRootNoise"),
])
def test_an_integer_no_float_holds_is_a_query_error(field: str, where: str) -> None:
    """The HTTP endpoint's JSON reader keeps integers of 4,000 digits, and `parse_query` let
    float() overflow on them (a 500); it refuses them by field."""
    raw: dict[str, Any] = query("q")
    if field.startswith("overrideSettings."):
        raw["overrideSettings"] = {field.split(".")[1]: 10**4000}
    else:
        raw[field] = 10**4000
    with pytest.raises(QueryError) as refused:
        parse_query(raw, [9])
    assert refused.value.field == where


def test_an_action_nested_as_deep_as_the_json_reader_goes_is_refused_not_echoed(engine: AnalysisProcess) -> None:
    """An action holding arrays nested just under the JSON reader's limit (about 990 levels) was
    read, and its echo, written from deeper in the call stack, raised RecursionError and ended
    `klent analysis`.  Nesting past MAX_NESTING is refused with the query's id."""
    for depth in range(999, 949, -1):  # from the reader's limit down
        engine.send('{"id": "deep", "action": "clear_cache", "x": ' + "[" * depth + "]" * depth + "}")
        answer = engine.next()
        assert "error" in answer, (depth, answer)
    engine.send('{"id": "deep", "action": "clear_cache", "x": ' + "{\"a\": " * 100 + "1" + "}" * 100 + "}")
    assert engine.next() == {"error": f"query nested deeper than {katago_analysis.MAX_NESTING} levels", "id": "deep"}
    engine.send({"id": "alive", "action": "query_version", "x": [[[[["as deep as KataGo's queries go"]]]]]})
    assert engine.next()["id"] == "alive"


def test_a_bug_reading_a_query_is_its_error_line_not_the_end(monkeypatch: pytest.MonkeyPatch, ownership_model: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The command loop had no catch-all (the workers had one): any bug reading a query ended
    `klent analysis`.  It is the query's error line now, and logged on stderr."""

    def bug(*args: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(katago_analysis, "parse_query", bug)
    out = io.StringIO()
    engine = katago_analysis.AnalysisEngine(katago_analysis.AnalysisConfig(model=Path(ownership_model)), out)
    engine.handle_line(json.dumps(query("q")))
    assert json.loads(out.getvalue()) == {"error": "internal error: RuntimeError: a bug", "id": "q"}
    assert "a bug" in capsys.readouterr().err


def test_answers_come_as_they_finish_and_terminate_ends_an_analysis(engine: AnalysisProcess) -> None:
    engine.send(query("long", maxVisits=LONG, reportDuringSearchEvery=0.05))
    engine.send(query("short", maxVisits=8))
    assert engine.final("short")["rootInfo"]["visits"] == 9  # answered while "long" still runs
    during = engine.until(lambda a: a.get("id") == "long" and a.get("isDuringSearch") is True)[-1]
    assert during["moveInfos"]
    engine.send({"id": "stop", "action": "terminate", "terminateId": "long"})
    lines = engine.until(lambda a: a.get("id") == "long" and a.get("isDuringSearch") is False)
    assert {"id": "stop", "action": "terminate", "terminateId": "long"} in engine.seen
    final = lines[-1]
    assert final["moveInfos"] and final["rootInfo"]["visits"] < LONG


def test_a_queued_query_terminated_answers_no_results_and_priority_orders_the_queue(ownership_model: str) -> None:
    engine = AnalysisProcess("--model", ownership_model, "--threads", "1", "--analysis-threads", "1")
    try:
        engine.send(query("busy", maxVisits=LONG, reportDuringSearchEvery=0.05))
        engine.until(lambda a: a.get("id") == "busy")  # the only worker is analysing it
        engine.send(query("later", maxVisits=4, priority=0))
        engine.send(query("first", maxVisits=4, priority=10))
        engine.send(query("dropped", maxVisits=4, analyzeTurns=[0], priority=5))
        engine.send({"id": "t1", "action": "terminate", "terminateId": "dropped", "turnNumbers": [0]})
        assert engine.final("dropped") == {"id": "dropped", "isDuringSearch": False, "noResults": True,
                                           "turnNumber": 0}
        engine.send({"id": "t2", "action": "terminate", "terminateId": "busy"})
        engine.final("busy")
        order = [a["id"] for a in engine.until(lambda a: a.get("id") == "later" and "moveInfos" in a)
                 if a.get("isDuringSearch") is False]
        assert order == ["first", "later"]
    finally:
        engine.kill()


def test_actions_are_echoed(engine: AnalysisProcess) -> None:
    engine.send({"id": "v", "action": "query_version"})
    version = engine.next()
    assert version["action"] == "query_version" and version["version"] and version["git_hash"]
    engine.send({"id": "c", "action": "clear_cache"})
    assert engine.next() == {"id": "c", "action": "clear_cache"}
    engine.send({"id": "m", "action": "query_models"})
    models = engine.next()["models"]
    assert [m["boardSize"] for m in models] == [9] and models[0]["name"] == "go9.onnx"


def test_the_end_of_input_finishes_the_queued_queries(engine: AnalysisProcess) -> None:
    engine.send(query("a", maxVisits=16, analyzeTurns=[0]))
    engine.send(query("gone", maxVisits=LONG))
    engine.send({"id": "all", "action": "terminate_all"})
    engine.send(query("b", maxVisits=16, moves=[["B", "E5"]], analyzeTurns=[0, 1]))
    assert engine.close() == 0
    finals = [(a["id"], a["turnNumber"]) for a in engine.seen if a.get("isDuringSearch") is False]
    assert sorted(finals) == [("a", 0), ("b", 0), ("b", 1), ("gone", 0)]


def test_avoid_and_allow_moves_keep_moves_off_the_list(engine: AnalysisProcess) -> None:
    avoid = [{"player": "B", "moves": ["E5", "D5", "E4", "pass"], "untilDepth": 1}]
    engine.send(query("avoid", maxVisits=32, avoidMoves=avoid))
    listed = {m["move"] for m in engine.final("avoid")["moveInfos"]}
    assert listed and not listed & {"E5", "D5", "E4", "pass"}
    engine.send(query("allow", maxVisits=32, allowMoves=[{"player": "B", "moves": ["C3", "G7"], "untilDepth": 1}]))
    assert {m["move"] for m in engine.final("allow")["moveInfos"]} <= {"C3", "G7"}


def test_a_crash_never_exits_with_status_one(monkeypatch: pytest.MonkeyPatch, ownership_model: str) -> None:
    """KaTrain reads status 1 as a deliberate quit and would not report the failure."""

    def crash(self: katago_analysis.AnalysisEngine, stdin: Any) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(katago_analysis.AnalysisEngine, "run", crash)
    assert klent.cli.main(["analysis", "--model", ownership_model]) == 3


def test_help_and_user_mistakes_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert klent.cli.main(["analysis", "--max-visits", "0"]) == 2
    assert capsys.readouterr().err.strip() == "klent analysis: --max-visits must be >= 1"
    with pytest.raises(SystemExit) as stopped:
        klent.cli.main(["analysis", "--help"])
    assert stopped.value.code == 0 and "KataGo" in capsys.readouterr().out


def test_json_lines_only_on_stdout(engine: AnalysisProcess) -> None:
    engine.send(json.dumps(query("j", maxVisits=4)))
    engine.final("j")  # the reader thread fails on any line that is not a JSON object
    assert engine.close() == 0
