"""The SGF files of GTP's ``loadsgf`` and ``printsgf``: read within a size cap, written
atomically, a path that is no regular file refused."""

from __future__ import annotations

import os

from klent.engine.files import read_bounded
from klent.engine.games.sgf import GoRecord, read_sgf
from klent.engine.player import write_text_atomically
from klent.protocols.gtp_wire import GtpError

# The largest file `loadsgf` reads: the HTTP API's 200,000 characters of SGF, at up to 4 bytes a
# character (a long 19x19 game with comments is tens of KB).  A larger one is refused unread.
MAX_SGF_BYTES = 800_000


def load_record(name: str) -> GoRecord:
    """The game record in the file ``name``; `GtpError` when it cannot be read."""
    if os.path.exists(name) and not os.path.isfile(name):  # a fifo or /dev/zero: no end
        raise GtpError("cannot load file (not a regular file)")
    try:
        return read_sgf(read_bounded(name, MAX_SGF_BYTES))
    except (OSError, ValueError) as error:  # ValueError: too large, or a `GameFormatError`
        raise GtpError(f"cannot load file ({error})") from None


def save_record(name: str, text: str) -> None:
    """Write the SGF ``text`` to the file ``name``; `GtpError` when it cannot be written."""
    path = _writable_file(name)
    try:
        write_text_atomically(path, text)
    except OSError as error:
        raise GtpError(f"cannot write {name} ({error.strerror or error})") from None


def _writable_file(name: str) -> str:
    """The file ``printsgf name`` may write: an existing regular file (links followed) or a new
    one in an existing folder.

    The record replaces its target atomically, which would as readily replace a folder entry for
    a device or a fifo, or create missing folders; a controller naming such a path made a
    mistake, so it gets an error and the path is left as it was.
    """
    path = os.path.realpath(name)
    # os.path's tests answer False where Path's raise (a name too long, a folder we may not read).
    if os.path.lexists(path) and not os.path.isfile(path):
        raise GtpError(f"cannot write {name} (not a regular file)")
    if not os.path.isdir(os.path.dirname(path)):
        raise GtpError(f"cannot write {name} (no such folder)")
    return path

