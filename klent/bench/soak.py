"""Soak: minutes of mixed HTTP traffic against a real `klent serve`; memory, errors and latency.

Starts `klent serve` on a copy of one model and sends, from ``--clients`` concurrent clients,
a random mix of the requests a public server meets: searches, reactive moves, analyses with and
without a search, positions, health checks, bad input (broken JSON, illegal moves, unknown
fields, budgets over the caps, oversized bodies, unknown games and methods) and abandoned
requests (a search whose client leaves after 0.2-1 s, a request whose client leaves halfway
through its headers).  Every few seconds it samples the server's resident memory (RSS) and the
searches holding a slot.  It reports:

* RSS over time, and whether it is bounded: the most of the second half within 10 % (and
  50 MB) of the most of the first half;
* requests and statuses by kind, and the errors: any status a kind must never get (a search
  may get 503 when its lane is full, bad input its 4xx; nothing else may fail), any broken
  connection, and abandoned searches still holding slots after the traffic stops;
* latency p50 / p99 of the answered (200) requests of each kind.

Exits 1 on an error or an unbounded RSS.

    klent bench soak [--minutes 10] [--clients 8] [--game go9] [--model weights/go9.onnx]

Recorded results are in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from klent.bench.server import running_server, sample_positions
from klent.engine.player import DEFAULT_WEIGHTS_DIR

SEARCH_SIMULATIONS = 64
MAX_TIME = 5.0  # the server's cap on a search (--max-time); abandoned searches ask for all of it
READ_TIMEOUT = 5.0  # the server's --read-timeout
RSS_GROWTH = 0.10  # "bounded": the second half's peak RSS within 10 % (and RSS_SLACK) of the first's
RSS_SLACK_MB = 50.0

# kind -> (weight in the mix, the statuses that kind may get)
KINDS: dict[str, tuple[int, frozenset[int]]] = {
    "search": (4, frozenset({200, 503})),
    "analyze_search": (1, frozenset({200, 503})),
    "reactive": (6, frozenset({200})),
    "analyze": (3, frozenset({200})),
    "position": (2, frozenset({200})),
    "health": (1, frozenset({200})),
    "bad_input": (3, frozenset({404, 405, 413, 422})),
    "abandoned": (2, frozenset()),  # never answered: the client leaves
}


@dataclass
class Tally:
    """What the traffic met, by kind."""

    statuses: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[str] = field(default_factory=Counter)

    def record(self, kind: str, status: int, seconds: float) -> None:
        self.statuses[kind][str(status)] += 1
        if status == 200:
            self.latencies[kind].append(seconds)
        if status not in KINDS[kind][1]:
            self.errors[f"{kind}: HTTP {status}"] += 1

    def percentile(self, kind: str, q: float) -> float:
        values = self.latencies.get(kind)
        return float(np.percentile(values, q)) * 1000 if values else float("nan")


def _bad_requests(game_id: str, positions: list[list[str]]) -> list[tuple[str, str, bytes]]:
    """(method, path, body) of requests a server must refuse with a 4xx."""
    move = f"/v1/{game_id}/move"
    replayed = positions[1][:1] * 2 if positions[1] else ["pass", "bogus"]
    return [
        ("POST", move, b'{"moves": ['),
        ("POST", move, json.dumps({"moves": replayed + ["Z99"]}).encode()),
        ("POST", move, json.dumps({"simulations": 10**9}).encode()),
        ("POST", move, json.dumps({"bogus": 1}).encode()),
        ("POST", move, json.dumps({"mode": "reactive", "temperature": -1}).encode()),
        ("POST", f"/v1/{game_id}/analyze", json.dumps({"search": True, "time": 10**6}).encode()),
        ("POST", move, b'{"moves": ["' + b"x" * 300_000 + b'"]}'),
        ("POST", "/v1/nogame/move", b"{}"),
        ("GET", move, b""),
    ]


class Traffic:
    """The clients: each picks a kind of request at random, sends it, records the answer."""

    def __init__(self, url: str, game_id: str, positions: list[list[str]], tally: Tally, seed: int) -> None:
        self.url = url
        self.host, port = url.removeprefix("http://").split(":")
        self.port = int(port)
        self.game_id = game_id
        self.positions = positions
        self.bad = _bad_requests(game_id, positions)
        self.tally = tally
        self.rng = random.Random(seed)
        self.kinds = list(KINDS)
        self.weights = [KINDS[kind][0] for kind in self.kinds]

    async def client(self, http: httpx.AsyncClient, stop_at: float) -> None:
        while time.monotonic() < stop_at:
            kind = self.rng.choices(self.kinds, self.weights)[0]
            start = time.perf_counter()
            try:
                if kind == "abandoned":
                    await self._abandon()
                    continue
                method, path, body = self._request(kind)
                response = await http.request(method, path, content=body, headers={"Content-Type": "application/json"})
            except (httpx.HTTPError, OSError) as error:
                self.tally.errors[f"{kind}: {type(error).__name__}"] += 1
                continue
            self.tally.record(kind, response.status_code, time.perf_counter() - start)

    def _request(self, kind: str) -> tuple[str, str, bytes]:
        moves = self.rng.choice(self.positions)
        game = f"/v1/{self.game_id}"
        if kind == "search":
            return "POST", f"{game}/move", json.dumps({"moves": moves, "simulations": SEARCH_SIMULATIONS}).encode()
        if kind == "analyze_search":
            body = {"moves": moves, "search": True, "simulations": SEARCH_SIMULATIONS // 2}
            return "POST", f"{game}/analyze", json.dumps(body).encode()
        if kind == "reactive":
            return "POST", f"{game}/move", json.dumps({"moves": moves, "mode": "reactive"}).encode()
        if kind == "analyze":
            return "POST", f"{game}/analyze", json.dumps({"moves": moves}).encode()
        if kind == "position":
            return "POST", f"{game}/position", json.dumps({"moves": moves}).encode()
        if kind == "health":
            return "GET", self.rng.choice(["/healthz", "/readyz", "/metrics"]), b""
        return self.rng.choice(self.bad)

    async def _abandon(self) -> None:
        """Leave after 0.2-1 s: a long search, or a request cut halfway through its headers."""
        reader, writer = await asyncio.open_connection(self.host, self.port)
        body = json.dumps({"moves": self.rng.choice(self.positions), "time": MAX_TIME})
        request = (f"POST /v1/{self.game_id}/move HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n{body}")
        if self.rng.random() < 0.3:
            request = request[: len(request) // 4]
        writer.write(request.encode())
        await writer.drain()
        await asyncio.sleep(self.rng.uniform(0.2, 1.0))
        writer.close()
        self.tally.statuses["abandoned"]["left"] += 1


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB (Linux /proc)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def searches_working(metrics_text: str) -> float:
    for line in metrics_text.splitlines():
        if line.startswith('klent_requests_working{lane="search"}'):
            return float(line.split()[-1])
    raise RuntimeError("/metrics has no klent_requests_working{lane=\"search\"}")


async def soak(url: str, pid: int, game_id: str, positions: list[list[str]], clients: int, seconds: float,
               sample_every: float, seed: int) -> dict[str, Any]:
    """Run the traffic for ``seconds``; return the tally and the RSS samples."""
    tally = Tally()
    traffic = Traffic(url, game_id, positions, tally, seed)
    samples: list[tuple[float, float]] = []
    start = time.monotonic()
    stop_at = start + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=MAX_TIME + 30, limits=limits) as http:

        async def sampler() -> None:
            while True:
                elapsed = time.monotonic() - start
                samples.append((elapsed, rss_mb(pid)))
                answered = sum(sum(c.values()) for c in tally.statuses.values())
                print(f"  {elapsed:6.0f} s  RSS {samples[-1][1]:7.1f} MB  requests {answered:7d}  "
                      f"errors {sum(tally.errors.values())}", flush=True)
                if elapsed >= seconds:
                    return
                await asyncio.sleep(min(sample_every, max(0.0, stop_at - time.monotonic())))

        await asyncio.gather(sampler(), *(traffic.client(http, stop_at) for _ in range(clients)))
        # Abandoned searches must give their slots back once nobody waits for them.
        deadline = time.monotonic() + 10
        while (working := searches_working((await http.get("/metrics")).text)) > 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        if working > 0:
            tally.errors[f"{working:g} searches still working after the traffic stopped"] += 1
        samples.append((time.monotonic() - start, rss_mb(pid)))
    return {"tally": tally, "rss": samples}


def rss_bounded(samples: list[tuple[float, float]], seconds: float) -> bool:
    first = max(rss for t, rss in samples if t <= seconds / 2)
    second = max(rss for t, rss in samples if t > seconds / 2)
    return second <= first * (1 + RSS_GROWTH) and second - first <= RSS_SLACK_MB


def report(result: dict[str, Any], seconds: float, args: argparse.Namespace) -> bool:
    """Print the tables and the JSON summary; True when the soak passed."""
    tally: Tally = result["tally"]
    samples: list[tuple[float, float]] = result["rss"]
    bounded = rss_bounded(samples, seconds)
    print(f"\n{'kind':<15} {'requests':>8} {'p50 ms':>8} {'p99 ms':>8}  statuses")
    for kind in KINDS:
        statuses = tally.statuses.get(kind, Counter())
        print(f"{kind:<15} {sum(statuses.values()):>8} {tally.percentile(kind, 50):>8.1f} "
              f"{tally.percentile(kind, 99):>8.1f}  {dict(sorted(statuses.items()))}")
    rss = [mb for _, mb in samples]
    print(f"RSS MB: start {rss[0]:.1f}, peak {max(rss):.1f}, end {rss[-1]:.1f} "
          f"({'bounded' if bounded else 'GROWING'}: second half's peak vs first half's)")
    errors = sum(tally.errors.values())
    print(f"errors: {errors}" + (f" {dict(tally.errors)}" if errors else ""))
    print(json.dumps({
        "benchmark": "soak", "game": args.game, "model": args.model, "clients": args.clients, "seconds": seconds,
        "requests": {kind: sum(c.values()) for kind, c in tally.statuses.items()},
        "statuses": {kind: dict(c) for kind, c in tally.statuses.items()},
        "p50_ms": {kind: round(tally.percentile(kind, 50), 1) for kind in tally.latencies},
        "p99_ms": {kind: round(tally.percentile(kind, 99), 1) for kind in tally.latencies},
        "rss_mb": [[round(t, 1), round(mb, 1)] for t, mb in samples],
        "rss_bounded": bounded, "errors": dict(tally.errors),
    }))
    return errors == 0 and bounded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench soak", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="length of the soak (default 10)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--game", default="go9", help="game id (default go9)")
    parser.add_argument("--model", help="ONNX model of the game (default: the shipped weights/<game>.onnx)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.model is None:
        args.model = str(DEFAULT_WEIGHTS_DIR / f"{args.game}.onnx")
    if not Path(args.model).is_file():
        parser.error(f"no model file {args.model!r}")
    if not args.minutes > 0 or args.clients < 1:
        parser.error("--minutes must be positive and --clients at least 1")
    seconds = args.minutes * 60

    server_args = ["--max-time", str(MAX_TIME), "--read-timeout", str(READ_TIMEOUT)]
    with tempfile.TemporaryDirectory(prefix="klent-soak-") as tmp:
        shutil.copy(args.model, Path(tmp) / f"{args.game}.onnx")  # the model may be rewritten meanwhile
        positions = sample_positions(args.game, 256, seed=args.seed)
        with running_server(tmp, server_args) as server:
            print(f"soak: {args.clients} clients for {seconds:g} s against {server.url} ({args.game}) ...", flush=True)
            result = asyncio.run(soak(server.url, server.process.pid, args.game, positions, args.clients, seconds,
                                      sample_every=max(1.0, seconds / 30), seed=args.seed))
            log = server.log()
    if "Traceback" in log:
        result["tally"].errors["tracebacks in the server log"] += log.count("Traceback")
    return 0 if report(result, seconds, args) else 1


if __name__ == "__main__":
    sys.exit(main())
