"""Syzygy endgame tablebases for chess, probed with python-chess's `chess.syzygy`.

As in Stockfish and Leela Chess Zero, the tables answer in two places:

* in the search's leaves, WDL (win/draw/loss): `TablebaseEvaluator` wraps the network and
  gives every position the tables hold its exact value, a win `TABLEBASE_WIN`, a draw 0, in
  place of the value head's estimate;
* at the root, DTZ (the distance to the next capture, pawn move or mate): `probe_root` lists
  the moves that keep the best result the tables give, and, in a won ending, only those that
  zero the fifty-move counter soonest.  Winning moves all have the same value, so a search
  alone would choose among them by the network's taste and could shuffle for ever; playing
  the fastest DTZ move converts a won ending to mate within the fifty-move rule, which a
  won table entry guarantees.  In a drawn ending only drawing moves remain (the search then
  chooses among them), in a lost one those that resist longest.  A move into a draw that can be
  claimed (threefold repetition, fifty moves: `State.is_claimable_draw`) is ranked a draw, as
  the search values it, so a lost ending takes it and a won one never repeats into it.

Wins and losses that the fifty-move rule turns into draws ("cursed" wins, "blessed" losses)
count as draws, as in Stockfish with ``Syzygy50MoveRule`` on: lichess and FIDE apply the rule.
The tables cover positions without castling rights and with at most as many pieces as the
largest table found (and at most ``probe_limit``).  The 3- and 4-piece tables python-chess
ships are unpacked by ``make setup`` (`scripts/syzygy-tables.sh`) into `DEFAULT_SYZYGY_DIR`;
larger sets are anywhere a user points to.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.syzygy
import numpy as np

from klent.engine.games.base import Game, State
from klent.engine.games.chess import ChessState
from klent.engine.network import Evaluation, Evaluator, state_values

DEFAULT_SYZYGY_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "klent" / "syzygy"
MAX_PIECES = 7  # the largest Syzygy tables there are
# The value of a win the tables promise: below a checkmate on the board (1), so that the search
# still prefers a mate it sees to a won position it only reaches (Stockfish's TB win below mate).
TABLEBASE_WIN = 0.99


def default_syzygy_path() -> str:
    """`DEFAULT_SYZYGY_DIR` when it holds tables (after ``make setup``), else "" (none)."""
    return str(DEFAULT_SYZYGY_DIR) if any(DEFAULT_SYZYGY_DIR.glob("*.rtbw")) else ""


class Tablebase:
    """The Syzygy tables of one or more folders, probed for positions of at most
    ``probe_limit`` pieces (`MAX_PIECES`: as many as the tables hold)."""

    def __init__(self, folders: Sequence[str | Path], probe_limit: int = MAX_PIECES) -> None:
        """Open the tables in ``folders``; ValueError naming the folder that does not exist
        or holds no table."""
        self._tables = chess.syzygy.Tablebase()
        for folder in folders:
            if not Path(folder).is_dir():
                raise ValueError(f"no folder {str(folder)!r}")
            if not self._tables.add_directory(str(folder), load_dtz=True):
                raise ValueError(f"no Syzygy table (*.rtbw, *.rtbz) in {str(folder)!r}")
        names = list(self._tables.wdl)
        self.pieces = min(probe_limit, max((len(name) - 1 for name in names), default=0))
        self.tables = len(names)

    @classmethod
    def from_path(cls, path: str, probe_limit: int = MAX_PIECES) -> Tablebase | None:
        """The tables of a UCI ``SyzygyPath``: folders separated by the system's path separator
        (":", ";" on Windows), as in Stockfish; None for "" or "<empty>"."""
        folders = [folder for folder in path.split(os.pathsep) if folder and folder != "<empty>"]
        return cls(folders, probe_limit) if folders else None

    def close(self) -> None:
        self._tables.close()

    def board(self, state: State) -> chess.Board | None:
        """The position as python-chess's board when the tables can answer for it, else None."""
        if not isinstance(state, ChessState) or state.pieces > self.pieces:
            return None
        board = state.bare_board
        return None if board.castling_rights else board

    def wdl(self, state: State) -> int | None:
        """WDL of ``state`` for the side to move (2 win, 1 cursed win, 0 draw, -1 blessed loss,
        -2 loss), or None where the tables cannot answer."""
        board = self.board(state)
        return None if board is None else self._tables.get_wdl(board)

    def dtz(self, state: State) -> int | None:
        """DTZ of ``state`` for the side to move: plies to the next capture, pawn move or mate
        with best play, positive when it wins, negative when it loses, 0 in a draw; None where
        the tables cannot answer."""
        board = self.board(state)
        return None if board is None else self._tables.get_dtz(board)

    def value(self, state: State) -> float | None:
        """The exact value of ``state`` for the side to move, fifty-move rule applied:
        +-`TABLEBASE_WIN` or 0; None where the tables cannot answer."""
        wdl = self.wdl(state)
        return None if wdl is None else _value(wdl)


@dataclass(frozen=True)
class RootProbe:
    """What the tables say of the moves of a root position: ``values`` (every legal action's
    exact value for the side to move, +-`TABLEBASE_WIN` or 0) and ``best`` (the actions to choose
    among: those that keep the best result, and in a won or lost ending the fastest and the
    slowest by DTZ)."""

    value: float
    values: dict[int, float]
    best: tuple[int, ...]


def probe_root(tablebase: Tablebase, state: State) -> RootProbe | None:
    """The tables' choice of moves at ``state`` (see the module docstring); None where they
    cannot answer for the position or one of its moves."""
    if tablebase.board(state) is None:
        return None
    ranked: dict[int, tuple[int, int]] = {}  # action -> (WDL for the mover, plies to a zeroing move)
    for action in np.flatnonzero(state.legal_mask()).tolist():
        child = state.play(action)
        if child.is_terminal or child.is_claimable_draw:  # mate (a win at once) or a draw at once
            ranked[action] = (2 if child.is_terminal and child.outcome() != 0 else 0, 0)
            continue
        wdl, dtz = tablebase.wdl(child), tablebase.dtz(child)
        if wdl is None or dtz is None:
            return None
        zeroing = isinstance(child, ChessState) and child.bare_board.halfmove_clock == 0
        ranked[action] = (-wdl, 1 if zeroing else 1 + abs(dtz))
    best_wdl = max(wdl for wdl, _ in ranked.values())
    keep = {action: plies for action, (wdl, plies) in ranked.items() if wdl == best_wdl}
    if best_wdl > 0:
        fastest = min(keep.values())
        keep = {action: plies for action, plies in keep.items() if plies == fastest}
    elif best_wdl < 0:
        slowest = max(keep.values())
        keep = {action: plies for action, plies in keep.items() if plies == slowest}
    values = {action: _value(wdl) for action, (wdl, _) in ranked.items()}
    return RootProbe(value=_value(best_wdl), values=values, best=tuple(keep))


class TablebaseEvaluator:
    """An `Evaluator` that evaluates with ``network`` and gives every position the tables hold
    its exact value instead of the network's (the search's leaves)."""

    def __init__(self, network: Evaluator, tablebase: Tablebase) -> None:
        self.network = network
        self.tablebase = tablebase
        self.game: Game = network.game

    def evaluate(self, states: Sequence[State]) -> Evaluation:
        evaluation = self.network.evaluate(states)
        exact = [self.tablebase.value(state) for state in states]
        if all(value is None for value in exact):
            return evaluation
        values = state_values(evaluation).copy()
        for i, value in enumerate(exact):
            if value is not None:
                values[i] = value
        return evaluation._replace(state_value=values)


def _value(wdl: int) -> float:
    """A WDL as a value under the fifty-move rule (cursed wins and blessed losses are draws),
    a win or a loss as `TABLEBASE_WIN`."""
    return TABLEBASE_WIN if wdl == 2 else -TABLEBASE_WIN if wdl == -2 else 0.0
