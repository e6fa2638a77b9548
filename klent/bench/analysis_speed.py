"""Visits per second of `klent analysis` beside `klent gtp`'s ``kata-analyze``, in one run.

Both analyse the same position (the empty board of ``--size``) with the shipped model (or
``--model``) on one ONNX Runtime thread, each a fresh process per round: `klent analysis`
answers a KataGo query of ``--visits`` visits that reports every 0.25 s (its first report's
latency is printed too: what a GUI waits before it shows anything), and `klent gtp` runs
``kata-analyze`` for ``--seconds`` and its visits are read off its last info line.  Each
figure is the best of ``--rounds``.

    klent bench analysis_speed [--size 9] [--visits 2000] [--seconds 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

ANALYSIS_REPORT_EVERY = 0.25


def analysis_round(size: int, visits: int, model: list[str]) -> tuple[float, float]:
    """(visits/s, seconds to the first report) of one KataGo query answered by `klent analysis`."""
    command = [sys.executable, "-m", "klent", "analysis", "--threads", "1", "--analysis-threads", "1", *model]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdin is not None and process.stdout is not None
        query = {"id": "warm-up", "moves": [], "rules": "chinese", "komi": 7.5, "boardXSize": size,
                 "boardYSize": size, "maxVisits": 16}
        process.stdin.write(json.dumps(query) + "\n")
        process.stdin.flush()
        process.stdout.readline()  # the model is loaded and its code compiled
        start = time.perf_counter()
        query.update(id="timed", maxVisits=visits, reportDuringSearchEvery=ANALYSIS_REPORT_EVERY)
        process.stdin.write(json.dumps(query) + "\n")
        process.stdin.flush()
        first = None
        while True:
            answer = json.loads(process.stdout.readline())
            first = time.perf_counter() - start if first is None else first
            if not answer.get("isDuringSearch", False):
                break
        elapsed = time.perf_counter() - start
        process.stdin.close()
    if "error" in answer:
        raise RuntimeError(f"klent analysis answered {answer}")
    return answer["rootInfo"]["visits"] / elapsed, first


def gtp_round(size: int, seconds: float, model: list[str]) -> float:
    """Visits/s of `klent gtp`'s ``kata-analyze`` over ``seconds``, from its last info line."""
    command = [sys.executable, "-m", "klent", "gtp", "--threads", "1", *model]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(f"boardsize {size}\nclear_board\ngenmove b\nclear_board\n")
        process.stdin.flush()
        for _ in range(4):  # four answers, each ended by an empty line
            while process.stdout.readline().strip():
                pass
        start = time.perf_counter()
        process.stdin.write("kata-analyze b 25\n")
        process.stdin.flush()
        last, at = "", start
        while time.perf_counter() - start < seconds:
            line = process.stdout.readline()
            if line.startswith("info"):
                last, at = line, time.perf_counter()
        process.stdin.write("quit\n")
        process.stdin.flush()
    moves = last.split("info move ")[1:]
    return sum(int(move.split()[2]) for move in moves) / (at - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench analysis_speed", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=9, help="board size (default 9)")
    parser.add_argument("--visits", type=int, default=2000, help="visits of the analysis query (default 2000)")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of the kata-analyze run (default 3)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, best kept (default 3)")
    parser.add_argument("--model", help="ONNX model (default: the shipped one for the size)")
    args = parser.parse_args(argv)
    if args.visits < 16 or args.seconds <= 0 or args.rounds < 1:
        parser.error("--visits must be at least 16, --seconds positive and --rounds at least 1")
    model = [] if args.model is None else ["--model", args.model]
    analysis, firsts, gtp = [], [], []
    for _ in range(args.rounds):
        rate, first = analysis_round(args.size, args.visits, model)
        analysis.append(rate)
        firsts.append(first)
        gtp.append(gtp_round(args.size, args.seconds, model))
    print(f"klent analysis: {max(analysis):,.0f} visits/s, first report after {1000 * min(firsts):.0f} ms")
    print(f"klent gtp kata-analyze: {max(gtp):,.0f} visits/s")
    print(f"ratio analysis / gtp: {max(analysis) / max(gtp):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
