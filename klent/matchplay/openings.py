"""Balanced random openings for `klent match --openings`.

Two deterministic engines replay the same game whenever they meet with the same colours, so a
match of 100 games between them may hold two distinct ones.  Starting each pair of games
(colours swapped) from its own opening gives as many distinct games as openings times two.  An
opening made of random moves is often lost for one side already; a judge engine keeps only
those it values near even:

* chess: ``plies`` random legal moves, then the judge (a UCI engine, Stockfish) searches the
  position; kept when |W - L| of its WDL is at most ``max_value`` (the position is playable
  for both sides) and the game is not over;
* Go: ``plies`` random moves off the first line (no pass), then GNU Go's ``estimate_score``;
  kept when the estimate, komi included, is within ``max_value`` points of even;
* Gardner chess and Animal Shogi: ``plies`` random legal moves, then Fairy-Stockfish (its
  ``UCI_Variant``) searches the position; kept when its score is within ``max_value`` pawns of
  even (Fairy-Stockfish 11 reports no WDL) and it sees no mate.  Random moves on a 5x5 board
  often hang a piece (after 1. b3 Black wins a pawn at once), so unjudged random openings make
  some games one-sided from the start.

Openings are drawn from a seeded generator and deduplicated, so a file is reproducible from
its command.  Output lines are what `klent.matchplay.opening_files.read_openings` reads: ``FEN moves ...``
for chess (the start position's FEN followed by the moves), GTP vertices for Go, the moves
alone for the variants.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

import klent.engine.games
from klent.engine.games.base import State
from klent.engine.games.go import GoState
from klent.matchplay.engine_process import GtpProcess, UciProcess
from klent.protocols.go_text import score_points
from klent.protocols.uci_value import line_score, open_uci, wdl_value
from klent.protocols.uci_variants import uci_variant


def off_the_edge(state: State) -> list[int]:
    """The legal moves of a Go position that are neither a pass nor on the first line: the
    random moves of a Go opening (a stone on the edge at move 2 is no opening anyone plays)."""
    assert isinstance(state, GoState)
    size = state.game.size
    return [int(a) for a in np.flatnonzero(state.legal_mask())
            if a < size * size and 0 < a % size < size - 1 and 0 < a // size < size - 1]


def random_line(game_id: str, plies: int, rng: np.random.Generator) -> tuple[list[str], State] | None:
    """``plies`` random moves from the initial position (Go: no pass, none on the first line),
    as move texts with the state reached; None when the game ended on the way."""
    game = klent.engine.games.get(game_id, max_moves=None)
    state = game.initial_state()
    texts = []
    for _ in range(plies):
        legal = off_the_edge(state) if isinstance(state, GoState) else [int(a) for a in state.legal_actions()]
        if not legal or state.is_terminal:
            return None
        action = int(rng.choice(legal))
        texts.append(game.action_to_text(state, action))
        state = state.play(action)
    return (None if state.is_terminal else (texts, state))


def chess_judge(command: str, depth: int) -> tuple[Callable[[State], float], Callable[[], None]]:
    """(value of a `ChessState` as W - L for the side to move, close)."""
    import chess.engine

    from klent.engine.games.chess import ChessState

    judge = open_uci(command)

    def value(state: State) -> float:
        assert isinstance(state, ChessState)
        board = state.board
        # A new game each time clears the hash: the value depends on the position alone.
        return wdl_value(judge.analyse(board, chess.engine.Limit(depth=depth), game=object()), board.turn)

    return value, judge.quit


def variant_judge(command: str, game_id: str, depth: int) -> tuple[Callable[[list[str]], float], Callable[[], None]]:
    """(Fairy-Stockfish's score of a line of moves in pawns for the side to move, a mate as
    infinite; close) for a game UCI plays as a variant."""
    variant = uci_variant(game_id)
    assert variant is not None
    judge = UciProcess(command)
    judge.start({"UCI_Variant": variant})

    def value(texts: list[str]) -> float:
        judge.new_game()  # a cleared hash: the value depends on the position alone
        judge.tell(f"position startpos moves {' '.join(texts)}")
        score = 0.0  # no score read: even
        for line in judge.ask(f"go depth {depth}", "bestmove", timeout=60.0):
            words = line.split()
            if "score" in words[:-2]:
                kind, amount = line_score(words)
                if kind == "mate":
                    score = math.copysign(math.inf, amount)
                elif kind == "cp":
                    score = amount / 100
        return score

    return value, judge.close


def go_judge(command: str, size: int, komi: float) -> tuple[Callable[[list[str]], float], Callable[[], None]]:
    """(GNU Go's estimated score of a line of moves, Black ahead positive; close)."""
    judge = GtpProcess(command)

    def value(texts: list[str]) -> float:
        judge.send(f"boardsize {size}")
        judge.send("clear_board")
        judge.send(f"komi {komi:g}")
        for ply, vertex in enumerate(texts):
            judge.send(f"play {'bw'[ply % 2]} {vertex}")
        estimate = score_points(judge.send("estimate_score", timeout=60.0))
        return 0.0 if estimate is None else estimate  # unreadable: even

    return value, judge.close


def balanced_openings(
    game_id: str, count: int, plies: int, judge: str, max_value: float, seed: int = 0,
    depth: int = 10, komi: float = 7.5, tries: int = 100_000,
) -> Iterator[str]:
    """Up to ``count`` distinct balanced openings (see the module docstring), one line each."""
    rng = np.random.default_rng(seed)
    seen: set[str] = set()
    if game_id == "chess":
        value, close = chess_judge(judge, depth)
    elif uci_variant(game_id) is not None:
        value_of_line, close = variant_judge(judge, game_id, depth)
    else:
        size = klent.engine.games.get(game_id).size  # type: ignore[attr-defined]
        value_of_line, close = go_judge(judge, size, komi)
    try:
        for _ in range(tries):
            if len(seen) >= count:
                return
            drawn = random_line(game_id, plies, rng)
            if drawn is None:
                continue
            texts, state = drawn
            line = " ".join(texts)
            if game_id == "chess":
                chess_game = klent.engine.games.get("chess")
                line = f"{chess_game.fen(chess_game.initial_state())} moves {line}"
                balanced = abs(value(state)) <= max_value
            else:
                balanced = abs(value_of_line(texts)) <= max_value
            if balanced and line not in seen:
                seen.add(line)
                yield line
    finally:
        close()
