"""Atomic file writes, and reads bounded in size before they parse.

Every file klent writes for someone else to read (checkpoints, ONNX models, metrics logs,
match records, SGF files, plots) goes through :func:`atomic_target`, so a process killed
mid-write (a training run stopped with SIGTERM, a full disk) leaves the previous version intact.

The files klent reads that someone else may have written (match records, labelled sets,
checkpoints, settings, SGF files) are read through the helpers below, each with a limit its
caller chose from what real files need: a hostile or corrupt file (a zip bomb, an endless file,
JSON nested 100,000 deep) costs bounded memory and time and ends in a ValueError naming it,
which the command line prints as one line.
"""

from __future__ import annotations

import contextlib
import json
import lzma
import math
import os
import shutil
import stat
import tempfile
import typing
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

# Whether an array's declared shape and dtype are what a reader expects (`read_npz_member`).
Fits = Callable[[tuple[int, ...], np.dtype], bool]
# What reading a corrupt zip archive or member raises besides ValueError: a bad structure or
# CRC, corrupt deflate, bzip2 (an OSError) or LZMA data, compressed data cut short, a missing
# member, an unknown compression method, an encrypted member (a RuntimeError).
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, lzma.LZMAError, EOFError, KeyError, NotImplementedError,
               RuntimeError)
_NPY_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


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


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the file ``path``, if it holds at most ``limit``: a larger (or endless) file
    is a ValueError naming it, after at most ``limit + 1`` bytes read; OSError as raised."""
    with open(path, "rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise _too_large(path, limit)
    return data


def read_text(path: str | os.PathLike[str], limit: int) -> str:
    """The UTF-8 text of the file ``path``, read as `read_bounded` reads; bytes that are not
    UTF-8 are a ValueError naming the file."""
    try:
        return read_bounded(path, limit).decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None


def parse_json(text: str | bytes) -> Any:
    """``json.loads(text)``, with every failure a ValueError: malformed JSON and an integer of
    more digits than Python converts are ValueErrors already, JSON nested deeper than the
    parser's recursion goes (a RecursionError) becomes one."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def read_json(path: str | os.PathLike[str], limit: int) -> Any:
    """The JSON value in the file ``path``, read as `read_bounded` reads; anything that keeps it
    from being parsed is a ValueError naming the file."""
    data = read_bounded(path, limit)
    try:
        return parse_json(data)
    except ValueError as error:
        raise ValueError(f"{path}: not JSON ({error})") from None


def check_size(path: str | os.PathLike[str], limit: int) -> None:
    """Raise a ValueError naming ``path`` unless it is a regular file (a fifo would block the
    reader, a device never end) of at most ``limit`` bytes which, if a zip archive, declares
    members that inflate to at most that in all: for a reader that takes a file whole
    (``torch.load``), checked before it does."""
    status = os.stat(path)
    if not stat.S_ISREG(status.st_mode):
        raise ValueError(f"{path}: not a regular file")
    if status.st_size > limit:
        raise _too_large(path, limit)
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as archive:
                inflated = sum(info.file_size for info in archive.infolist())
        except _ZIP_ERRORS as error:
            raise ValueError(f"{path}: not a zip archive ({error})") from None
        if inflated > limit:
            raise ValueError(f"{path}: its members inflate to {inflated} bytes, more than {limit}")


def read_npz(path: str | os.PathLike[str], limit: int, kind: str) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` file ``path`` (as ``np.load`` reads them), if the file and
    its arrays hold at most ``limit`` bytes (`check_size`); anything else that keeps it from
    being read is a ValueError saying it is not ``kind`` (``"a labelled shard"``)."""
    check_size(path, limit)
    try:
        with zipfile.ZipFile(path) as archive:
            names = [name.removesuffix(".npy") for name in archive.namelist()]
            return {name: read_npz_member(archive, name, kind) for name in names}
    except (ValueError, *_ZIP_ERRORS) as error:
        raise ValueError(f"{path}: not {kind} ({error})") from None


def read_npz_member(archive: zipfile.ZipFile, name: str, kind: str, fits: Fits | None = None) -> np.ndarray:
    """The array ``name`` of an ``.npz`` archive, read only if the shape and dtype its header
    declares ``fits`` (a ValueError saying it is not what ``kind`` holds otherwise) and its
    bytes fit in the member, and then exactly those bytes: a zip bomb or an 8 TiB declared
    array is refused before any of it is inflated, and a member that inflates past what it
    declares is refused after one byte more."""
    try:
        info = archive.getinfo(f"{name}.npy")
        with typing.cast(zipfile.ZipExtFile, archive.open(info)) as member:  # typeshed: IO[bytes]
            version = np.lib.format.read_magic(member)
            if version not in _NPY_HEADERS:
                raise ValueError(f".npy format version {version}")
            shape, fortran, dtype = _NPY_HEADERS[version](member)
            if dtype.hasobject or any(n < 0 for n in shape) or (fits is not None and not fits(shape, dtype)):
                raise ValueError(f"a {dtype} array of shape {shape} is not what {kind} holds")
            size = dtype.itemsize * math.prod(shape)
            if size > info.file_size:
                raise ValueError(f"{size} bytes of data declared in a member of {info.file_size}")
            data = bytearray(size)
            read = member.readinto(data)
            if read != size:
                raise ValueError(f"{read} bytes of data where its header declares {size}")
            if member.read(1):
                raise ValueError(f"more bytes of data than the {size} its header declares")
        return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    except (ValueError, *_ZIP_ERRORS) as error:  # ValueError: numpy's, on a malformed .npy header
        raise ValueError(f"{name}: {error}") from None


def _too_large(path: str | os.PathLike[str], limit: int) -> ValueError:
    return ValueError(f"{path}: larger than {limit} bytes")
