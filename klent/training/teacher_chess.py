"""The chess teacher (UCI: Stockfish) and its labelled games.

* **Positions** come from games the teacher plays against itself.  Every position of a game is
  searched once with ``multipv`` = all legal moves; the move played is drawn from those very
  values, so a game costs one search per ply.  The first ``opening_plies`` plies are drawn
  uniformly among the moves within ``opening_margin`` of the best (varied, still balanced
  openings); after that each side plays at a strength drawn per game: a softmax of the values
  at a temperature from `TEMPERATURES` (0 = always the best move).  This is the "teacher
  against itself at mixed strengths" of the issue with the teacher's own notion of a mistake.
  A game ends by the rules, at ``max_plies``, or once the teacher has called it decided
  (the best move's value >= 0.95 or <= -0.95: about +-3 pawns on the WDL scale, +-10 on the
  centipawn one) for ``decided_plies`` plies running -- long enough to keep the technique of
  converting a won position, short of shuffling in a dead one.
* **Labels**: each legal move's value from the mover's view in [-1, 1] (a mate score is +-1),
  in the teacher's order (its best line first); the best move; the state value (the best
  move's value).  ``value = "cp"`` reads the value from the centipawn score, tanh(cp / 543)
  (`klent.protocols.uci_value.centipawn_value`, the scale Ruoss et al. used); ``"wdl"`` (the sets
  made before) from the teacher's WDL (``UCI_ShowWDL``) as W - L.  The WDL saturates near +3
  pawns: in the first set, half of all positions had a best value of exactly +-1, so every
  move of a won position looked alike, and a network fit to them could neither keep its
  extra material nor mate.
"""

from __future__ import annotations

from collections.abc import Sequence

import chess
import chess.polyglot
import numpy as np

from klent.engine.games.chess import ChessGame, ChessState
from klent.engine.player import Player
from klent.matchplay.engine_process import UciProcess
from klent.protocols.uci_value import line_value
from klent.training.dagger import student_move, student_until
from klent.training.shards import TEACHER_TIMEOUT, LabelConfig, LabelledGame, rules

# Per-game strengths after the opening: softmax temperatures over the values (0 = best move),
# by value scale.  On Stockfish's WDL, 0.1 makes the mistakes of a weak club player (a 1-pawn
# slip near equality, ~0.5 of W - L, weighs e^-5); the centipawn scale is ~2.7 times flatter
# there (+1 pawn = 0.18), so its temperatures are ~2.7 times lower for the same mix.
TEMPERATURES = {"wdl": (0.0, 0.0, 0.01, 0.03, 0.1), "cp": (0.0, 0.0, 0.004, 0.011, 0.037)}


class ChessTeacher:
    """A UCI teacher (Stockfish) read from its raw output.

    python-chess's ``analyse`` parses every line an engine prints and replays each principal
    variation on a board; with ``multipv`` = every legal move that is ~30 lines at each depth,
    and it cost 14 ms of CPU a position beside the engine's 23 ms (depth 6, real game
    positions; benchmarks/RESULTS.md).  The labels need only the first move and the value of
    each line when the search ends, so the lines are read as text and only the last one of each
    ``multipv`` index is parsed.  One search thread, and a cleared hash (``ucinewgame``) before
    every position: a position's labels do not depend on what was searched before, so a killed
    run resumes with identical labels.
    """

    def __init__(self, command: str, hash_mb: int, use_wdl: bool = True) -> None:
        self.use_wdl = use_wdl  # values from the WDL, else from the centipawn score
        self.process = UciProcess(command)
        self.name = self.process.start({"Threads": "1", "Hash": str(hash_mb)}, optional={"UCI_ShowWDL": "true"})
        self.multipv = 1

    def search(
        self, board: chess.Board, go: str, multipv: int, searchmoves: Sequence[chess.Move] = ()
    ) -> tuple[dict[chess.Move, float], int]:
        """Each reported root move's value (W - L for the side to move) after ``go`` with
        ``multipv`` lines, in the teacher's order (its best line first), and the search's
        nodes."""
        self.process.new_game()
        if multipv != self.multipv:
            self.process.tell(f"setoption name MultiPV value {multipv}")
            self.multipv = multipv
        self.process.tell(f"position fen {board.fen()}")
        if searchmoves:
            go += " searchmoves " + " ".join(move.uci() for move in searchmoves)
        last: dict[int, list[str]] = {}  # multipv index -> the words of its last scored line
        nodes = 0
        for line in self.process.ask(go, "bestmove", timeout=TEACHER_TIMEOUT):
            words = line.split()
            if words[:1] == ["info"] and "pv" in words and "score" in words:
                last[int(words[words.index("multipv") + 1]) if "multipv" in words else 1] = words
                if "nodes" in words:
                    nodes = max(nodes, int(words[words.index("nodes") + 1]))
        values: dict[chess.Move, float] = {}
        for index in sorted(last):
            words = last[index]
            values.setdefault(chess.Move.from_uci(words[words.index("pv") + 1]), line_value(words, self.use_wdl))
        return values, nodes

    def close(self) -> None:
        self.process.close()


def label_position(
    teacher: ChessTeacher, game: ChessGame, state: ChessState, go: str
) -> tuple[np.ndarray, np.ndarray, int]:
    """Every legal move of ``state`` with its value: (actions int32[n], values float32[n], nodes).

    One ``multipv`` search with as many lines as legal moves.  A move the teacher did not
    report (it can happen at tiny limits) is searched on its own (``searchmoves``).  The moves
    come in the teacher's order, its best line first, so that the first of equal values is the
    teacher's choice (the quickest mate among several, say).
    """
    board = state.board
    legal = list(board.legal_moves)
    values, nodes = teacher.search(board, go, len(legal))
    for move in legal:
        if move not in values:
            alone, more = teacher.search(board, go, 1, [move])
            values[move] = alone[move]
            nodes += more
    actions = np.array([game.move_to_action(state, move) for move in values], dtype=np.int32)
    return actions, np.array(list(values.values()), dtype=np.float32), nodes


def choose(values: np.ndarray, rng: np.random.Generator, temperature: float, margin: float | None) -> int:
    """Index of the move to play: uniform within ``margin`` of the best (an opening move), else
    a softmax of the values at ``temperature`` (0: the best, the first on ties)."""
    best = float(values.max())
    if margin is not None:
        return int(rng.choice(np.flatnonzero(values >= best - margin)))
    if temperature <= 0:
        return int(values.argmax())
    weights = np.exp((values - best) / temperature)
    return int(rng.choice(len(values), p=weights / weights.sum()))


def play_labelled_game(
    teacher: ChessTeacher, config: LabelConfig, index: int, student: Player | None = None
) -> LabelledGame:
    """Game ``index`` of the set: the teacher against itself (after the ``student``'s plies, if
    the set has one), every position labelled."""
    game = rules(config.game)
    assert isinstance(game, ChessGame)
    rng = np.random.default_rng([config.seed, index])
    temperatures = [float(rng.choice(TEMPERATURES[config.value])) for _ in range(2)]
    handover = student_until(config, rng, student)
    record = LabelledGame(index, [], [], [], [])
    state = game.initial_state()
    limit = config.limit()
    decided = 0  # plies in a row whose outcome the teacher already calls decisive
    while not state.is_terminal and state.move_number < config.max_plies and decided < config.decided_plies:
        actions, values, nodes = label_position(teacher, game, state, limit)
        decided = decided + 1 if abs(float(values.max())) >= 0.95 else 0
        record.hashes.append(chess.polyglot.zobrist_hash(state.board))
        record.actions.append(actions)
        record.values.append(values)
        record.nodes += nodes
        opening = state.move_number < config.opening_plies
        if student is not None and not opening and state.move_number < handover:
            action = student_move(student, state)
        else:
            pick = choose(values, rng, temperatures[state.to_play], config.opening_margin if opening else None)
            action = int(actions[pick])
        record.moves.append(game.action_to_text(state, action))
        state = state.play(action)
    return record
