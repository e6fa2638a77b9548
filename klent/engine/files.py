"""Atomic file writes: readers see the old file or the complete new one, never a torn one.

Every file klent writes for someone else to read (checkpoints, ONNX models, metrics logs,
match records, SGF files, plots) goes through :func:`atomic_target`, so a process killed
mid-write (a training run stopped with SIGTERM, a full disk) leaves the previous version intact.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_target(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it over ``path`` once written.

    The temporary file lives in the same folder (a rename is atomic only within one file
    system) and keeps ``path``'s suffix, so writers that pick a format from the name (matplotlib)
    still work.  The data is flushed to disk before the rename, and the file gets mode 0644
    (temporary files are created 0600).  On an error the temporary file is removed and the old
    file is left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb") as written:
            os.fsync(written.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomically(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through :func:`atomic_target`."""
    with atomic_target(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def copy_atomically(source: str | os.PathLike[str], path: str | os.PathLike[str]) -> None:
    """Copy the file ``source`` to ``path`` through :func:`atomic_target`."""
    with atomic_target(path) as tmp:
        shutil.copyfile(source, tmp)
