"""Shared test helpers: locating the real engines the tests play against."""

from __future__ import annotations

import os
import shutil

import pytest


def find_engine(name: str) -> str:
    """Path of a Debian engine binary (PATH or /usr/games).

    A missing engine fails the test instead of skipping it: `make test` installs them, so a
    missing one means the set-up is broken and CI must say so.
    """
    path = shutil.which(name) or shutil.which(name, path="/usr/games")
    if path is None:
        pytest.fail(f"{name} not found on PATH or in /usr/games; run `make engines`")
    return path


@pytest.fixture(scope="session")
def gnugo_path() -> str:
    return find_engine("gnugo")


@pytest.fixture(scope="session")
def stockfish_path() -> str:
    return find_engine("stockfish")


@pytest.fixture(scope="session")
def artifacts_dir() -> str:
    """Folder for files a test keeps for people to look at (screenshots, game records)."""
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "test-artifacts")
    os.makedirs(path, exist_ok=True)
    return path
