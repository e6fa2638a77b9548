"""A GTP engine running in a subprocess, driven command by command with time limits.

`klent match` plays engines given as command lines and uses GNU Go as the referee; each of
them is a `GtpProcess`.  A reader thread turns the engine's stdout into a queue of lines, so
that waiting for a reply can time out (an engine that hangs loses the game instead of hanging
the match) and a crashed engine is reported as such instead of as an empty reply.
"""

from __future__ import annotations

import queue
import shlex
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import IO

STARTUP_TIMEOUT = 120.0  # seconds for the first reply: engines load their networks at start


class EngineError(Exception):
    """An engine did not behave: it crashed, timed out or broke the protocol."""


class EngineCrashed(EngineError):
    """The engine process exited (or closed its stdout) before answering."""


class EngineTimeout(EngineError):
    """The engine did not answer within the time limit."""


class GtpFailure(EngineError):
    """The engine answered ``? message`` (``message`` is the text after the ``?``)."""

    def __init__(self, command: str, message: str) -> None:
        super().__init__(f"{command!r} failed: {message}")
        self.command = command
        self.message = message


class GtpProcess:
    """One GTP engine subprocess.

    ``command`` is a shell-like command line (split with `shlex`) or an argument list.  The
    engine's stderr goes to ``stderr`` (a file object; by default it is discarded, because
    engines chat on stderr and a full pipe would block them).
    """

    def __init__(self, command: str | Sequence[str], stderr: IO[str] | None = None) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise ValueError("empty engine command")
        self.command = command if isinstance(command, str) else shlex.join(self.argv)
        try:
            self.process = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr if stderr is not None else subprocess.DEVNULL,
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
            )
        except OSError as error:
            raise EngineCrashed(f"cannot start {self.command!r}: {error}") from None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._started = False

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line.rstrip("\r\n"))
        self._lines.put(None)  # end of output: the engine exited or closed stdout

    def send(self, command: str, timeout: float | None = 60.0) -> str:
        """Send ``command`` and return the reply text (without the ``=``).

        Raises `GtpFailure` on a ``?`` reply, `EngineTimeout` when no complete reply arrives
        within ``timeout`` seconds (the first command of a session gets at least
        `STARTUP_TIMEOUT`), and `EngineCrashed` when the process is gone.
        """
        if not self._started:
            timeout = None if timeout is None else max(timeout, STARTUP_TIMEOUT)
            self._started = True
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise EngineCrashed(f"{self.command!r} exited (status {self.process.poll()})") from None
        deadline = None if timeout is None else time.monotonic() + timeout
        reply: list[str] = []
        while True:
            line = self._next_line(command, deadline)
            if not reply:
                if not line.startswith(("=", "?")):
                    continue  # noise before the reply (some engines print banners)
                reply.append(line)
            elif line.strip() == "":
                break
            else:
                reply.append(line)
        head, text = reply[0], "\n".join([reply[0][1:].lstrip("0123456789"), *reply[1:]]).strip()
        if head.startswith("?"):
            raise GtpFailure(command, text)
        return text

    def _next_line(self, command: str, deadline: float | None) -> str:
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            line = self._lines.get(timeout=remaining)
        except queue.Empty:
            raise EngineTimeout(f"{self.command!r} did not answer {command!r} in time") from None
        if line is None:
            self._lines.put(None)  # keep reporting the end to later calls
            status = self.process.wait()
            raise EngineCrashed(f"{self.command!r} exited (status {status}) during {command!r}")
        return line

    def close(self, timeout: float = 5.0) -> None:
        """Ask the engine to quit, and kill it if it does not exit within ``timeout`` seconds."""
        if self.process.poll() is None:
            self._started = True  # no start-up grace for a goodbye
            try:
                self.send("quit", timeout=timeout)
            except EngineError:
                pass
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass

    def __enter__(self) -> GtpProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
