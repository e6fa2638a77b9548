"""`POST /v1/katago-analysis`: a query of KataGo's analysis protocol over HTTP, answered by the
code `klent analysis` runs (`klent.protocols.katago_query`, `katago_answer`), within the server's caps."""

from __future__ import annotations

import shutil
import warnings

import pytest
from analysis_driver import AnalysisProcess

with warnings.catch_warnings():  # starlette's note about httpx2 is not ours to act on
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from klent.server.app import ServerConfig, create_app

QUERY = {"id": "h", "moves": [["B", "E5"], ["W", "C3"]], "rules": "japanese", "komi": 7.5, "boardXSize": 9,
         "boardYSize": 9, "analyzeTurns": [1, 2], "maxVisits": 16, "includeOwnership": True, "includePolicy": True,
         "overrideSettings": {"reportAnalysisWinratesAs": "BLACK", "antiMirror": True}}


@pytest.fixture(scope="module")
def client(ownership_model: str, tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("katago") / "models"
    folder.mkdir()
    shutil.copy(ownership_model, folder / "go9.onnx")
    config = ServerConfig(models_dir=folder, default_simulations=50, max_simulations=100, max_time=5.0)
    with TestClient(create_app(config)) as test_client:
        yield test_client


def test_the_http_answer_is_the_stdio_answer(client: TestClient, ownership_model: str) -> None:
    response = client.post("/v1/katago-analysis", json=QUERY)
    assert response.status_code == 200, response.text
    over_http = response.json()
    engine = AnalysisProcess("--model", ownership_model, "--threads", "1")
    try:
        engine.send(QUERY)
        over_stdio = engine.until(lambda a: a.get("isDuringSearch") is False)
        over_stdio.append(engine.final("h"))
    finally:
        engine.kill()
    warned = [a for a in over_http if "warning" in a]
    assert warned == [a for a in over_stdio if "warning" in a] and len(warned) == 2
    answers = [a for a in over_http if "turnNumber" in a]
    assert [a["turnNumber"] for a in answers] == [1, 2]
    stdio = {a["turnNumber"]: a for a in over_stdio if "turnNumber" in a}
    for answer in answers:
        twin = stdio[answer["turnNumber"]]
        assert answer.keys() == twin.keys() and answer["rootInfo"].keys() == twin["rootInfo"].keys()
        assert answer["rootInfo"]["visits"] == 17 and len(answer["ownership"]) == 81
        assert answer["ownership"][0] > 0.9  # Black's view, as asked


@pytest.mark.parametrize(("change", "field"), [
    ({"maxVisits": 101}, "maxVisits"),
    ({"boardXSize": 13, "boardYSize": 13}, "boardXSize"),
    ({"moves": [["B", "E5"], ["W", "E5"]]}, "moves"),
])
def test_errors_are_katago_error_objects(client: TestClient, change: dict, field: str) -> None:
    response = client.post("/v1/katago-analysis", json={**QUERY, **change})
    assert response.status_code == 422
    assert response.json() == {"error": response.json()["error"], "field": field, "id": "h"}


def test_the_endpoint_is_documented(client: TestClient) -> None:
    assert "/v1/katago-analysis" in client.get("/openapi.json").json()["paths"]
