"""A hypothesis fuzz of the HTTP front door: nothing a client sends gets a 500 or hangs, every
error is a 4xx with a one-line JSON ``detail``, and no request leaves state behind (slots held,
a batching thread gone, a different answer to the same question afterwards).

Requests are drawn from a grammar that mixes valid and broken pieces, so that the fuzz reaches
the searches as well as the validation (the test checks that both were reached).  The app runs
in-process (FastAPI's TestClient); a second fuzz sends raw bytes to a real `klent serve`, which
is what meets malformed HTTP itself.  Examples are derandomized: CI runs the same ones.
"""

from __future__ import annotations

import json
import shutil
import socket
import time
import urllib.parse
import warnings
from pathlib import Path
from typing import Any

import chess
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

with warnings.catch_warnings():  # starlette's note about httpx2 is not ours to act on
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from klent.bench.server import running_server
from klent.server.app import ServerConfig, create_app

FUZZ = settings(
    derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck)
)
SLOW_ANSWER = 10.0  # seconds; any answer slower than this counts as a hang (searches are capped at 0.3 s)
PROBE = {"moves": ["E5", "C3"], "mode": "reactive", "top_moves": 3}


@pytest.fixture(scope="module")
def models_dir(untrained_model, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fuzz-models")
    shutil.copy(untrained_model("go9"), folder / "go9.onnx")
    shutil.copy(untrained_model("chess"), folder / "chess.onnx")
    return folder


# --- the grammar ----------------------------------------------------------------------------------

junk_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
numbers = st.one_of(
    st.sampled_from([0, 1, 2, 8, -1, 10**9, 2**63, 0.5, -0.0, 1e308, float("inf"), float("-inf"), float("nan")]),
    st.integers(-5, 40),
    st.floats(allow_nan=True, allow_infinity=True),
)
json_scalars = st.one_of(st.none(), st.booleans(), numbers, junk_text)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(junk_text, inner, max_size=3),
    max_leaves=6,
)

GO_MOVES = ["E5", "C3", "D4", "pass", "PASS", "resign", "A1", "J9", "T19", "I5", "Z99", "e5", "", " E5", "D", "44"]
CHESS_MOVES = ["e2e4", "e7e5", "g1f3", "b8c6", "e1g1", "a7a8q", "e2e5", "0000", "Nf3", "e2e4e"]
FENS = [
    chess.STARTING_FEN,
    "6k1/5ppp/8/8/8/8/5PPP/4R1K1 w - - 0 1",
    "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",  # stalemate
    "k7/8/8/8/8/8/8/K7 w - - 0 1",  # insufficient material
    "8/8/8/8 w - -",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",
]
SGFS = [
    "(;GM[1]FF[4]SZ[9]KM[6.5];B[ee];W[cc])",
    "(;GM[1]FF[4]SZ[9];B[ee];W[ee])",
    "(;GM[1]SZ[19];B[pd])",
    "(;SZ[9]AB[aa][bb]AW[cc];B[dd])",
    "(;SZ[9]KM[abc];B[])",
    "(;SZ[9]KM[1e308];B[ee])",
    "(;SZ[9]CA[zlib];B[ee])",
    "(;SZ[9]HA[3];B[tt])",
    "(;SZ[9](;B[ee])(;B[dd]))",
    "(;",
    "",
    "not sgf",
]

moves = st.lists(st.one_of(st.sampled_from(GO_MOVES + CHESS_MOVES), junk_text), max_size=6)


def mostly(valid: st.SearchStrategy[Any], *broken: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``valid`` four times in five, else one of ``broken``: a field is broken often, a body
    with all its fields broken rarely.  (``one_of`` would not do: it draws each distinct
    strategy equally often, whatever is repeated.)"""
    rare = st.one_of(*broken)
    return st.integers(0, 4).flatmap(lambda draw: rare if draw == 0 else valid)


fields: dict[str, st.SearchStrategy[Any]] = {
    "moves": mostly(moves, json_values),
    "komi": mostly(st.sampled_from([7.5, 0, -150, 150, 150.5, -1e9]), numbers, json_values),
    "sgf": mostly(st.sampled_from(SGFS), junk_text, json_values),
    "fen": mostly(st.sampled_from(FENS), junk_text, json_values),
    "mode": mostly(st.sampled_from(["reactive", "search", "search", "fast", ""]), json_values),
    "simulations": mostly(st.sampled_from([1, 2, 8, 16, 64, 65, 0, -3, "8", 8.0, 8.5]), json_values),
    "time": mostly(st.sampled_from([0.01, 0.05, 0.3, 0.31, 0, -1, "0.1"]), numbers, json_values),
    "top_moves": mostly(st.sampled_from([1, 3, 100, 101, 0]), json_values),
    "temperature": mostly(st.sampled_from([0, 0.5, 1, 10, 11, -1]), numbers),
    "include_position": mostly(st.booleans(), json_values),
    "search": mostly(st.booleans(), json_values),
}
bodies = mostly(
    st.fixed_dictionaries({}, optional=fields),
    st.fixed_dictionaries({}, optional=fields).flatmap(
        lambda body: st.dictionaries(junk_text, json_values, max_size=2).map(lambda extra: {**extra, **body})
    ),
    json_values,
)
raw_bodies = st.one_of(
    st.binary(max_size=64),
    st.sampled_from([b"", b"{", b'{"moves": [', b"\xff\xfe", b"null", b"NaN", b'{"moves": ["E5"]}' * 2, b"[]"]),
)
# Repeated entries weight the draw towards requests that reach the engine.
api_paths = st.tuples(
    st.sampled_from(["go9"] * 4 + ["chess"] * 4 + ["go13", "GO9", "..", "", "go9.onnx", "%2e%2e"]),
    st.sampled_from(["move"] * 3 + ["analyze"] * 3 + ["position", "models", ""]),
).map(lambda p: f"/v1/{p[0]}/{p[1]}")
other_paths = st.one_of(
    st.sampled_from(["/", "/healthz", "/readyz", "/metrics", "/docs", "/openapi.json", "/v1/models",
                     "/static/app.js", "/static/../app.py", "/static/%2e%2e/app.py", "/nothing", "//"]),
    junk_text.map(lambda text: "/" + urllib.parse.quote(text, safe="/%")),  # what a client can send
)
methods = st.sampled_from(["POST"] * 12 + ["GET", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"])
headers = st.sampled_from(
    [{}] * 12 + [
        {"Content-Type": "text/plain"},
        {"Content-Type": "application/json; charset=latin-1"},
        {"Content-Length": "abc"},
        {"Authorization": "Bearer x"},
        {"Accept": "application/openmetrics-text"},
    ]
)
requests = st.tuples(methods, mostly(api_paths, other_paths), mostly(bodies, raw_bodies), headers)


# --- the fuzz -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(models_dir):
    config = ServerConfig(models_dir=models_dir, max_simulations=64, default_simulations=16, max_time=0.3)
    with TestClient(create_app(config)) as test_client:
        yield test_client


def send(client: TestClient, method: str, path: str, body: Any, extra_headers: dict[str, str]) -> httpx.Response:
    if isinstance(body, bytes):
        content = body
    else:
        content = json.dumps(body).encode()  # NaN and Infinity as Python writes them
    return client.request(method, path, content=content, headers={"Content-Type": "application/json", **extra_headers})


def test_fuzzed_requests_never_crash_hang_or_leave_state(client) -> None:
    service = client.app.state.service
    baseline = client.post("/v1/go9/move", json=PROBE).json()
    statuses: dict[int, int] = {}
    searched = 0

    @settings(FUZZ, max_examples=400)
    @given(requests)
    def run(request: tuple[str, str, Any, dict[str, str]]) -> None:
        nonlocal searched
        start = time.perf_counter()
        response = send(client, *request)
        assert time.perf_counter() - start < SLOW_ANSWER, request
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        assert response.status_code < 500, (request, response.status_code, response.text[:300])
        if response.status_code >= 400 and request[0] != "HEAD":
            detail = response.json()["detail"]
            assert isinstance(detail, str) and detail and "\n" not in detail, (request, detail)
        if response.status_code == 200 and request[0] == "POST" and request[1].startswith("/v1/"):
            answer = response.json()
            searched += bool(answer.get("simulations") or (answer.get("search") or {}).get("simulations"))
        assert service.searches.active == 0 and service.cheap.active == 0
        assert all(model.evaluator.alive for model in service.registry.models.values())

    run()
    # Nothing a request did changed the answer to the same question, and the fuzz reached
    # both the engine (searches among the 200s) and the validation (422s).
    assert client.post("/v1/go9/move", json=PROBE).json()["move"] == baseline["move"]
    print(f"HTTP fuzz: {sum(statuses.values())} requests, statuses {dict(sorted(statuses.items()))}, "
          f"{searched} searches")
    assert statuses.get(200, 0) > 40 and statuses.get(422, 0) > 40 and searched > 10, (statuses, searched)


# --- raw bytes at a real server ------------------------------------------------------------------

request_lines = st.one_of(
    st.tuples(
        st.sampled_from(["GET", "POST", "HEAD", "BREW", "", "G\x00T"]),
        st.sampled_from(["/healthz", "/v1/go9/move", "*", "http://x/healthz", "/%zz", "/" + "a" * 9000]),
        st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/9", "", "http/1.1"]),
    ).map(" ".join),
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
)
header_lines = st.lists(
    st.one_of(
        st.sampled_from(["Host: x", "Content-Length: 5", "Content-Length: -1", "Content-Length: 99999999999999999999",
                         "Transfer-Encoding: chunked", "Transfer-Encoding: gzip", "Expect: 100-continue",
                         "Connection: close", "Upgrade: websocket", "X: " + "y" * 70000, ": empty", "no colon"]),
        st.binary(max_size=20).map(lambda b: b.decode("latin-1")),
    ),
    max_size=4,
)
raw_bodies = st.sampled_from(["", "{}", "0\r\n\r\n", "5\r\nhello\r\n0\r\n\r\n", "{\"mode\": \"reactive\"}"])
raw_messages = st.tuples(request_lines, header_lines, raw_bodies)


def read_reply(connection: socket.socket) -> bytes:
    """What the server sends until it closes the connection, or until it has sent a status line
    and headers and then stays quiet (an answered keep-alive connection); fails after
    `SLOW_ANSWER` seconds of neither (a hang: the read timeout closes unfinished requests)."""
    connection.settimeout(0.3)
    deadline = time.monotonic() + SLOW_ANSWER
    reply = b""
    while True:
        try:
            chunk = connection.recv(65536)
        except TimeoutError:
            if b"\r\n\r\n" in reply:
                return reply
            assert time.monotonic() < deadline, "no answer and the connection still open"
            continue
        except ConnectionResetError:
            return reply
        if not chunk:
            return reply
        reply += chunk


def test_fuzzed_raw_http_never_crashes_or_hangs_a_real_server(models_dir) -> None:
    with running_server(models_dir, ["--read-timeout", "1"]) as server:
        host, port = server.url.removeprefix("http://").split(":")
        statuses: dict[int, int] = {}

        @settings(FUZZ, max_examples=120)
        @given(raw_messages)
        def run(message: tuple[str, list[str], str]) -> None:
            line, header_list, body = message
            data = "\r\n".join([line, *header_list, "", body]).encode("latin-1", "replace")
            with socket.create_connection((host, int(port)), timeout=SLOW_ANSWER) as connection:
                connection.sendall(data)
                reply = read_reply(connection)
            if reply:
                status = int(reply.split(b" ", 2)[1])
                statuses[status] = statuses.get(status, 0) + 1
                assert status < 500, (message, reply[:300])

        run()
        assert server.process.poll() is None
        assert httpx.get(f"{server.url}/healthz").status_code == 200
        assert "Traceback" not in server.log()
    print(f"raw HTTP fuzz: statuses {dict(sorted(statuses.items()))}")
    assert statuses.get(200, 0) > 0 and statuses.get(400, 0) > 0, statuses
