"""The HTTP API: answers, validation, limits, keys, metrics, batching and graceful shutdown.

Most tests run the app in-process with FastAPI's TestClient; shutdown is tested on a real
`klent serve` subprocess.  Models are small untrained networks: the tests check the service,
not the strength of play.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import chess
import httpx
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

with warnings.catch_warnings():  # starlette's note about httpx2 is not ours to act on
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

import klent.engine.games
from klent.bench.server import running_server
from klent.cli import main as klent_main
from klent.engine.network import Evaluation
from klent.server.app import ServerConfig, api_keys_from_env, create_app
from klent.server.batching import BatchingEvaluator

GO_EMPTY_LEGAL = 82  # 81 points + pass


@pytest.fixture(scope="module")
def models_dir(untrained_model, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("served") / "models"
    folder.mkdir()
    shutil.copy(untrained_model("go9"), folder / "go9.onnx")
    shutil.copy(untrained_model("chess"), folder / "chess.onnx")
    # A model outside the folder that no request may reach.
    shutil.copy(untrained_model("go9"), folder.parent / "secret.onnx")
    return folder


def make_client(models_dir: Path, **overrides) -> TestClient:
    config = ServerConfig(models_dir=models_dir, **{"max_simulations": 400, "max_time": 5.0, **overrides})
    return TestClient(create_app(config))


@pytest.fixture(scope="module")
def client(models_dir):
    with make_client(models_dir, max_body_bytes=32 * 1024) as test_client:
        yield test_client


def metric(text: str, name: str, **labels: str) -> float:
    """The value of the sample with exactly these labels in Prometheus text (fails if it is missing)."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return sample.value
    pytest.fail(f"no sample {name}{labels} in:\n{text}")


# --- answers ------------------------------------------------------------------------------------


def test_models_lists_the_games_in_the_folder(client):
    models = client.get("/v1/models").json()["models"]
    assert [m["game"] for m in models] == ["chess", "go9"]
    go9 = models[1]
    assert go9["num_actions"] == GO_EMPTY_LEGAL and go9["observation_shape"][1:] == [9, 9]
    assert go9["arch"].startswith("resnet") and go9["training"]["algorithm"] == "untrained"


def test_go_search_move_is_legal_and_consistent(client):
    moves = ["E5", "C3", "G7"]
    response = client.post("/v1/go9/move", json={"moves": moves, "simulations": 32, "include_position": True})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["game"] == "go9" and body["mode"] == "search" and body["simulations"] == 32
    assert body["move"] not in moves and body["pv"][0] == body["move"]
    assert sum(m["visits"] for m in body["top_moves"]) <= 32
    assert body["top_moves"][0]["move"] == body["move"]
    assert -1 <= body["value"] <= 1 and body["winrate"] == pytest.approx((body["value"] + 1) / 2)
    after = body["position"]
    assert after["to_play"] == "black" and after["last_move"] == body["move"] and after["move_number"] == 4
    stones = "".join(after["board"])
    assert stones.count("X") == 2 and stones.count("O") == 2
    assert body["move"] not in after["legal_moves"]


def test_go_reactive_move_with_komi_and_sgf(client):
    sgf = "(;GM[1]FF[4]SZ[9]KM[6.5];B[ee];W[cc])"
    from_sgf = client.post("/v1/go9/move", json={"sgf": sgf, "mode": "reactive"}).json()
    from_moves = client.post("/v1/go9/move", json={"moves": ["E5", "C7"], "komi": 6.5, "mode": "reactive"}).json()
    assert from_sgf["move"] == from_moves["move"]
    assert from_sgf["simulations"] == 0 and all(m["visits"] == 0 for m in from_sgf["top_moves"])
    priors = [m["prior"] for m in from_sgf["top_moves"]]
    assert priors == sorted(priors, reverse=True) and from_sgf["move"] == from_sgf["top_moves"][0]["move"]


def test_chess_move_from_fen_and_moves(client):
    fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    response = client.post("/v1/chess/move", json={"fen": fen, "moves": ["f1c4", "g8f6"], "simulations": 16})
    assert response.status_code == 200, response.text
    board = chess.Board(fen)
    board.push_uci("f1c4")
    board.push_uci("g8f6")
    assert chess.Move.from_uci(response.json()["move"]) in board.legal_moves


def test_analyze_gives_every_legal_move_from_one_network_call(client, models_dir):
    before = client.get("/metrics").text
    response = client.post("/v1/go9/analyze", json={"moves": ["E5"]})
    after = client.get("/metrics").text
    assert response.status_code == 200, response.text
    body = response.json()
    assert len(body["moves"]) == GO_EMPTY_LEGAL - 1  # E5 is taken
    assert "E5" not in {m["move"] for m in body["moves"]}
    assert sum(m["prior"] for m in body["moves"]) == pytest.approx(1.0, abs=1e-4)
    priors = [m["prior"] for m in body["moves"]]
    assert priors == sorted(priors, reverse=True) and body["search"] is None
    assert body["ownership"] is None and body["score"] is None  # no such heads
    evaluations = metric(after, "klent_network_evaluations_total", game="go9") - metric(
        before, "klent_network_evaluations_total", game="go9"
    )
    assert evaluations == 1


def test_analyze_with_search(client):
    body = client.post("/v1/chess/analyze", json={"moves": ["e2e4"], "search": True, "simulations": 24}).json()
    assert len(body["moves"]) == 20
    assert body["search"]["simulations"] == 24 and body["search"]["move"] in {m["move"] for m in body["moves"]}


def test_position_endpoint_describes_the_board(client):
    body = client.post("/v1/chess/position", json={"moves": ["f2f3", "e7e5", "g2g4", "d8h4"]}).json()
    assert body["terminal"] and body["result"] == "0-1" and body["legal_moves"] == []
    assert body["board"][4] == "......Pq" and body["last_move"] == "d8h4"
    assert client.post("/v1/chess/move", json={"moves": ["f2f3", "e7e5", "g2g4", "d8h4"]}).status_code == 422


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "reason"),
    [
        ("/v1/go9/move", {"simulations": 0}, "simulations"),
        ("/v1/go9/move", {"mode": "fast"}, "mode"),
        ("/v1/go9/move", {"moves": "E5"}, "moves"),
        ("/v1/go9/move", {"simulation": 10}, "simulation: Extra inputs are not permitted"),
        ("/v1/go9/move", {"moves": ["E5", "E5"]}, "moves[1] 'E5'"),
        ("/v1/go9/move", {"moves": ["Z99"]}, "moves[0] 'Z99'"),
        ("/v1/go9/move", {"fen": chess.STARTING_FEN}, "fen"),
        ("/v1/go9/move", {"sgf": "(;GM[1]SZ[19];B[pd])"}, "sgf"),
        ("/v1/chess/move", {"fen": "not a fen"}, "fen"),
        ("/v1/chess/move", {"komi": 7.5}, "komi"),
        ("/v1/chess/analyze", {"moves": ["e2e5"]}, "moves[0] 'e2e5'"),
        ("/v1/go9/move", {"simulations": 100_000}, "limit of 400"),
        ("/v1/go9/analyze", {"search": True, "time": 60}, "limit of 5 s"),
    ],
)
def test_bad_requests_get_422_with_a_reason(client, path, body, reason):
    response = client.post(path, json=body)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, str) and reason in detail and "\n" not in detail


def test_malformed_json_is_422(client):
    response = client.post("/v1/go9/move", content=b'{"moves": [', headers={"Content-Type": "application/json"})
    assert response.status_code == 422 and "JSON" in response.json()["detail"]


def test_body_size_limit(client):
    big = {"moves": ["pass"] * 2, "sgf": "(;" + "C[" + "x" * 40_000 + "])"}
    assert client.post("/v1/go9/move", json=big).status_code == 413

    def chunks():  # no Content-Length: the limit must hold while reading
        for _ in range(40):
            yield b" " * 1024

    response = client.post("/v1/go9/move", content=chunks(), headers={"Content-Type": "application/json"})
    assert response.status_code == 413 and "larger than" in response.json()["detail"]


@pytest.mark.parametrize(
    "path",
    [
        "/v1/..%2Fsecret/move",
        "/v1/..%2F..%2F..%2Fetc%2Fpasswd/move",
        "/v1/%2Fetc%2Fpasswd/analyze",
        "/v1/go9.onnx/move",
        "/v1/secret/move",
        "/v1/GO9/move",
        "/v1/go9%00/move",
        "/v1/go13/move",  # a known game without a model in the folder
    ],
)
def test_game_ids_outside_the_served_models_are_refused(client, path):
    response = client.post(path, json={"mode": "reactive"})
    assert response.status_code == 404, response.text
    if "%2F" not in path:  # an encoded slash makes the path match no route at all
        assert "this server plays chess, go9" in response.json()["detail"]


# --- time and concurrency limits -----------------------------------------------------------------


def test_every_search_is_capped_by_the_server_time_limit(models_dir):
    with make_client(models_dir, max_simulations=1_000_000, max_time=0.3) as capped:
        start = time.perf_counter()
        body = capped.post("/v1/go9/move", json={"simulations": 1_000_000}).json()
        assert time.perf_counter() - start < 3.0
        assert 0 < body["simulations"] < 1_000_000 and body["elapsed"] < 1.5


def test_busy_server_answers_503_at_once_but_not_to_cheap_requests(models_dir):
    """Searches fill their own lane: the next search gets 503 at once, while a reactive move,
    an analysis and a position are still answered (long searches once starved them)."""
    with make_client(models_dir, max_simulations=1_000_000, max_searches=1) as busy:
        with ThreadPoolExecutor(1) as pool:
            slow = pool.submit(busy.post, "/v1/go9/move", json={"simulations": 1_000_000, "time": 1.5})
            lane = busy.app.state.service.searches
            deadline = time.monotonic() + 10
            while lane.active == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            start = time.perf_counter()
            rejected = busy.post("/v1/go9/analyze", json={"search": True, "simulations": 8})
            assert time.perf_counter() - start < 1.0
            assert rejected.status_code == 503 and rejected.headers["retry-after"] == "1"
            assert "busy" in rejected.json()["detail"] and "search" in rejected.json()["detail"]
            start = time.perf_counter()
            for path, body in (("move", {"mode": "reactive"}), ("analyze", {}), ("position", {})):
                assert busy.post(f"/v1/go9/{path}", json=body).status_code == 200, path
            assert time.perf_counter() - start < 1.0
            assert not slow.done()
            assert slow.result().status_code == 200
        assert busy.post("/v1/go9/move", json={"simulations": 8}).status_code == 200


def test_cheap_requests_have_their_own_limit(models_dir):
    with make_client(models_dir, max_concurrency=1) as busy:
        lane = busy.app.state.service.cheap
        with lane.slot():  # a cheap request in progress
            rejected = busy.post("/v1/go9/move", json={"mode": "reactive"})
            assert rejected.status_code == 503 and "cheap" in rejected.json()["detail"]
            assert busy.post("/v1/go9/move", json={"simulations": 8}).status_code == 200
        assert busy.post("/v1/go9/move", json={"mode": "reactive"}).status_code == 200


# --- API keys -----------------------------------------------------------------------------------


def test_api_keys_from_environment():
    assert api_keys_from_env({"KLENT_API_KEYS": " a1, b2 ,,"}) == {"a1", "b2"}
    assert api_keys_from_env({}) == frozenset()


def test_api_keys_guard_the_api_only(models_dir):
    with make_client(models_dir, api_keys=frozenset({"k-123", "k-456"})) as guarded:
        assert guarded.get("/v1/models").status_code == 401
        assert guarded.get("/v1/models", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert guarded.get("/v1/models", headers={"Authorization": "Bearer k-123"}).status_code == 200
        assert guarded.get("/v1/models", headers={"X-API-Key": "k-456"}).status_code == 200
        refused = guarded.post("/v1/go9/move", json={"mode": "reactive"})
        assert refused.status_code == 401 and "API key" in refused.json()["detail"]
        assert guarded.get("/healthz").status_code == 200 and guarded.get("/").status_code == 200


# --- operations ---------------------------------------------------------------------------------


def test_health_docs_and_page(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"status": "ready", "models": ["chess", "go9"]}
    assert "swagger" in client.get("/docs").text.lower()
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/v1/models", "/v1/{game}/move", "/v1/{game}/analyze"} <= set(paths)
    page = client.get("/")
    assert page.status_code == 200 and "static/app.js" in page.text
    assert client.get("/static/app.js").status_code == 200


def test_metrics_in_prometheus_format(client):
    client.post("/v1/go9/move", json={"mode": "reactive"})
    client.post("/v1/go9/move", json={"mode": "fast"})
    response = client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = response.text
    assert metric(text, "klent_http_requests_total", method="POST", route="/v1/{game}/move", status="200") >= 1
    assert metric(text, "klent_http_requests_total", method="POST", route="/v1/{game}/move", status="422") >= 1
    count = metric(text, "klent_http_request_duration_seconds_count", route="/v1/{game}/move")
    assert metric(text, "klent_http_request_duration_seconds_bucket", route="/v1/{game}/move", le="+Inf") == count
    assert metric(text, "klent_network_batch_size_count", game="go9") >= 1
    assert metric(text, "klent_network_evaluations_per_second", game="go9") > 0
    assert metric(text, "klent_http_requests_in_flight") == 1  # this very request
    sample = re.compile(r'[a-z_]+(\{([a-z_]+="([^"\\]|\\.)*",?)*\})? ([-+0-9.e]+|\+Inf)')
    for line in text.splitlines():  # every line is a comment or `name{label="value",...} number`
        assert line.startswith("# ") or sample.fullmatch(line), line


# --- batching -----------------------------------------------------------------------------------


def fingerprint(obs: np.ndarray) -> np.ndarray:
    """A number per observation that differs between positions (a weighted sum of the planes)."""
    flat = obs.reshape(len(obs), -1).astype(np.float64)
    return flat @ np.arange(1, flat.shape[1] + 1, dtype=np.float64)


class SlowEvaluator:
    """Stands in for the ONNX evaluator: a row's value is its observation's fingerprint."""

    def __init__(self, game, delay: float = 0.02, fail: bool = False) -> None:
        self.game = game
        self.delay = delay
        self.fail = fail
        self.batches: list[int] = []

    def evaluate_encoded(self, obs: np.ndarray, masks: np.ndarray) -> Evaluation:
        self.batches.append(len(obs))
        time.sleep(self.delay)
        if self.fail:
            raise RuntimeError("network exploded")
        logits = np.zeros((len(obs), self.game.num_actions), dtype=np.float32)
        return Evaluation(logits, np.zeros_like(logits), fingerprint(obs))


def _concurrent_evaluations(batcher: BatchingEvaluator, count: int) -> list[tuple[float, float]]:
    game = batcher.game
    start = game.initial_state()
    states = [start.play(int(a)) for a in start.legal_actions()[:count]]
    assert len(states) == count
    barrier = threading.Barrier(count)

    def one(i: int) -> tuple[float, float]:
        with batcher.client():
            barrier.wait()
            evaluation = batcher.evaluate([states[i]])
        return float(evaluation.state_value[0]), float(fingerprint(game.encode(states[i])[None])[0])

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def test_batching_merges_concurrent_calls_and_returns_each_callers_rows():
    inner = SlowEvaluator(klent.engine.games.get("chess"))
    observed: list[int] = []
    batcher = BatchingEvaluator(inner, max_batch=8, max_wait=0.05, observer=lambda n, s: observed.append(n))
    try:
        pairs = _concurrent_evaluations(batcher, 20)
    finally:
        batcher.close()
    assert all(got == expected for got, expected in pairs)
    assert sum(inner.batches) == 20 and max(inner.batches) <= 8 and len(inner.batches) <= 5
    assert observed == inner.batches


def test_a_lone_client_does_not_wait_for_a_batch():
    batcher = BatchingEvaluator(SlowEvaluator(klent.engine.games.get("chess"), delay=0.0), max_wait=1.0)
    state = klent.engine.games.get("chess").initial_state()
    try:
        with batcher.client():
            start = time.perf_counter()
            for _ in range(5):
                batcher.evaluate([state])
            assert time.perf_counter() - start < 0.5
    finally:
        batcher.close()


def test_max_batch_one_evaluates_one_call_at_a_time():
    inner = SlowEvaluator(klent.engine.games.get("chess"), delay=0.001)
    batcher = BatchingEvaluator(inner, max_batch=1, max_wait=0.05)
    try:
        pairs = _concurrent_evaluations(batcher, 6)
    finally:
        batcher.close()
    assert all(got == expected for got, expected in pairs) and inner.batches == [1] * 6


def test_batching_hands_a_network_error_to_every_caller_and_goes_on():
    inner = SlowEvaluator(klent.engine.games.get("chess"), fail=True)
    batcher = BatchingEvaluator(inner, max_batch=8, max_wait=0.01)
    state = klent.engine.games.get("chess").initial_state()
    try:
        with pytest.raises(RuntimeError, match="exploded"):
            batcher.evaluate([state])
        inner.fail = False
        assert batcher.evaluate([state, state]).policy_logits.shape == (2, 4672)
    finally:
        batcher.close()
    assert not batcher.alive


def test_concurrent_requests_share_network_batches(models_dir):
    with make_client(models_dir, batch_wait=0.05) as batched:
        with ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(
                lambda i: batched.post("/v1/go9/move", json={"moves": [["E5", "D4", "C3"][i % 3]], "simulations": 16}),
                range(12),
            ))
        assert all(a.status_code == 200 for a in answers)
        text = batched.get("/metrics").text
    batches = metric(text, "klent_network_batch_size_count", game="go9")
    positions = metric(text, "klent_network_batch_size_sum", game="go9")
    assert positions / batches > 1.5, (positions, batches)


# --- the command and the process ------------------------------------------------------------------


def test_serve_without_models_is_a_one_line_error(tmp_path, capsys):
    assert klent_main(["serve", "--models", str(tmp_path), "--port", "1"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "no models in" in error


def test_sigterm_finishes_the_request_in_flight(models_dir):
    with running_server(models_dir, ["--max-simulations", "1000000"]) as server:
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(
                httpx.post, f"{server.url}/v1/go9/move", json={"simulations": 1_000_000, "time": 2.0}, timeout=30
            )
            time.sleep(0.7)  # the search is running
            server.process.send_signal(signal.SIGTERM)
            response = pending.result()
        assert response.status_code == 200 and response.json()["simulations"] > 0
        # uvicorn re-raises the signal once it has shut down gracefully
        assert server.process.wait(timeout=20) in (0, -signal.SIGTERM)
        assert "Application shutdown complete" in server.log()
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{server.url}/healthz", timeout=2)


def test_analyze_returns_the_ownership_of_a_model_with_that_head(ownership_model, tmp_path):
    """Black's view whoever is to move (the model says Black owns columns A-E); a model
    without the head returns none."""
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(ownership_model, folder / "go9.onnx")
    with make_client(folder) as test_client:
        for moves in ([], ["E5"]):
            body = test_client.post("/v1/go9/analyze", json={"moves": moves}).json()
            rows = body["ownership"]
            assert len(rows) == 9 and all(len(row) == 9 for row in rows)
            assert all(v > 0.99 for row in rows for v in row[:5]) and all(v < -0.99 for row in rows for v in row[5:])
            assert isinstance(body["score"], float)


# --- a real server: abandoned searches, read timeouts, the port, HEAD ------------------------------

READ_TIMEOUT = 1.0


@pytest.fixture(scope="module")
def live_server(models_dir):
    args = ["--read-timeout", str(READ_TIMEOUT), "--max-simulations", "1000000", "--max-searches", "64"]
    with running_server(models_dir, args) as server:
        yield server


def raw_request(server, text: str) -> socket.socket:
    """A connection to ``server`` that has sent ``text`` (which may be an unfinished request)."""
    host, port = server.url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=10)
    connection.sendall(text.encode())
    return connection


def post_text(path: str, body: dict) -> str:
    data = json.dumps(body)
    return (f"POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n{data}")


def searches_working(server) -> float:
    return metric(httpx.get(f"{server.url}/metrics").text, "klent_requests_working", lane="search")


def test_abandoned_searches_are_called_off_and_never_lock_out_the_api(live_server):
    """64 searches whose clients leave after 1 s made every endpoint answer 503 for
    the next 30 s.  Now a reactive move is answered at once, and the searches stop."""
    search = post_text("/v1/go9/move", {"simulations": 1_000_000, "time": 30})
    connections = [raw_request(live_server, search) for _ in range(64)]
    time.sleep(1.0)
    deadline = time.monotonic() + 10  # a busy machine may take a moment to start them all
    while searches_working(live_server) < 64:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    for connection in connections:
        connection.close()
    start = time.perf_counter()
    reactive = httpx.post(f"{live_server.url}/v1/go9/move", json={"mode": "reactive"}, timeout=10)
    assert reactive.status_code == 200, reactive.text
    assert time.perf_counter() - start < 1.0
    deadline = time.monotonic() + 5
    while searches_working(live_server) > 0:
        assert time.monotonic() < deadline, "abandoned searches still hold their slots"
        time.sleep(0.1)
    assert httpx.post(f"{live_server.url}/v1/go9/move", json={"simulations": 8}, timeout=10).status_code == 200


def test_idle_and_slow_connections_are_closed(live_server):
    """Idle connections once stayed open for more than 30 s.  A connection must send a
    request's headers within the read timeout, and then its body within it again (408)."""
    idle = [raw_request(live_server, "") for _ in range(50)]
    partial = raw_request(live_server, "POST /v1/go9/move HTTP/1.1\r\nHost: te")
    slow_body = raw_request(live_server, post_text("/v1/go9/move", {"mode": "reactive"})[:-5])
    answered = raw_request(live_server, "GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
    start = time.monotonic()
    for connection in [*idle, partial, slow_body, answered]:
        received = b""
        while chunk := connection.recv(65536):  # until the server closes the connection
            received += chunk
        if connection is slow_body:
            assert received.startswith(b"HTTP/1.1 408 ") and b"not received within 1 s" in received
        elif connection is answered:  # answered, then closed once idle past the read timeout
            assert received.startswith(b"HTTP/1.1 200 ")
        else:
            assert received == b""
        connection.close()
    assert time.monotonic() - start < READ_TIMEOUT + 3.0
    assert httpx.get(f"{live_server.url}/healthz").status_code == 200


def test_the_startup_line_says_where_the_networks_run(live_server):
    # On a GPU machine this names CUDAExecutionProvider, or the CPU when the GPU could not start.
    [line] = [line for line in live_server.log().splitlines() if line.startswith("klent serve: http://")]
    assert " on CPUExecutionProvider (API docs at /docs" in line


def test_head_requests_on_the_health_checks(live_server):
    for path in ("/healthz", "/readyz"):
        response = httpx.head(f"{live_server.url}{path}")
        assert response.status_code == 200 and response.content == b""


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--port=70000", "--port must be between 1 and 65535"),  # uvicorn bound port 4464
        ("--port=0", "--port must be between 1 and 65535"),
        ("--port=-1", "--port must be between 1 and 65535"),
        ("--max-time=inf", "positive and finite"),
        ("--read-timeout=0", "positive and finite"),
        ("--batch-wait-ms=nan", "batch wait"),
        ("--max-searches=0", "max searches must be at least 1"),
    ],
)
def test_bad_serve_options_are_one_line_errors(models_dir, option, message, capsys):
    assert klent_main(["serve", "--models", str(models_dir), option]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and message in error


# --- Go's move rules ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def passing_models_dir(tmp_path_factory) -> Path:
    """A folder with a go9 model that passes in every position (its pass logit raised far
    above the others), as the shipped model, distilled from GNU Go, may pass with dead stones
    on the board."""
    import torch

    from klent.training.export import export_onnx
    from klent.training.nets import NetConfig, build_net

    torch.manual_seed(0)
    game = klent.engine.games.get("go9")
    model = build_net(game, NetConfig(blocks=1, channels=8)).eval()
    with torch.no_grad():
        model.policy_head.fc.bias[game.pass_action] += 100.0
    folder = tmp_path_factory.mktemp("passing") / "models"
    folder.mkdir()
    export_onnx(model, game, folder / "go9.onnx", training_info={"algorithm": "always passes"})
    return folder


def test_a_go_move_over_http_does_not_pass_while_losing_on_the_board(passing_models_dir):
    """The Player applies Go's move rules (klent/engine/go_rules.py) to HTTP moves as to GTP's: White,
    behind after Black's E5, attacks the stone instead of passing as its network wants."""
    with make_client(passing_models_dir) as passing:
        for mode in ("reactive", "search"):
            body = passing.post("/v1/go9/move", json={"moves": ["E5"], "mode": mode, "simulations": 8}).json()
            assert body["move"] in {"D5", "F5", "E4", "E6"}, (mode, body)
        # Nothing to attack and nothing to save: the network's pass stands.
        assert passing.post("/v1/go9/move", json={"mode": "reactive"}).json()["move"] == "pass"


# --- TD search and Dyna-2 -------------------------------------------------------------------


def test_td_and_dyna2_moves_over_http(models_dir, untrained_model, tmp_path):
    """Modes "td" and "dyna2" answer legal moves with their simulated games; Dyna-2 reads the
    permanent weights beside the models; a game other than Go, or a server without those
    weights, gets a one-line 422."""
    from klent.engine.search.td import ShapeWeights

    with make_client(models_dir) as client:
        reply = client.post("/v1/go9/move", json={"mode": "td", "simulations": 20, "moves": ["E5"],
                                                   "include_position": True})
        assert reply.status_code == 200, reply.text
        body = reply.json()
        legal = client.post("/v1/go9/position", json={"moves": ["E5"]}).json()["legal_moves"]
        assert body["mode"] == "td" and body["move"] in legal and body["simulations"] == 20
        assert body["top_moves"][0]["move"] == body["move"] and body["position"]["last_move"] == body["move"]
        missing = client.post("/v1/go9/move", json={"mode": "dyna2", "simulations": 5})
        assert missing.status_code == 422
        assert missing.json()["detail"] == "mode: this server has no Dyna-2 weights for go9"
        chess = client.post("/v1/chess/move", json={"mode": "td", "simulations": 5})
        assert chess.status_code == 422 and "TD search plays Go, not chess" in chess.json()["detail"]
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(untrained_model("go9"), folder / "go9.onnx")
    count = ShapeWeights.weight_count(9, (1, 2), ("LI",))
    ShapeWeights(9, (1, 2), ("LI",), np.random.default_rng(0).normal(0, 0.1, count)).save(folder / "go9-td.npz")
    with make_client(folder) as client:
        body = client.post("/v1/go9/move", json={"mode": "dyna2", "simulations": 10}).json()
        assert body["mode"] == "dyna2" and body["simulations"] == 10 and body["move"] != "pass"


def test_a_td_search_stops_when_asked(models_dir):
    """The stop flag the server sets when a client goes away ends a TD search within a game."""
    from klent.server.schemas import MoveRequest

    with make_client(models_dir, max_simulations=10_000_000) as client:
        service = client.app.state.service
        stop = threading.Event()
        threading.Timer(0.3, stop.set).start()
        request = MoveRequest(mode="td", simulations=10_000_000)
        start = time.perf_counter()
        reply = service.move(service.model("go9"), request, stop)
        assert time.perf_counter() - start < 3.0 and 0 < reply.simulations < 10_000_000


def test_an_abandoned_td_search_is_called_off(live_server):
    connection = raw_request(live_server, post_text("/v1/go9/move", {"mode": "td", "simulations": 1_000_000,
                                                                     "time": 30}))
    deadline = time.monotonic() + 10
    while searches_working(live_server) < 1:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    connection.close()
    deadline = time.monotonic() + 5
    while searches_working(live_server) > 0:
        assert time.monotonic() < deadline, "the abandoned TD search still holds its slot"
        time.sleep(0.1)


def test_bench_server_search_mode_runs_quickly(untrained_model, capsys):
    """`klent bench server --mode search`: both servers answer every search (exit 0 = no
    errors) and the report names the mode and the speed-up against its target."""
    from klent.bench.server import main as bench_server

    arguments = ["--mode", "search", "--simulations", "4", "--clients", "2", "--duration", "0.5"]
    assert bench_server([*arguments, "--model", untrained_model("go9")]) == 0
    out = capsys.readouterr().out
    report = json.loads(out.strip().splitlines()[-1])
    assert report["mode"] == "search" and report["simulations"] == 4
    assert report["batching_errors"] == 0 and report["single_errors"] == 0
    assert report["batching_rps"] > 0 and report["single_rps"] > 0
    assert "x target)" in out and "1.6x" in out
