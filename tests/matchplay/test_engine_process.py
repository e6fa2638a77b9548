"""Engine subprocesses (klent/matchplay/engine_process.py): closing one is quiet."""

from __future__ import annotations

import subprocess
import sys


def test_closing_an_engine_never_raises_in_its_reader_thread(gnugo_path: str) -> None:
    """The reader thread ends at the output's end before its file is closed; closing the file
    under its loop raised "I/O operation on closed file" in that thread, now and then."""
    code = (
        "from klent.matchplay.engine_process import GtpProcess\n"
        "for _ in range(60):\n"
        f"    with GtpProcess([{gnugo_path!r}, '--mode', 'gtp']) as engine:\n"
        "        engine.send('boardsize 9')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
