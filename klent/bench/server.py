"""HTTP throughput with request batching on vs off: 32 concurrent clients on 127.0.0.1.

Starts `klent serve` twice on the same 9x9 Go model, once with batching (``--max-batch 64``)
and once evaluating one network call at a time (``--max-batch 1``), sends move requests from
32 concurrent keep-alive clients for a fixed time, and prints requests/s and the p50/p99
latency of each side by side.  ``--mode reactive`` (the default) asks one network call per
request; target: batching gives >= 5x the throughput (set for a GPU).  ``--mode search`` asks
``--simulations`` (default 200) Gumbel simulations per request, each search's network calls
merged with the others' by the batcher; target (on a CPU): >= 1.6x.  No errors in
either.

    klent bench server [--mode reactive|search] [--simulations 200] [--clients 32] [--duration 10]
                       [--game go9] [--model weights/go9.onnx]

Without ``--model`` a 6-block x 64-channel untrained network is exported first (`klent
export --random`); speed does not depend on the weights.  All traffic goes to 127.0.0.1 and
every client stops after ``--duration`` seconds.

Recorded (2026-11-22, this 2-core CPU machine shared with other jobs, load average 5-7, so
indicative only; `python -m klent.bench.server --duration 10`, untrained 6x64 go9):

    server           requests/s   p50 ms   p99 ms  errors
    batching              290.5     99.8    266.0       0
    one at a time         287.4    102.2    334.1       0
    speed-up 1.01x (misses the 5x target)

Why the target is missed here: on this CPU the network's cost per position hardly falls with
the batch size (ONNX Runtime, 6x64 on 9x9, measured in-process: 1 thread 0.86 ms at batch 1
vs 0.72 ms per position at batch 64; 2 threads 0.74 vs 0.39 ms), and the Python side of a
request (HTTP, JSON, replaying the moves) costs about as much as its network call.  Merging
pays where a network call has a large fixed cost, i.e. on a GPU; this was not measured here.

``--mode search`` (2026-11-25, docs/experiments/2026-11-25-int8.md): batched 0.78x one at a
time, 0 errors.  A search already batches its own leaves (a 200-simulation search of go9 makes
9 network calls of 16-32 positions), so on this CPU merging searches has nothing left to gain.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TARGET_SPEEDUP = {"reactive": 5.0, "search": 1.6}  # batching against one at a time, by --mode


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ServerProcess:
    """A `klent serve` subprocess and where it listens."""

    process: subprocess.Popen[str]
    url: str
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def running_server(
    models_dir: str | os.PathLike[str],
    args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    startup_timeout: float = 300.0,
) -> Iterator[ServerProcess]:
    """Run `klent serve` on a free port of 127.0.0.1 until the block ends (then SIGTERM).

    Waits for ``/readyz``; raises RuntimeError with the server's output if it does not come up.
    A server that exits is reported at once; ``startup_timeout`` only bounds a slow start, and
    the first start from a fresh checkout compiles the search's and TD search's numba kernels
    in the warm-up (about 35 CPU-seconds), which took over a minute on a loaded two-core machine.
    """
    import httpx

    port = free_port()
    log = tempfile.NamedTemporaryFile("w+", prefix="klent-serve-", suffix=".log", delete=False)
    command = [sys.executable, "-m", "klent", "serve", "--host", "127.0.0.1", "--port", str(port),
               "--models", os.fspath(models_dir), *args]
    process = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, **(env or {})},
    )
    server = ServerProcess(process, f"http://127.0.0.1:{port}", Path(log.name))
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"klent serve exited with {process.returncode}:\n{server.log()}")
            try:
                if httpx.get(f"{server.url}/readyz", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"klent serve did not become ready in {startup_timeout:g} s:\n{server.log()}")
            time.sleep(0.1)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log.close()
        os.unlink(log.name)


def sample_positions(game_id: str, count: int, seed: int = 0) -> list[list[str]]:
    """Move lists of ``count`` random positions (0..40 random moves), so requests differ."""
    import klent.engine.games

    game = klent.engine.games.get(game_id)
    rng = np.random.default_rng(seed)
    positions = []
    for _ in range(count):
        state, moves = game.initial_state(), []
        for _ in range(int(rng.integers(0, 41))):
            action = int(rng.choice(np.flatnonzero(state.legal_mask())))
            child = state.play(action)
            if child.is_terminal:
                break
            moves.append(game.action_to_text(state, action))
            state = child
        positions.append(moves)
    return positions


@dataclass
class LoadResult:
    requests: int
    failures: dict[str, int]  # HTTP status or exception name -> count
    seconds: float
    latencies: list[float]

    @property
    def errors(self) -> int:
        return sum(self.failures.values())

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latencies, q)) if self.latencies else float("nan")


class _Connection:
    """A keep-alive HTTP/1.1 connection on raw asyncio streams.

    The load generator shares the 2 cores with the server, so it must cost far less per
    request than the server does: httpx costs about as much as the server itself, which would
    make the benchmark measure the client.  This speaks just enough HTTP for JSON POSTs.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self.reader, self.writer, self.host = reader, writer, host

    @classmethod
    async def open(cls, host: str, port: int) -> _Connection:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer, host)

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        head = (f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n")
        self.writer.write(head.encode() + body)
        header = await self.reader.readuntil(b"\r\n\r\n")
        lines = header.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        length = next(int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:"))
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        self.writer.close()


def request_fields(mode: str, simulations: int) -> dict[str, object]:
    """The decision fields of every request a run of ``mode`` sends."""
    return {"mode": "reactive"} if mode == "reactive" else {"mode": "search", "simulations": simulations}


async def _load(
    url: str, game_id: str, positions: list[list[str]], fields: dict[str, object], clients: int, duration: float
) -> LoadResult:
    host, port = url.removeprefix("http://").split(":")
    bodies = [json.dumps({"moves": moves, **fields}).encode() for moves in positions]
    path = f"/v1/{game_id}/move"
    latencies: list[float] = []
    failures: dict[str, int] = {}
    stop_at = time.monotonic() + duration

    def fail(reason: str) -> None:
        failures[reason] = failures.get(reason, 0) + 1

    async def worker(index: int) -> None:
        connection = await _Connection.open(host, int(port))
        try:
            i = index
            while time.monotonic() < stop_at:
                body = bodies[i % len(bodies)]
                i += clients
                start = time.perf_counter()
                try:
                    status, _ = await connection.post(path, body)
                except (OSError, asyncio.IncompleteReadError, ValueError) as error:
                    fail(type(error).__name__)
                    connection.close()
                    connection = await _Connection.open(host, int(port))
                    continue
                if status == 200:
                    latencies.append(time.perf_counter() - start)
                else:
                    fail(f"HTTP {status}")
        finally:
            connection.close()

    start = time.monotonic()
    await asyncio.gather(*(worker(i) for i in range(clients)))
    return LoadResult(len(latencies), failures, time.monotonic() - start, latencies)


def measure(models_dir: Path, game_id: str, max_batch: int, fields: dict[str, object], clients: int,
            duration: float, positions: list[list[str]]) -> LoadResult:
    """Throughput and latency of one server configuration (after a short warm-up).

    Both lanes get a slot per client (and room to spare), so that no request of the
    benchmark is refused for want of one: a 503 would count as an error, not as load.
    """
    lanes = ["--max-concurrency", str(4 * clients), "--max-searches", str(4 * clients)]
    with running_server(models_dir, ["--max-batch", str(max_batch), *lanes]) as server:
        asyncio.run(_load(server.url, game_id, positions, fields, clients, min(2.0, duration)))
        return asyncio.run(_load(server.url, game_id, positions, fields, clients, duration))


def _export_random_model(folder: Path, game_id: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "klent", "export", "--random", "--game", game_id, "--blocks", "6",
         "--channels", "64", "-o", str(folder / f"{game_id}.onnx")],
        check=True, stdout=subprocess.DEVNULL,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench server", description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=tuple(TARGET_SPEEDUP), default="reactive",
                        help="reactive moves (one network call) or searches (default reactive)")
    parser.add_argument("--simulations", type=int, default=200, help="simulations per search request (default 200)")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
    parser.add_argument("--max-batch", type=int, default=64, help="the batching server's --max-batch (default 64)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per configuration (default 10)")
    parser.add_argument("--game", default="go9", help="game id (default go9)")
    parser.add_argument("--model", help="ONNX model of the game (default: export an untrained 6x64 network)")
    args = parser.parse_args(argv)
    if min(args.clients, args.simulations, args.max_batch) < 1 or args.duration <= 0:
        parser.error("--clients, --simulations and --max-batch must be >= 1 and --duration > 0")
    fields = request_fields(args.mode, args.simulations)
    target = TARGET_SPEEDUP[args.mode]

    with tempfile.TemporaryDirectory(prefix="klent-bench-") as tmp:
        models = Path(tmp)
        if args.model:
            shutil.copy(args.model, models / f"{args.game}.onnx")
        else:
            print(f"exporting an untrained 6x64 {args.game} network ...", flush=True)
            _export_random_model(models, args.game)
        positions = sample_positions(args.game, 256)
        results = {}
        for label, max_batch in (("batching", args.max_batch), ("one at a time", 1)):
            print(f"{label}: {args.clients} clients asking {fields} for {args.duration:g} s ...", flush=True)
            results[label] = measure(models, args.game, max_batch, fields, args.clients, args.duration, positions)

    on, off = results["batching"], results["one at a time"]
    print(f"\n{'server':<15} {'requests/s':>11} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}")
    for label, result in results.items():
        print(f"{label:<15} {result.rate:>11.1f} {1000 * result.percentile(50):>8.1f} "
              f"{1000 * result.percentile(99):>8.1f} {result.errors:>7}")
    for label, result in results.items():
        if result.failures:
            print(f"{label} failures: {result.failures}")
    speedup = on.rate / off.rate if off.rate else float("inf")
    verdict = "meets" if speedup >= target else "misses"
    print(f"speed-up {speedup:.2f}x ({verdict} the {target:g}x target)")
    print(json.dumps({
        "benchmark": "server", "game": args.game, **fields, "clients": args.clients, "max_batch": args.max_batch,
        "duration": args.duration,
        "model": args.model or "untrained resnet-6x64",
        **{f"{key}_{name}": value for key, r in (("batching", on), ("single", off)) for name, value in
           (("rps", round(r.rate, 1)), ("p50_ms", round(1000 * r.percentile(50), 2)),
            ("p99_ms", round(1000 * r.percentile(99), 2)), ("errors", r.errors))},
        "speedup": round(speedup, 2),
    }))
    return 0 if on.errors == 0 and off.errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
