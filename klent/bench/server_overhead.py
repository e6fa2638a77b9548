"""The server's own work per reactive request: what a `/v1/<game>/move` costs beyond the network.

It measures the time a reactive request spends outside the network (HTTP, JSON, the
position's replay, the encoding, the batcher's hand-off, the decision) to be cut to half of
what it was.  Wall-clock latency on a shared 2-core machine mixes that work with the client's
and with other jobs, so this measures CPU time instead: `klent serve` runs as its own process
(one ONNX Runtime thread), one keep-alive client sends reactive move requests one after
another, and the server process's CPU time (utime + stime from /proc, every thread of it) is
read around each round.  The network's own CPU time per position at batch 1 is measured here
in-process on the same model (`OnnxEvaluator`, one thread, the same positions) and subtracted:
what is left is the server's work outside the network.  Each figure is the best of
``--rounds`` rounds, which other processes' load can only inflate.

    python -m klent.bench.server_overhead --model weights/go9.onnx [--requests 256] [--rounds 6]

Linux only (/proc).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import klent.engine.games
from klent.bench.server import _Connection, running_server, sample_positions
from klent.engine.network import OnnxEvaluator


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and all its threads so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _send_all(url: str, path: str, bodies: Sequence[bytes]) -> None:
    host, port = url.removeprefix("http://").split(":")
    connection = await _Connection.open(host, int(port))
    try:
        for body in bodies:
            status, answer = await connection.post(path, body)
            if status != 200:
                raise RuntimeError(f"request failed with {status}: {answer[:200]!r}")
    finally:
        connection.close()


def network_cpu_per_position(model: str, game_id: str, moves: Sequence[Sequence[str]], rounds: int) -> float:
    """CPU seconds of one reactive network call (batch 1, one thread), best of ``rounds``."""
    game = klent.engine.games.get(game_id)
    evaluator = OnnxEvaluator(model, game=game, threads=1)
    states = []
    for line in moves:
        state = game.initial_state()
        for text in line:
            state = state.play(game.text_to_action(state, text))
        states.append(state)
    encoded = [klent.engine.network.encode_states(evaluator.game, [state]) for state in states]
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for obs, masks in encoded:
            evaluator.evaluate_encoded(obs, masks)
        best = min(best, (time.process_time() - start) / len(encoded))
    return best


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="ONNX model of the game")
    parser.add_argument("--game", default="go9", help="its game id (default go9)")
    parser.add_argument("--requests", type=int, default=256, help="requests per round (default 256)")
    parser.add_argument("--rounds", type=int, default=6, help="rounds, the best kept (default 6)")
    args = parser.parse_args(argv)

    moves = sample_positions(args.game, args.requests)
    bodies = [json.dumps({"moves": line, "mode": "reactive"}).encode() for line in moves]
    path = f"/v1/{args.game}/move"
    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(args.model, Path(folder) / f"{args.game}.onnx")
        with running_server(folder, ["--threads", "1"]) as server:
            pid = server.process.pid
            asyncio.run(_send_all(server.url, path, bodies))  # warm: lazy compilation, caches
            per_request = []
            for _ in range(args.rounds):
                start = process_cpu_seconds(pid)
                asyncio.run(_send_all(server.url, path, bodies))
                per_request.append((process_cpu_seconds(pid) - start) / len(bodies))
    network = network_cpu_per_position(args.model, args.game, moves, args.rounds)
    total = min(per_request)
    rounds = " ".join(f"{seconds * 1e3:.2f}" for seconds in per_request)
    print(f"{args.game} reactive {path}, {len(bodies)} requests x {args.rounds} rounds, CPU ms per request:")
    print(f"  server process  {total * 1e3:.3f}  (rounds: {rounds})")
    print(f"  network alone   {network * 1e3:.3f}  (batch 1, one thread, in-process)")
    print(f"  outside it      {(total - network) * 1e3:.3f}")


if __name__ == "__main__":
    main()
