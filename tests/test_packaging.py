"""The distribution: a regular (not editable) install holds one top-level package, ``klent``, with
every module and the shipped models, and the engine finds those models there (pyproject.toml lists
the packages and maps weights/ to the package ``klent.weights``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("*.onnx", "*.npz", "*.md", "*.png", "*.strength.json")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the source tree (the build writes its metadata beside the
    sources), with the installed setuptools: no network."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "klent", source / "klent", ignore=shutil.ignore_patterns("__pycache__"))
    (source / "weights").mkdir()
    for pattern in SHIPPED:
        for path in (ROOT / "weights").glob(pattern):
            shutil.copy(path, source / "weights" / path.name)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)],
        check=True, capture_output=True, timeout=300,
    )
    (built,) = out.glob("klent-*.whl")
    return built


def test_the_wheel_holds_every_module_and_the_shipped_models(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {
        path.relative_to(ROOT).as_posix() for path in (ROOT / "klent").rglob("*.py") if "__pycache__" not in path.parts
    }
    assert not modules - names, "modules missing from the wheel: list their packages in pyproject.toml"
    shipped = {f"klent/weights/{path.name}" for pattern in SHIPPED for path in (ROOT / "weights").glob(pattern)}
    expected = {"klent/weights/go9.onnx", "klent/weights/go9-td.npz", "klent/weights/chess.strength.json"}
    assert expected <= shipped <= names
    assert not any(name.startswith(("weights/", "klent/weights/training")) for name in names)
    assert {"klent/server/static/index.html", "klent/training/configs/go9_cpu.toml"} <= names


def test_the_wheel_installs_one_top_level_package(wheel: Path) -> None:
    """`pip install klent` adds the name ``klent`` to site-packages and nothing else (besides its
    metadata), so it cannot shadow another distribution's ``server`` or ``training``."""
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"klent"}


def test_an_installed_engine_finds_its_shipped_models(wheel: Path, tmp_path: Path) -> None:
    """The wheel unpacked as an install would place it, with the source tree off the path."""
    zipfile.ZipFile(wheel).extractall(tmp_path)
    code = (
        "import klent.engine.games, klent.engine.player\n"
        "print(klent.engine.player.DEFAULT_WEIGHTS_DIR)\n"
        "print(klent.engine.player.model_path_for(klent.engine.games.get('go9')).is_file())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)},
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout.split()
    assert out == [str(tmp_path / "klent" / "weights"), "True"]


def test_the_engines_start_by_one_path_with_no_arguments(wheel: Path) -> None:
    """lichess-bot's ``engine.name``, cutechess and Arena take an executable, Sabaki and GoGui one
    command: `klent-uci` and `klent-gtp` are console scripts of the distribution, installed beside
    the interpreter (`make setup`), and each speaks its protocol with no argument."""
    archive = zipfile.ZipFile(wheel)
    (listed,) = [name for name in archive.namelist() if name.endswith(".dist-info/entry_points.txt")]
    entry_points = archive.read(listed).decode()
    assert "klent-uci = klent.cli:uci_main" in entry_points and "klent-gtp = klent.cli:gtp_main" in entry_points
    for script, command, answer in (("klent-uci", "uci", "uciok"), ("klent-gtp", "protocol_version", "= 2")):
        path = shutil.which(script, path=str(Path(sys.executable).parent))
        assert path is not None, f"{script} is not installed beside {sys.executable}: run `make setup`"
        out = subprocess.run([path], input=f"{command}\nquit\n", capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and answer in out.stdout.splitlines(), out.stderr[-500:]
