"""A match's settings (`MatchConfig`): the engines, the game, the clock, the UCI limits and
the openings; everything `klent match` records in ``summary.json`` and a resume must repeat."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_MOVE_TIMEOUT = 60.0  # seconds per move when no time per move is set
GO_LIMITS = ("depth", "nodes", "movetime")  # the `MatchConfig.uci_go` words, each with a count


def go_limits(text: str) -> dict[str, int]:
    """The limits of a UCI ``go`` argument string (``"depth 2 nodes 400"`` -> ``{"depth": 2,
    "nodes": 400}``); ``""`` is none.  Raises ValueError on any other word or a count that is
    not a positive integer: an engine would ignore such a word and search without end."""
    words = text.split()
    pairs = list(zip(words[::2], words[1::2]))
    if len(words) % 2 or any(name not in GO_LIMITS or not count.isdigit() or int(count) < 1 for name, count in pairs):
        raise ValueError(f"UCI search limit {text!r} is not {' / '.join(f'{w} N' for w in GO_LIMITS)} (N >= 1)")
    return {name: int(count) for name, count in pairs}


def check_first_opening(first: int, count: int) -> None:
    """ValueError unless ``first`` (`MatchConfig.first_opening`) numbers one of ``count`` openings;
    0 is also the default without openings."""
    if first and not 0 < first < count:
        raise ValueError(f"the first opening must be from 0 to {count - 1}, not {first}" if count
                         else f"a first opening ({first}) needs --openings")


@dataclass(frozen=True)
class MatchConfig:
    engines: tuple[str, str]
    game: str = "go9"
    games: int = 2
    out: Path = Path("match")
    referee: str = "gnugo --mode gtp --chinese-rules"
    time_per_move: float | None = None
    grace: float = 1.0  # seconds a move may exceed the time per move (pipes, process lag)
    max_moves: int | None = None  # moves (plies) before adjudication; None: the game's own cap
    komi: float = 7.5
    # UCI options per engine (e.g. {"Skill Level": "0"}), set once each engine has started.
    uci_options: tuple[dict[str, str], dict[str, str]] = ({}, {})
    # UCI search limit per engine, the arguments of its ``go`` ("depth 2", "nodes 400"; see
    # `go_limits`); "": ``go movetime`` of the time per move.
    uci_go: tuple[str, str] = ("", "")
    # Start positions (`klent.matchplay.opening_files.read_openings`): games 2k and 2k + 1 both
    # start from opening first_opening + k (cycling), engine 1 moving first in one and engine 2
    # in the other.  Empty: the initial position.  A first opening past 0 goes on with a match
    # that another run (another machine, a session that ended) played from the file's start, as
    # cutechess-cli's ``-openings start=N`` does: its games start where that one stopped, and
    # each game's record keeps the file's opening number, so the two runs' games add up.
    openings: tuple[str, ...] = ()
    first_opening: int = 0

    def __post_init__(self) -> None:
        for limit in self.uci_go:
            go_limits(limit)  # a misspelt limit fails now, not as a hung engine mid-match
        check_first_opening(self.first_opening, len(self.openings))

    def move_timeout(self, who: int) -> float:
        """Seconds a UCI engine's move may take before it loses: the time per move (1 s if
        none) plus the grace, or with a search limit of its own the time per move (else
        `DEFAULT_MOVE_TIMEOUT`) plus the grace."""
        if self.uci_go[who]:
            return (self.time_per_move or DEFAULT_MOVE_TIMEOUT) + self.grace
        return (self.time_per_move or 1.0) + self.grace

    def opening(self, index: int) -> tuple[int, str] | None:
        """(opening number, its text) of game ``index`` (0-based), or None without openings."""
        if not self.openings:
            return None
        number = (self.first_opening + index // 2) % len(self.openings)
        return number, self.openings[number]
