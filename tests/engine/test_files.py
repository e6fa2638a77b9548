"""klent.engine.files: the one atomic-write helper behind checkpoints, models, logs, records and plots."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from klent.engine.files import atomic_target, copy_atomically, write_text_atomically


def test_write_replaces_the_file_and_leaves_nothing_behind(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "summary.json"  # missing folders are created
    write_text_atomically(path, "first\n")
    write_text_atomically(path, "second é\n")
    assert path.read_text(encoding="utf-8") == "second é\n"
    assert os.listdir(path.parent) == ["summary.json"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # readable by others, unlike mkstemp's 0600


def test_a_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    write_text_atomically(path, "old")
    with pytest.raises(OSError, match="disk full"):
        with atomic_target(path) as tmp:
            tmp.write_text("half of the new")
            raise OSError("disk full")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["model.onnx"]


def test_the_temporary_file_keeps_the_suffix_and_folder(tmp_path: Path) -> None:
    """Writers that choose a format from the name (matplotlib's savefig) need the suffix; a
    rename is atomic only within one file system, so the temporary file sits next to the target."""
    with atomic_target(tmp_path / "curve.png") as tmp:
        assert tmp.suffix == ".png" and tmp.parent == tmp_path
        tmp.write_bytes(b"png")
    assert (tmp_path / "curve.png").read_bytes() == b"png"


def test_copy_atomically_copies_the_bytes_into_new_folders(tmp_path: Path) -> None:
    source = tmp_path / "latest.onnx"
    source.write_bytes(bytes(range(256)) * 4)
    copy_atomically(source, tmp_path / "snapshots" / "iteration-000100.onnx")
    assert (tmp_path / "snapshots" / "iteration-000100.onnx").read_bytes() == source.read_bytes()
    assert os.listdir(tmp_path / "snapshots") == ["iteration-000100.onnx"]
