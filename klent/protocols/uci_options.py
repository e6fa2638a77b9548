"""The options `klent uci` declares in answer to ``uci``, and the reading of ``setoption`` values."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from klent.engine.player import (
    DEFAULT_MEMORY_MB,
    PRECISIONS,
    SYZYGY_MAX_PIECES,
    StrengthCurve,
    default_syzygy_path,
    default_threads,
)
from klent.protocols.uci_variants import UCI_VARIANTS

MAX_SIMULATIONS = 10_000_000  # the largest Simulations setting
MAX_INT = 2**63 - 1  # the largest integer UCI carries: C engines read them as signed 64-bit

_INT = re.compile(r"-?[0-9]+")

Kind = Literal["check", "spin", "combo", "string"]


@dataclass(frozen=True)
class UciOption:
    """One engine option as the ``uci`` command declares it."""

    name: str
    kind: Kind
    default: bool | int | str
    minimum: int = 0
    maximum: int = 0
    choices: tuple[str, ...] = ()

    def declaration(self) -> str:
        default = str(self.default).lower() if self.kind == "check" else str(self.default)
        text = f"option name {self.name} type {self.kind} default {default or '<empty>'}"
        if self.kind == "spin":
            text += f" min {self.minimum} max {self.maximum}"
        text += "".join(f" var {choice}" for choice in self.choices)
        return text

    def parse(self, text: str) -> bool | int | str:
        """The value of ``setoption ... value <text>``; ValueError saying why it is refused."""
        if self.kind == "string":
            return "" if text == "<empty>" else text
        if self.kind == "check":
            if text.lower() not in ("true", "false"):
                raise ValueError(f"{self.name} takes true or false, not {text!r}")
            return text.lower() == "true"
        if self.kind == "combo":
            for choice in self.choices:
                if choice.lower() == text.lower():
                    return choice
            raise ValueError(f"{self.name} takes one of {', '.join(self.choices)}, not {text!r}")
        try:
            number = uci_int(text)
        except ValueError:
            raise ValueError(f"{self.name} takes an integer, not {text!r}") from None
        if not self.minimum <= number <= self.maximum:
            raise ValueError(f"{self.name} must be within {self.minimum}..{self.maximum}, not {number}")
        return number


def uci_int(text: str) -> int:
    """An integer of the protocol (``go`` limits, spin values, FEN move counters): ASCII digits
    with an optional minus sign, at most `MAX_INT` in size; ValueError otherwise.

    ``int`` also takes "1_000", spaces and other scripts' digits, and fails with a ValueError
    of its own past 4,300 digits; a bounded integer keeps every later use finite (milliseconds
    as seconds, a move count in a float).  The length is checked before the digits are converted.
    """
    digits = text.lstrip("-").lstrip("0") or "0"
    if _INT.fullmatch(text) and len(digits) <= len(str(MAX_INT)) and (value := int(digits)) <= MAX_INT:
        return -value if text.startswith("-") else value
    raise ValueError(f"not an integer within +-{MAX_INT}: {text[:20]!r}")


def uci_options(model: str, precision: str = "float32", strength: StrengthCurve | None = None) -> list[UciOption]:
    """The options ``uci`` declares, with ``model`` as the default model file and ``precision``
    the default precision (int8 plays the model's quantized sibling <stem>.int8.onnx).

    ``strength`` is the default model's strength curve: with one, ``UCI_LimitStrength`` and
    ``UCI_Elo`` are declared over the ratings it measured (weakest by default, as Stockfish
    does); without one they are not, since no number could be honoured.
    """
    limits = [] if strength is None else [
        UciOption("UCI_LimitStrength", "check", False),
        UciOption("UCI_Elo", "spin", strength.lowest, strength.lowest, strength.highest),
    ]
    return [
        UciOption("ModelFile", "string", model),
        UciOption("Precision", "combo", precision, choices=PRECISIONS),
        UciOption("Threads", "spin", default_threads(), 1, 64),
        UciOption("MultiPV", "spin", 1, 1, 256),
        UciOption("Ponder", "check", False),
        UciOption("UCI_ShowWDL", "check", False),
        UciOption("Move Overhead", "spin", 100, 0, 10_000),
        UciOption("SearchMode", "combo", "gumbel", choices=("gumbel", "reactive")),
        UciOption("Simulations", "spin", 0, 0, MAX_SIMULATIONS),
        UciOption("Hash", "spin", DEFAULT_MEMORY_MB, 1, 1 << 20),
        UciOption("UCI_Variant", "combo", "chess", choices=tuple(UCI_VARIANTS)),
        UciOption("SyzygyPath", "string", default_syzygy_path()),
        UciOption("SyzygyProbeLimit", "spin", SYZYGY_MAX_PIECES, 0, SYZYGY_MAX_PIECES),
        *limits,
    ]
