"""klent.engine.files: the one atomic-write helper behind checkpoints, models, logs, records and plots, and the
bounded reads behind every reader of a file someone else may have written."""

from __future__ import annotations

import io
import os
import stat
import zipfile
from pathlib import Path

import numpy as np
import pytest

from klent.engine.files import (
    atomic_target,
    check_size,
    copy_atomically,
    parse_json,
    read_bounded,
    read_json,
    read_npz,
    read_npz_member,
    read_text,
    write_text_atomically,
)


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


def test_a_bounded_read_refuses_a_larger_or_endless_file_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "games.jsonl"
    path.write_bytes(b"x" * 100)
    assert read_bounded(path, 100) == b"x" * 100
    with pytest.raises(ValueError, match=f"^{path}: larger than 99 bytes$"):
        read_bounded(path, 99)
    with pytest.raises(ValueError, match="/dev/zero: larger than 1000 bytes"):
        read_bounded("/dev/zero", 1000)
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "missing", 100)
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9")
    with pytest.raises(ValueError, match=r"latin.txt: not UTF-8 text \(unexpected end of data at byte 3\)"):
        read_text(tmp_path / "latin.txt", 100)


@pytest.mark.parametrize(("text", "reason"), [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),  # a RecursionError in json's parser
    ('{"a": ' * 100_000, "nested too deeply"),
    ("1" * 5_000, "Exceeds the limit"),  # more digits than Python converts to an int
    ('{"a": 1', "Expecting"),
])
def test_json_that_cannot_be_parsed_is_a_value_error_naming_the_file(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "summary.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"^{path}: not JSON .*{reason}"):
        read_json(path, 1 << 20)
    with pytest.raises(ValueError, match=reason):
        parse_json(text)
    with pytest.raises(ValueError, match=f"^{path}: larger than {len(text) - 1} bytes$"):
        read_json(path, len(text) - 1)


def npy(array: np.ndarray, **header: object) -> bytes:
    """``array`` as an .npy file, its header's fields (shape, descr) replaced by ``header``."""
    fields = {**np.lib.format.header_data_from_array_1_0(array), **header}
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, fields)
    return out.getvalue() + array.tobytes("A")


def test_an_npz_reads_back_as_numpy_wrote_it(tmp_path: Path) -> None:
    arrays = {"moves": np.array(["e2e4 e7e5", ""]), "ownership": np.arange(12, dtype=np.int8).reshape(3, 4),
              "empty": np.zeros(0, np.float32), "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3))}
    np.savez_compressed(tmp_path / "shard.npz", **arrays)
    back = read_npz(tmp_path / "shard.npz", 1 << 20, "a shard")
    assert back.keys() == arrays.keys()
    for name, array in arrays.items():
        np.testing.assert_array_equal(back[name], array)
        assert back[name].dtype == array.dtype and back[name].flags.writeable


def test_a_zip_bomb_or_a_huge_declared_array_is_refused_before_it_inflates(tmp_path: Path) -> None:
    """16 MiB of zeros deflate to 16 KB: refused from the sizes the archive declares, as is an
    array whose header declares 8 TiB in a member of a few bytes."""
    bomb = tmp_path / "bomb.npz"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("value.npy", npy(np.zeros(2 << 20)))
    assert bomb.stat().st_size < 100_000
    with pytest.raises(ValueError, match=f"^{bomb}: its members inflate to 16777344 bytes, more than 1048576$"):
        read_npz(bomb, 1 << 20, "a shard")
    with pytest.raises(ValueError, match="its members inflate"):
        check_size(bomb, 1 << 20)
    with pytest.raises(ValueError, match=f"^{bomb}: larger than 1000 bytes$"):
        check_size(bomb, 1000)
    os.mkfifo(tmp_path / "fifo.npz")  # opening it would wait for a writer
    with pytest.raises(ValueError, match="fifo.npz: not a regular file"):
        read_npz(tmp_path / "fifo.npz", 1 << 20, "a shard")
    cases = {
        "huge": (npy(np.zeros(2), shape=(2**40,)), r"8796093022208 bytes of data declared in a member of 144"),
        "negative": (npy(np.zeros(2), shape=(-1,)), r"a float64 array of shape \(-1,\) is not what a shard holds"),
        "objects": (npy(np.zeros(2), descr="|O"), r"a object array of shape \(2,\) is not what a shard holds"),
        "short": (npy(np.zeros(2))[:-8], "8 bytes of data where its header declares 16"),
        "long": (npy(np.zeros(2)) + b"\0" * 8, "more bytes of data than the 16 its header declares"),
        "text": (b"not an array", "the magic string is not correct"),
    }
    for name, (member, reason) in cases.items():
        path = tmp_path / f"{name}.npz"
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("value.npy", member)
        with pytest.raises(ValueError, match=f"^{path}: not a shard \\(value: .*{reason}"):
            read_npz(path, 1 << 20, "a shard")
    (tmp_path / "plain.npz").write_bytes(b"PK not a zip")
    with pytest.raises(ValueError, match="plain.npz: not a shard .File is not a zip file"):
        read_npz(tmp_path / "plain.npz", 1 << 20, "a shard")


def test_an_npz_member_is_read_only_if_its_shape_fits(tmp_path: Path) -> None:
    np.savez(tmp_path / "weights.npz", theta=np.arange(9.0))
    with zipfile.ZipFile(tmp_path / "weights.npz") as archive:
        theta = read_npz_member(archive, "theta", "a weights file", lambda shape, dtype: shape == (9,))
        np.testing.assert_array_equal(theta, np.arange(9.0))
        with pytest.raises(ValueError, match=r"theta: a float64 array of shape \(9,\) is not what a weights file"):
            read_npz_member(archive, "theta", "a weights file", lambda shape, dtype: shape == (10,))
        with pytest.raises(ValueError, match="header: .*no item named 'header.npy'"):
            read_npz_member(archive, "header", "a weights file")
