"""The ```uci examples of docs/uci.md, run against a real `klent uci` with the shipped chess model.

In a block, a line starting with ``> `` is sent to the engine; the lines after it are its
replies, matched one by one in order: ``...`` in a line matches any text there, and a line that
is only ``...`` stands for any number of lines.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from uci_driver import RawEngine

from klent.engine.player import DEFAULT_WEIGHTS_DIR

MANUAL = Path(__file__).resolve().parents[2] / "docs" / "uci.md"
BLOCK = re.compile(r"^```uci\n(.*?)^```", re.MULTILINE | re.DOTALL)
REPLY_SECONDS = 60.0


def examples() -> list[str]:
    return BLOCK.findall(MANUAL.read_text(encoding="utf-8"))


def exchanges(block: str) -> list[tuple[list[str], list[str]]]:
    """The block as (commands sent together, the replies shown after them)."""
    steps: list[tuple[list[str], list[str]]] = []
    for line in block.splitlines():
        if not line.strip():
            continue
        if line.startswith("> "):
            if not steps or steps[-1][1]:
                steps.append(([], []))
            steps[-1][0].append(line[2:])
        else:
            assert steps, f"a reply before any command: {line!r}"
            steps[-1][1].append(line)
    return steps


def pattern(shown: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in shown.split("...")))


class Engine(RawEngine):
    """`klent uci` with the shipped chess model, read against the manual's replies."""

    def __init__(self) -> None:
        model = Path(DEFAULT_WEIGHTS_DIR) / "chess.onnx"
        super().__init__([sys.executable, "-m", "klent", "uci", "--model", str(model)])

    def line(self, seen: list[str]) -> str:
        line = self.until(lambda _: True, REPLY_SECONDS)[0]
        seen.append(line)
        return line

    def expect(self, shown: list[str]) -> None:
        """Read the replies ``shown`` (see the module docstring)."""
        seen: list[str] = []
        skipping = False
        for text in shown:
            if text == "...":
                skipping = True
                continue
            wanted = pattern(text)
            while not wanted.fullmatch(self.line(seen)):
                assert skipping, f"expected {text!r}, got {seen[-1]!r}; replies: {seen}"
            skipping = False


def test_the_manual_has_the_examples() -> None:
    blocks = examples()
    assert len(blocks) >= 5
    assert all(exchanges(block) for block in blocks)


@pytest.mark.parametrize("number", range(len(examples())))
def test_an_example_of_the_manual(number: int, syzygy_dir: str) -> None:
    """Each block in a fresh engine, whose default SyzygyPath is `syzygy_dir`."""
    engine = Engine()
    try:
        for commands, shown in exchanges(examples()[number]):
            for command in commands:
                engine.send(command)
            engine.expect(shown)
    finally:
        engine.close()
