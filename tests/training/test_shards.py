"""klent.training.shards: a labelled set's manifest and shards, read within bounds from files a
labeller wrote or anyone else did."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from klent.training import shards


def test_a_manifest_too_large_or_nested_too_deeply_is_a_value_error_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / shards.MANIFEST
    shards.Manifest({"game": "go9"}, "GNU Go", ["shard-00000.npz"]).write(tmp_path)
    assert shards.Manifest.read(tmp_path).shards == ["shard-00000.npz"]  # type: ignore[union-attr]
    monkeypatch.setattr(shards, "MAX_MANIFEST_BYTES", 100)
    with pytest.raises(ValueError, match=f"^{path}: larger than 100 bytes$"):
        shards.Manifest.read(tmp_path)
    monkeypatch.undo()
    path.write_text('{"config": ' + "[" * 100_000)  # a RecursionError in json's parser
    with pytest.raises(ValueError, match=f"^{path}: not JSON .nested too deeply.$"):
        shards.shard_paths(tmp_path)
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match=f"^{path} is not a labelling manifest: "):
        shards.Manifest.read(tmp_path)


def test_a_shard_that_is_a_zip_bomb_or_declares_a_huge_array_is_refused_before_it_inflates(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """np.load inflated a member whole, whatever it declared: 16 MiB of zeros deflate to 16 KB."""
    monkeypatch.setattr(shards, "MAX_SHARD_BYTES", 1 << 20)
    arrays = {"ply": np.arange(5, dtype=np.int32), "game_moves": np.array(["C3 D4", "pass"])}
    shards.write_shard(tmp_path / "fine.npz", arrays)
    back = shards.read_shard(tmp_path / "fine.npz")
    assert back.keys() == arrays.keys() and all(np.array_equal(back[k], arrays[k]) for k in arrays)
    bomb = tmp_path / "bomb.npz"
    shards.write_shard(bomb, {"ownership": np.zeros(((1 << 24) // 361, 361), dtype=np.int8)})  # 16 MiB of 19x19
    assert bomb.stat().st_size < 100_000
    with pytest.raises(ValueError, match=f"^{bomb}: its members inflate to .* bytes, more than 1048576$"):
        shards.read_shard(bomb)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (2**40,)})
    huge = tmp_path / "huge.npz"
    with zipfile.ZipFile(huge, "w") as archive:
        archive.writestr("value.npy", header.getvalue() + bytes(64))
    with pytest.raises(ValueError, match=f"^{huge}: not a labelled shard .value: 4398046511104 bytes of data declared"):
        shards.read_shard(huge)
