"""A GTP controller's input lines, read on a thread so that a running analysis can see that a
line waits and stop (GTP's analysis commands run until the next input line)."""

from __future__ import annotations

import queue
import threading
from typing import BinaryIO

from klent.protocols.gtp_wire import MAX_LINE, parse

TOO_LONG = "\x00too-long"  # marks an input line cut at MAX_LINE


class LineReader:
    """The lines of ``stdin``, decoded; ``ready`` is set while a line waits to be handled."""

    def __init__(self, stdin: BinaryIO, ready: threading.Event) -> None:
        self._stdin = stdin
        self._ready = ready
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def get(self) -> str | None:
        """The next line, waiting for it; None at the end of input.  A line longer than
        `MAX_LINE` comes as its first 64 bytes followed by `TOO_LONG`."""
        line = self._lines.get()
        with self._lock:
            if self._lines.empty():
                self._ready.clear()
        return line

    def _read(self) -> None:
        # Reading stops after the last line (end of input or ``quit``): a thread still
        # blocked on stdin would abort the interpreter's exit.
        last = False
        while not last:
            raw = self._stdin.readline(MAX_LINE + 1)
            text: str | None
            if not raw:
                text, last = None, True
            elif len(raw) > MAX_LINE and not raw.endswith(b"\n"):
                while (rest := self._stdin.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                    pass  # drop the rest of an over-long line
                text = raw[:64].decode("utf-8", "replace") + TOO_LONG
            else:
                text = raw.decode("utf-8", "replace")
                command = parse(text)
                last = command is not None and command.name == "quit"
            with self._lock:
                self._lines.put(text)
                self._ready.set()
