"""The examples of docs/*.md, run: ```gtp blocks against a real `klent gtp`, ```http blocks
against the app, and every `klent <command>` of a ```console block through its ``--help``.

In the examples' replies, ``...`` in a line matches any text there, and a line that is only
``...`` stands for any further lines (GTP) or list items (HTTP).
"""

from __future__ import annotations

import json
import queue
import re
import shutil
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

from klent.cli import COMMANDS
from klent.engine.player import DEFAULT_WEIGHTS_DIR
from klent.server.app import ServerConfig, create_app

with warnings.catch_warnings():  # starlette's note about httpx2 is not ours to act on
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

DOCS = Path(__file__).resolve().parents[1] / "docs"
REPLY_SECONDS = 60.0
ANALYSES = ("lz-analyze", "kata-analyze")  # the commands that run until the next input line


def blocks(manual: str, language: str) -> list[str]:
    """The fenced blocks of ``language`` in ``docs/<manual>``."""
    pattern = re.compile(rf"^```{language}\n(.*?)^```", re.MULTILINE | re.DOTALL)
    return pattern.findall((DOCS / manual).read_text(encoding="utf-8"))


def matches(pattern: str, text: str) -> bool:
    """Whether ``text`` is ``pattern`` with each ``...`` standing for any text."""
    return re.fullmatch(".*".join(map(re.escape, pattern.split("..."))), text, re.DOTALL) is not None


def check_lines(expected: list[str], actual: list[str], what: str) -> None:
    """``actual`` line by line against ``expected``, where a last line ``...`` allows more."""
    more = bool(expected) and expected[-1] == "..."
    patterns = expected[:-1] if more else expected
    assert len(actual) >= len(patterns) and (more or len(actual) == len(patterns)), (
        f"{what}: expected\n" + "\n".join(expected) + "\ngot\n" + "\n".join(actual)
    )
    for pattern, line in zip(patterns, actual):
        assert matches(pattern, line), f"{what}: {line!r} does not match {pattern!r}"


# --- GTP ------------------------------------------------------------------------------------------


class GtpSession:
    """A `klent gtp` process with the shipped 9x9 model, read line by line on a thread."""

    def __init__(self) -> None:
        command = [sys.executable, "-m", "klent", "gtp", "--weights-dir", str(DEFAULT_WEIGHTS_DIR),
                   "--simulations", "8", "--seed", "1"]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        assert self.process.stdout is not None
        stdout = self.process.stdout
        threading.Thread(target=lambda: [self.lines.put(line.rstrip("\n")) for line in stdout], daemon=True).start()

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def line(self) -> str:
        return self.lines.get(timeout=REPLY_SECONDS)

    def rest_of_reply(self) -> list[str]:
        """The lines up to the reply's terminating empty line."""
        lines = []
        while line := self.line():
            lines.append(line)
        return lines

    def close(self) -> None:
        if self.process.poll() is None:
            self.send("quit")
            self.process.wait(timeout=REPLY_SECONDS)


def gtp_exchanges(block: str) -> list[tuple[str, list[str]]]:
    """The block as (command, the reply lines shown after it); exchanges are separated by empty lines."""
    exchanges = []
    for part in block.strip().split("\n\n"):
        command, *reply = part.strip().split("\n")
        assert reply and reply[0][:1] in ("=", "?"), f"no reply shown for {command!r}"
        exchanges.append((command, reply))
    return exchanges


@pytest.mark.parametrize("block", blocks("gtp.md", "gtp"))
def test_gtp_examples(block: str) -> None:
    session = GtpSession()
    exchanges = gtp_exchanges(block)
    sent = False  # whether the command was sent already, to stop the analysis before it
    try:
        for index, (command, expected) in enumerate(exchanges):
            if not sent:
                session.send(command)
            actual = [session.line()]
            sent = command.split()[0] in ANALYSES and actual[0].startswith("=")
            if sent:  # the analysis runs until the next input line: read the lines shown, then stop it
                actual += [session.line() for line in expected[1:] if line != "..."]
                session.send(exchanges[index + 1][0] if index + 1 < len(exchanges) else "quit")
            actual += session.rest_of_reply()
            check_lines(expected, actual, command)
    finally:
        session.close()


# --- HTTP -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    """`klent serve`'s app with its default limits and the shipped go9 and chess models."""
    models = tmp_path_factory.mktemp("models")
    for game in ("go9", "chess"):
        shutil.copy(DEFAULT_WEIGHTS_DIR / f"{game}.onnx", models / f"{game}.onnx")
    with TestClient(create_app(ServerConfig(models_dir=models))) as test_client:
        yield test_client


def contains(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` holds ``expected``: its object fields, its list items in order (a last
    item "..." allows more), its strings with ``...`` as any text."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and contains(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        more = bool(expected) and expected[-1] == "..."
        items = expected[:-1] if more else expected
        return (isinstance(actual, list) and len(actual) >= len(items) and (more or len(actual) == len(items))
                and all(contains(e, a) for e, a in zip(items, actual)))
    if isinstance(expected, str):
        return isinstance(actual, str) and matches(expected, actual)
    return expected == actual


@pytest.mark.parametrize("block", blocks("http.md", "http"))
def test_http_examples(block: str, client) -> None:
    request, response = block.strip().split("\n\n")
    request_line, *body = request.split("\n")
    method, path = request_line.split()
    status_line, *answer = response.split("\n")
    got = client.request(method, path, json=json.loads("\n".join(body)) if body else None)
    assert got.status_code == int(status_line.split()[1]), got.text
    if answer:
        expected = json.loads("\n".join(answer))
        assert contains(expected, got.json()), f"{json.dumps(expected)}\nnot in\n{got.text}"


# --- commands -------------------------------------------------------------------------------------


def console_commands() -> list[str]:
    """The subcommands that ```console blocks of docs/*.md run as `klent <command>`."""
    named = set()
    for manual in sorted(DOCS.glob("*.md")):
        for block in blocks(manual.name, "console"):
            named.update(re.findall(r"^\$ .*?\bklent ([a-z][a-z-]*)", block, re.MULTILINE))
    return sorted(named)


@pytest.mark.parametrize("command", console_commands())
def test_console_commands_exist(command: str) -> None:
    assert command in COMMANDS
    help_command = [sys.executable, "-m", "klent", command, "--help"]
    done = subprocess.run(help_command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "usage: klent" in done.stdout, done.stderr
