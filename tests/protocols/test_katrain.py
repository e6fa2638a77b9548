"""KaTrain's own engine client on `klent analysis` through a whole review and game
(`katrain_session.py`, in its own process: Kivy takes over the logging of a process that
imports it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

if not (3, 11) <= sys.version_info[:2] < (3, 14):
    pytest.skip("KaTrain installs on Python 3.11 to 3.13 only", allow_module_level=True)

SESSION = Path(__file__).with_name("katrain_session.py")


def test_katrain_reviews_a_game_and_plays_on_klent(ownership_model: str) -> None:
    run = subprocess.run([sys.executable, str(SESSION), ownership_model], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ended without an error" in run.stdout
