"""A `klent analysis` subprocess driven as KataGo's analysis clients drive theirs: JSON lines in,
JSON lines out, read by a thread as they come (answers arrive out of order)."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

ANSWER_TIMEOUT = 30.0  # seconds; longer is a hang


class AnalysisProcess:
    """`klent analysis` with ``args``; every output line must be one JSON object."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "klent", "analysis", *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            answer = json.loads(line)  # a line that is not JSON fails the test at `next`
            assert isinstance(answer, dict), line
            self.answers.put(answer)
        self.answers.put(None)

    def send(self, query: dict[str, Any] | str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((query if isinstance(query, str) else json.dumps(query)) + "\n")
        self.process.stdin.flush()

    def next(self, timeout: float = ANSWER_TIMEOUT) -> dict[str, Any]:
        try:
            answer = self.answers.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer within {timeout} s") from None
        if answer is None:
            raise AssertionError(f"klent analysis ended: {self.stderr()}")
        self.seen.append(answer)
        return answer

    def until(self, done: Callable[[dict[str, Any]], bool], timeout: float = ANSWER_TIMEOUT) -> list[dict[str, Any]]:
        """The answers up to and including the first that ``done`` accepts."""
        deadline = time.monotonic() + timeout
        got = []
        while True:
            answer = self.next(max(0.01, deadline - time.monotonic()))
            got.append(answer)
            if done(answer):
                return got

    def final(self, id: str, timeout: float = ANSWER_TIMEOUT) -> dict[str, Any]:
        """The next answer of ``id`` that ends a turn (or its error)."""
        return self.until(lambda a: a.get("id") == id and ("error" in a or a.get("isDuringSearch") is False),
                          timeout)[-1]

    def close(self) -> int:
        """End the input; the exit status once the queued queries are answered."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        while (answer := self.answers.get(timeout=ANSWER_TIMEOUT)) is not None:
            self.seen.append(answer)
        return self.process.wait(timeout=ANSWER_TIMEOUT)

    def stderr(self) -> str:
        self.process.kill()
        assert self.process.stderr is not None
        return self.process.stderr.read()[-2000:]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
