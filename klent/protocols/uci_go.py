"""The ``go`` command: its limits as sent, read leniently."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from klent.engine.games.base import GameFormatError, IllegalMoveError, State
from klent.protocols.uci_options import uci_int


@dataclass
class GoCommand:
    """The limits of one ``go`` (times in milliseconds, as sent)."""

    wtime: int | None = None
    btime: int | None = None
    winc: int | None = None
    binc: int | None = None
    movestogo: int | None = None
    depth: int | None = None
    nodes: int | None = None
    movetime: int | None = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: list[int] = field(default_factory=list)


_GO_NUMBERS = ("wtime", "btime", "winc", "binc", "movestogo", "depth", "nodes", "movetime")
_GO_CLOCKS = ("wtime", "btime", "winc", "binc")  # may be negative (a lagging server): read as 0
_GO_KEYWORDS = frozenset((*_GO_NUMBERS, "infinite", "ponder", "searchmoves", "mate"))


def parse_go(tokens: list[str], state: State, complain: Callable[[str], None]) -> GoCommand:
    """Read the arguments of ``go``; bad parts are skipped, and reported through ``complain``
    in one line (the first, and how many more: a ``go`` of a megabyte of bad tokens is not
    answered by a line for each).

    A GUI waits for ``bestmove`` after any ``go``, so a partly malformed ``go`` still searches
    with the limits that could be read.
    """
    go = GoCommand()
    game = state.game
    problems: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token in _GO_NUMBERS:
            text = tokens[i] if i < len(tokens) else ""
            try:
                number = uci_int(text)
            except ValueError:
                problems.append(f"go: {token} needs an integer, got {text or 'nothing'!r}; ignored")
                continue
            i += 1
            if number < 0 and token not in _GO_CLOCKS:
                problems.append(f"go: {token} must not be negative, got {number}; ignored")
                continue
            setattr(go, token, max(0, number))
        elif token in ("infinite", "ponder"):
            setattr(go, token, True)
        elif token == "mate":
            problems.append("go: mate searches are not supported; searching normally")
            if i < len(tokens) and tokens[i].lstrip("-").isdigit():
                i += 1
        elif token == "searchmoves":
            end = next((j for j in range(i, len(tokens)) if tokens[j] in _GO_KEYWORDS), len(tokens))
            for text in dict.fromkeys(tokens[i:end]):  # each distinct move read once: a list may repeat a few
                try:
                    go.searchmoves.append(game.text_to_action(state, text))
                except (GameFormatError, IllegalMoveError) as error:
                    problems.append(f"go searchmoves: {error}; ignored")
            i = end
        else:
            problems.append(f"go: unknown token {token!r}; ignored")
    if problems:
        complain(problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    return go
