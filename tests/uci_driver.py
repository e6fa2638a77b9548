"""`klent uci` (or any UCI engine) driven line by line from a test, with a timeout on every answer."""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from collections.abc import Callable


class RawEngine:
    """`klent uci` as a subprocess spoken to line by line, with timeouts on every answer."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, *lines: str) -> None:
        assert self.process.stdin is not None
        for line in lines:
            self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def until(self, done: Callable[[str], bool], timeout: float) -> list[str]:
        """Lines up to and including the first that satisfies ``done``."""
        deadline = time.monotonic() + timeout
        seen: list[str] = []
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no answer within {timeout} s; got {seen[-5:]}") from None
            if line is None:
                raise AssertionError(f"engine exited ({self.process.poll()}); got {seen[-5:]}")
            seen.append(line)
            if done(line):
                return seen

    def ready(self, timeout: float = 30.0) -> list[str]:
        self.send("isready")
        return self.until(lambda line: line == "readyok", timeout)

    def quiet_for(self, seconds: float) -> list[str]:
        """Everything printed during ``seconds`` (the engine must stay alive)."""
        time.sleep(seconds)
        out = []
        while not self.lines.empty():
            line = self.lines.get()
            assert line is not None, "engine exited"
            out.append(line)
        return out

    def close(self) -> int:
        try:
            self.send("quit")
        except (BrokenPipeError, OSError):
            pass
        try:
            return self.process.wait(timeout=10)
        finally:
            if self.process.poll() is None:
                self.process.kill()
