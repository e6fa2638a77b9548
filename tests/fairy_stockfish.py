"""Fairy-Stockfish as the referee of the small games' rules (tests/engine/games/test_gardner.py,
tests/engine/games/test_animal_shogi.py): perft, FENs and scores over UCI, our perft printed its way, and
random games checked against it move by move."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

import numpy as np

from klent.engine.games.base import FenGame, State


class FairyStockfish:
    """Fairy-Stockfish over UCI, set to one variant: perft, its FEN of a position, and its
    score of a position or of one move there.

    Every query names the position as a FEN (None: the variant's start) plus UCI moves, the
    way a GUI does; Fairy-Stockfish silently stops at the first illegal move of such a list,
    which is why the tests compare FENs as well as move lists.
    """

    def __init__(self, path: str, variant: str) -> None:
        self.process = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self._send("uci")
        self._read_until("uciok")
        self._send(f"setoption name UCI_Variant value {variant}", "isready")
        self._read_until("readyok")

    def _send(self, *lines: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("".join(line + "\n" for line in lines))
        self.process.stdin.flush()

    def _read_until(self, prefix: str) -> list[str]:
        assert self.process.stdout is not None
        lines = []
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"fairy-stockfish exited (status {self.process.poll()}) before {prefix!r}")
            lines.append(line.strip())
            if lines[-1].startswith(prefix):
                return lines

    def _position(self, fen: str | None, moves: Sequence[str]) -> str:
        where = f"fen {fen}" if fen else "startpos"
        return f"position {where}" + (f" moves {' '.join(moves)}" if moves else "")

    def perft(self, depth: int, moves: Sequence[str] = (), fen: str | None = None) -> dict[str, int]:
        """Leaf counts ``depth`` plies ahead, per legal move (the empty dict: no legal move)."""
        self._send(self._position(fen, moves), f"go perft {depth}")
        counts = {}
        for line in self._read_until("Nodes searched"):
            move, _, count = line.partition(": ")
            if count.isdigit() and " " not in move:  # not the "Nodes searched: N" total
                counts[move] = int(count)
        return counts

    def fen(self, moves: Sequence[str] = (), fen: str | None = None) -> str:
        self._send(self._position(fen, moves), "d", "isready")
        return next(line[5:] for line in self._read_until("readyok") if line.startswith("Fen: "))

    def score(
        self, moves: Sequence[str] = (), fen: str | None = None, move: str | None = None, depth: int = 1
    ) -> str:
        """The score of a search to ``depth`` (1: the rules' judgement), from the side to move's
        view: "mate 0" in a position
        the side to move has lost by the rules and "cp 0" in a drawn one (the search of a
        finished game reports that at depth 0); with ``move``, of that move alone, which
        shows how the rules judge the position it makes: "mate 1" won, "cp 0" drawn (by a
        draw rule that position fulfils), "mate -1" lost."""
        self._send(self._position(fen, moves), f"go depth {depth}" + (f" searchmoves {move}" if move else ""))
        info = [line for line in self._read_until("bestmove") if " score " in line][-1]
        return " ".join(info.split(" score ")[1].split()[:2])

    def close(self) -> None:
        self._send("quit")
        self.process.wait(timeout=10)


def texts(state: State) -> set[str]:
    """The legal moves of ``state`` as text."""
    return {state.game.action_to_text(state, int(a)) for a in state.legal_actions()}


def divide(state: State, depth: int) -> dict[str, int]:
    """Our perft, per legal move, as Fairy-Stockfish's ``go perft`` prints it.  Its perft
    plays on through the draws it leaves to the arbiter: pass a state of a game without them
    (`GardnerGame(claim_draws=False)`, for one) to count as it does."""

    def perft(s: State, d: int) -> int:
        return int(s.legal_mask().sum()) if d == 1 else sum(perft(s.play(int(a)), d - 1) for a in s.legal_actions())

    game = state.game
    return {
        game.action_to_text(state, int(a)): 1 if depth == 1 else perft(state.play(int(a)), depth - 1)
        for a in state.legal_actions()
    }


def refereed_random_game(
    game: FenGame,
    rules_only: FenGame,
    fairy: FairyStockfish,
    rng: np.random.Generator,
    every: int,
    depths: Sequence[int],
) -> tuple[State, list[str]]:
    """A random game of ``game`` to its end, checked against Fairy-Stockfish at every ply: the
    legal moves and the FEN, and our perft (``rules_only``: the game without the draws the
    referee leaves to the arbiter) at ``depths`` whenever the ply count is ``every // 2``
    modulo ``every``.  Returns the final position and the moves as text."""
    state, moves = game.initial_state(), []
    while not state.is_terminal:
        assert texts(state) == set(fairy.perft(1, moves)), moves
        assert game.fen(state) == fairy.fen(moves)
        if len(moves) % every == every // 2:
            position = rules_only.from_fen(game.fen(state))
            for depth in depths:
                assert divide(position, depth) == fairy.perft(depth, moves)
        action = int(rng.choice(state.legal_actions()))
        moves.append(game.action_to_text(state, action))
        state = state.play(action)
    assert game.fen(state) == fairy.fen(moves)
    return state, moves
