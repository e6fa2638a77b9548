"""GTP version 2 wire format: turning input lines into commands and replies into text.

Section 2 of the GTP 2 specification: control characters other than HT and LF are removed,
HT becomes a space, everything after ``#`` is a comment, lines that are then empty (or only
white space) are ignored, an optional leading integer is the command id, and the command name
is the next word.  Replies are ``=[id] text`` or ``?[id] message`` followed by one empty line;
a reply's text never contains an empty line (we collapse them).  Numbers in arguments are
ASCII decimals (`gtp_float`, `gtp_int`), an int at most `MAX_INT` (section 3.1: 2^31 - 1).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

MAX_LINE = 65536  # characters; a longer command line is answered "? command line too long"
MAX_INT = 2**31 - 1  # the largest GTP int (specification, section 3.1)

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_INT = re.compile(r"[0-9]+")

# GTP colour = our player index (0 = Black moves first).
COLOURS = {"b": 0, "black": 0, "w": 1, "white": 1}
COLOUR_NAMES = ("B", "W")


@dataclass(frozen=True)
class Command:
    """One parsed command line."""

    id: str  # "" when the line had no id
    name: str  # lower-cased: GTP names are case sensitive, but GUIs are not always careful
    args: list[str]


class GtpError(Exception):
    """A command failed; the message is sent as ``? message``."""


def preprocess(line: str) -> str:
    """Apply the specification's preprocessing: control characters, tabs, comments, blanks."""
    line = line.replace("\t", " ").replace("\r", "")
    line = _CONTROL.sub("", line)
    return line.split("#", 1)[0].strip()


def parse(line: str) -> Command | None:
    """The command on ``line``, or None for a line to ignore (empty or a comment)."""
    text = preprocess(line)
    if not text:
        return None
    words = text.split()
    command_id = ""
    if words[0].isdigit():
        command_id, words = words[0], words[1:]
    if not words:
        return Command(command_id, "", [])
    return Command(command_id, words[0].lower(), words[1:])


def reply_head(command_id: str, ok: bool = True) -> str:
    """``=id`` or ``?id``: the start of a reply's first line."""
    return ("=" if ok else "?") + command_id


def format_reply(command_id: str, text: str = "", ok: bool = True) -> str:
    """A complete reply: head, text (without empty lines) and the terminating empty line."""
    body = "\n".join(line for line in text.replace("\r", "").split("\n") if line.strip())
    head = reply_head(command_id, ok)
    return f"{head} {body}\n\n" if body else f"{head}\n\n"


def gtp_float(text: str) -> float:
    """A GTP float argument: a finite decimal in ASCII digits ("7.5", "-0.5", "30").

    Python's ``float`` also takes "nan", "inf", "1e3", "1_000" and other scripts' digits;
    no controller means those, and a NaN or infinite time or komi would poison every later
    budget or score, so they are refused.  Raises ValueError.
    """
    if _FLOAT.fullmatch(text):
        number = float(text)
        if math.isfinite(number):  # 400 digits match, and float() makes them inf
            return number
    raise ValueError(f"not a decimal number: {text[:20]!r}")


def gtp_int(text: str) -> int:
    """A GTP int argument: an unsigned integer in ASCII digits, at most `MAX_INT`.  Raises
    ValueError.

    ``int`` would take "1_000" and other scripts' digits, and fails with another ValueError
    beyond 4,300 digits; a bounded int also keeps every later use (seconds as a float, a
    count of moves) finite.  The length is checked before the digits are converted.
    """
    digits = text.lstrip("0") or "0"
    if _INT.fullmatch(text) and len(digits) <= len(str(MAX_INT)) and (value := int(digits)) <= MAX_INT:
        return value
    raise ValueError(f"not an unsigned integer up to {MAX_INT}: {text[:20]!r}")


def one_arg(args: list[str]) -> str:
    """The single argument of a command that takes one."""
    if len(args) != 1:
        raise GtpError("syntax error")
    return args[0]


def parse_colour(text: str) -> int:
    """A GTP colour ("b", "white", ...) as our player index."""
    index = COLOURS.get(text.lower())
    if index is None:
        raise GtpError("invalid color")
    return index
