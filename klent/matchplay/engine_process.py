"""Engines running in subprocesses, driven command by command with time limits.

`klent match` plays engines given as command lines: GTP engines (and GNU Go, the referee of
Go) as `GtpProcess`, UCI engines (chess, and Gardner chess and Animal Shogi against
Fairy-Stockfish), whose moves our rules judge, as `UciProcess`.  A reader thread turns the engine's stdout
into a queue of lines, so that waiting for a reply can time out (an engine that hangs loses
the game instead of hanging the match) and a crashed engine is reported as such instead of as
an empty reply.
"""

from __future__ import annotations

import queue
import shlex
import shutil
import subprocess
import sysconfig
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, TypeVar

STARTUP_TIMEOUT = 120.0  # seconds for the first reply: engines load their networks at start
P = TypeVar("P", bound="EngineProcess")


def find_program(name: str) -> str | None:
    """The path of an installed program: in klent's virtualenv (its ``bin/``, where
    ``scripts/install-pachi.sh`` builds Pachi, and which is on PATH only when the virtualenv is
    activated), on PATH, or in /usr/games, where Debian installs engines (GNU Go, Stockfish) and
    which is often not on PATH.  The virtualenv comes first, as when it is activated."""
    return (shutil.which(name, path=sysconfig.get_path("scripts")) or shutil.which(name)
            or shutil.which(name, path="/usr/games"))


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


class EngineProcess:
    """One engine subprocess and the lines it writes.

    ``command`` is a shell-like command line (split with `shlex`) or an argument list; a
    program named without a path is looked for as `find_program` does (``pachi`` is then the
    virtualenv's, ``gnugo`` Debian's in /usr/games).  The engine's stderr goes to ``stderr``
    (a file object; by default it is discarded, because engines chat on stderr and a full
    pipe would block them).  The first wait of a session lasts at least `STARTUP_TIMEOUT`:
    engines load their networks then.
    """

    def __init__(self, command: str | Sequence[str], stderr: IO[str] | None = None) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise ValueError("empty engine command")
        self.command = command if isinstance(command, str) else shlex.join(self.argv)
        if "/" not in self.argv[0]:
            self.argv[0] = find_program(self.argv[0]) or self.argv[0]
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

    def _write(self, command: str, timeout: float | None) -> float | None:
        """Send one command line; returns the deadline of its answer (None: no limit), the
        first answer of the session waited for getting at least `STARTUP_TIMEOUT`."""
        if timeout is not None and not self._started:
            timeout = max(timeout, STARTUP_TIMEOUT)
            self._started = True
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise EngineCrashed(f"{self.command!r} exited (status {self.process.poll()})") from None
        return None if timeout is None else time.monotonic() + timeout

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
                self._write("quit", timeout)
            except EngineError:
                pass
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        # The reader ends at the output's end, which the exit brings; its file is closed after
        # it (closing it under the reader's loop raised in that thread).  A grandchild holding
        # the pipe open must not hold us: the wait is bounded.
        self._reader.join(timeout)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass

    def __enter__(self: P) -> P:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class GtpProcess(EngineProcess):
    """One GTP engine subprocess: `send` a command, get its reply."""

    def send(self, command: str, timeout: float | None = 60.0) -> str:
        """Send ``command`` and return the reply text (without the ``=``).

        Raises `GtpFailure` on a ``?`` reply, `EngineTimeout` when no complete reply arrives
        within ``timeout`` seconds (the first command of a session gets at least
        `STARTUP_TIMEOUT`), and `EngineCrashed` when the process is gone.
        """
        deadline = self._write(command, timeout)
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

    def send_optional(self, command: str, timeout: float | None = 60.0) -> str | None:
        """`send` for a command not every engine knows (``set_random_seed``, the clock's): the
        reply, or None when the engine refuses it (a crash or a timeout is raised as by `send`)."""
        try:
            return self.send(command, timeout)
        except GtpFailure:
            return None


class UciProcess(EngineProcess):
    """One UCI engine subprocess: the handshake, options, and one ``bestmove`` per `best_move`.

    UCI engines answer a bad option or position with an ``info string`` at most, or not at
    all, so `start` checks the options against the engine's ``uci`` declarations (an option
    the engine lacks, a combo value it does not list, is an `EngineError` before any game),
    and the caller judges the moves by its own rules.
    """

    def start(
        self, options: Mapping[str, str], timeout: float = 60.0, optional: Mapping[str, str] | None = None
    ) -> str:
        """``uci``, the ``options`` (name: value), ``isready``; returns the engine's name.
        ``optional`` options are set only where the engine declares them (``UCI_ShowWDL``)."""
        declared: dict[str, list[str]] = {}  # option name (lower case) -> its combo values
        name = ""
        for line in self.ask("uci", "uciok", timeout):
            if line.startswith("id name "):
                name = line[len("id name "):].strip()
            elif line.startswith("option name "):
                option, _, kind = line[len("option name "):].partition(" type ")
                declared[option.strip().lower()] = [value.lower() for value in kind.split(" var ")[1:]]
        options = {**{k: v for k, v in (optional or {}).items() if k.lower() in declared}, **options}
        for option, value in options.items():
            choices = declared.get(option.lower())
            if choices is None:
                raise EngineError(f"{self.command!r} has no option {option!r}")
            if choices and value.lower() not in choices:
                raise EngineError(f"{self.command!r} does not offer {option} {value!r}")
            self.tell(f"setoption name {option} value {value}")
        self.new_game(timeout)
        return name or self.argv[0]

    def new_game(self, timeout: float = 60.0) -> None:
        """``ucinewgame``, then wait until the engine is ready."""
        self.tell("ucinewgame")
        self.ask("isready", "readyok", timeout)

    def best_move(self, position: str, go: str, timeout: float | None) -> str:
        """Send ``position`` and ``go``; the move of the ``bestmove`` answer, as written."""
        self.tell(position)
        words = self.ask(go, "bestmove", timeout)[-1].split()
        return words[1] if len(words) > 1 else ""

    def tell(self, command: str) -> None:
        """Send a command that has no answer (``setoption``, ``position``)."""
        self._write(command, None)

    def ask(self, command: str, answer: str, timeout: float | None) -> list[str]:
        """Send ``command``; the lines it prints up to the first that starts with the word
        ``answer`` (``info`` lines included)."""
        deadline = self._write(command, timeout)
        lines: list[str] = []
        while not (lines and lines[-1].split()[:1] == [answer]):
            lines.append(self._next_line(command, deadline))
        return lines
