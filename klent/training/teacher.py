"""Teacher labelling: positions from a strong engine's games, each labelled with its move values.

`klent distill label` runs this.  Ruoss et al. 2024 ("Grandmaster-Level Chess Without
Search") trained a network on a teacher's value of *every legal move* of a position and found
these action-value targets beat state values and behavioural cloning at equal data; klent's
Q head is exactly that output, so a labelled set trains both heads (`klent.training.distill`).

Chess, with a UCI teacher (Stockfish):

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

Go, with a GTP teacher (GNU Go): the first ``opening_plies`` moves are random (off the first
line), then the teacher plays itself; every later position gets the teacher's
``top_moves_black/white`` with its move values (points, GNU Go's scale), the teacher's move,
and from the end of the game the result (``final_score``) and each point's final owner
(``final_status_list``: territory, living and seki stones for their colour, dead stones for
the captor), both from the view of the player to move.

Student positions (``student``, DAgger's remedy for a student that meets positions its teacher
never plays into): in each game a network -- the model being trained -- plays both sides for
the first k plies after the opening, k drawn uniformly from 0..``student_plies`` per game, as
it plays reactively (the argmax of its policy, Go's move rules applied); the teacher plays
the rest.  The positions its mistakes lead to are then labelled by the teacher.  Chess labels
every position, the student's too (a label is a search of the position, whoever moves next);
Go labels from the teacher's first move on, since its Q target is the game's outcome, which
must come from the teacher's play.

Storage: a folder with ``manifest.json`` and ``shard-NNNNN.npz`` files, each holding
``games_per_shard`` consecutive games whole.  Game ``i`` is fully determined by
(seed, i) and the teacher (a chess teacher's hash is cleared before each position and it
searches with one thread; GNU Go gets the game's index as its random seed), so a labelling
run killed at any moment resumes at the first game not in a committed shard and produces
exactly the positions an uninterrupted run would.  Positions are deduplicated by Zobrist hash
across the whole set, in game order; game ``i`` is a validation game when
``i % validation_every == validation_every - 1``, so the split is by game, never by position.
A shard is written atomically and only then listed in the manifest (also atomic); a shard file
the manifest does not list is left over from a kill and is rewritten.
"""

from __future__ import annotations

import hashlib
import json
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import chess
import chess.polyglot
import numpy as np

import klent.engine.games
from klent.engine.files import atomic_target, write_text_atomically
from klent.engine.games.base import State
from klent.engine.games.chess import ChessGame, ChessState
from klent.engine.games.go import GoGame, GoState
from klent.engine.player import Player, PlayOptions
from klent.matchplay.engine_process import EngineError, GtpFailure, GtpProcess, UciProcess
from klent.matchplay.openings import off_the_edge
from klent.protocols.go_text import score_points
from klent.protocols.uci_value import line_value

MANIFEST = "manifest.json"
FORMAT = 1  # shard layout version, in the manifest

# Per-game strengths after the opening: softmax temperatures over the values (0 = best move),
# by value scale.  On Stockfish's WDL, 0.1 makes the mistakes of a weak club player (a 1-pawn
# slip near equality, ~0.5 of W - L, weighs e^-5); the centipawn scale is ~2.7 times flatter
# there (+1 pawn = 0.18), so its temperatures are ~2.7 times lower for the same mix.
TEMPERATURES = {"wdl": (0.0, 0.0, 0.01, 0.03, 0.1), "cp": (0.0, 0.0, 0.004, 0.011, 0.037)}
VALUE_SCALES = tuple(TEMPERATURES)


# Seconds the teacher has for any one answer: the search of one position (depth 6: about 25 ms)
# or a Go teacher's move values and final score.  A teacher silent this long is hung, and the
# labelling stops with an error rather than waiting for ever.
TEACHER_TIMEOUT = 120.0


@dataclass(frozen=True)
class LabelConfig:
    """What to label and how; stored in the manifest so that a resume cannot change it."""

    game: str = "chess"
    teacher: str = "stockfish"  # command line of a UCI engine
    positions: int = 10_000  # stop once this many distinct positions are stored
    depth: int | None = 6  # the teacher's search per position (depth or nodes)
    nodes: int | None = None
    seed: int = 0
    opening_plies: int = 6
    opening_margin: float = 0.1  # opening moves within this much W - L of the best
    max_plies: int = 300  # a game longer than this stops (its positions are kept)
    decided_plies: int = 40  # a game stops once the best move's |W - L| >= 0.95 this many plies running
    games_per_shard: int = 20
    validation_every: int = 20  # every 20th game is a validation game (5 %)
    hash_mb: int = 16
    student: str | None = None  # an ONNX model that plays the first plies after the opening
    student_plies: int = 0  # its plies in a game: uniform in 0..student_plies
    value: str = "wdl"  # chess labels' scale: "wdl" (the teacher's W - L) or "cp" (its centipawns)

    def __post_init__(self) -> None:
        if self.game == "chess":
            if (self.depth is None) == (self.nodes is None):
                raise ValueError("give the teacher exactly one of a depth or a node limit")
            if (self.depth or self.nodes or 0) < 1:
                raise ValueError("the teacher's depth or node limit must be at least 1")
        elif re.fullmatch(r"go\d+", self.game):
            if self.depth is not None or self.nodes is not None:
                raise ValueError("a Go teacher (GTP) plays at its own level: no depth or node limit")
        else:
            raise ValueError(f"teacher labelling is for chess and Go, not {self.game!r}")
        if self.positions < 1 or self.games_per_shard < 1 or self.validation_every < 2:
            raise ValueError("positions and games_per_shard must be >= 1, validation_every >= 2")
        if self.opening_plies < 0 or self.max_plies < 1 or not 0 <= self.opening_margin <= 2:
            raise ValueError("opening_plies >= 0, max_plies >= 1 and 0 <= opening_margin <= 2")
        if self.value not in VALUE_SCALES:
            raise ValueError(f"the value scale is one of {', '.join(VALUE_SCALES)}, not {self.value!r}")
        if self.student_plies < 0 or (self.student is None) != (self.student_plies == 0):
            raise ValueError("a student model needs student_plies >= 1, and student_plies a student model")

    def limit(self) -> str:
        """The teacher's ``go`` command for one position."""
        return f"go depth {self.depth}" if self.depth is not None else f"go nodes {self.nodes}"

    def is_validation(self, game: int) -> bool:
        return game % self.validation_every == self.validation_every - 1


@dataclass
class LabelledGame:
    """One teacher game: its moves and, for each position before a move, the labels.

    Chess: ``actions``/``values`` are every legal move and its W - L.  Go: they are GNU Go's
    ``top_moves`` and its move values (in points, GNU Go's own scale, not a win probability),
    and the game also has the teacher's move per position, the final result and the final
    owner of every point (+1 Black, -1 White, 0 neither; dead stones are the captor's).
    """

    index: int
    moves: list[str]  # text of every move played (UCI / GTP vertex), from the initial position
    hashes: list[int]  # hash of each labelled position (one per ply)
    actions: list[np.ndarray]  # per position: the labelled actions (klent's action indices)
    values: list[np.ndarray]  # per position: their values, same order
    nodes: int = 0  # the teacher's nodes over the game (chess; for the throughput report)
    teacher_moves: list[int] = field(default_factory=list)  # Go: the teacher's move per position
    result: float = 0.0  # Go: final score from Black's view (komi included), the referee's
    ownership: np.ndarray | None = None  # Go: int8[points], the final owners
    first_ply: int = 0  # ply of the first labelled position (Go: after the random opening)


@dataclass
class Manifest:
    config: dict
    teacher_name: str
    shards: list[str] = field(default_factory=list)
    games: int = 0
    positions: int = 0  # distinct positions stored
    train_positions: int = 0
    validation_positions: int = 0
    duplicates: int = 0  # positions dropped because an earlier game had them
    labels: int = 0  # labelled moves
    teacher_nodes: int = 0
    teacher_seconds: float = 0.0  # wall time of the teacher's searches, summed over jobs
    format: int = FORMAT

    @classmethod
    def read(cls, folder: Path) -> Manifest | None:
        path = folder / MANIFEST
        if not path.is_file():
            return None
        try:
            return cls(**json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, TypeError) as error:
            raise ValueError(f"{path} is not a labelling manifest: {error}") from None

    def write(self, folder: Path) -> None:
        write_text_atomically(folder / MANIFEST, json.dumps(asdict(self), indent=2) + "\n")


# ---------------------------------------------------------------------------------------------
# The teacher's view of one position
# ---------------------------------------------------------------------------------------------


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


def student_until(config: LabelConfig, rng: np.random.Generator, student: Player | None) -> int:
    """The ply at which the student of one game hands over to the teacher: the end of the
    opening plus k plies drawn uniformly in 0..``student_plies`` (no random draw without a
    student, so the games of a set without one stay as they were)."""
    assert (student is None) == (config.student is None), "a set with a student plays it (open_student)"
    return config.opening_plies + (int(rng.integers(0, config.student_plies + 1)) if config.student else 0)


def open_student(config: LabelConfig) -> Player:
    """The student as it plays a match reactively: the argmax of its policy (Go's move rules
    applied), one ONNX Runtime thread; a missing model or one of another game is a ValueError."""
    assert config.student is not None
    try:
        return Player.load(rules(config.game), config.student, options=PlayOptions(mode="reactive"), threads=1)
    except (FileNotFoundError, ValueError) as error:
        raise ValueError(f"cannot load the student {config.student!r}: {error}") from None


def student_move(student: Player, state: State) -> int:
    """The student's move in ``state``."""
    student.set_position(state)
    return student.decide().action


def rules(game_id: str) -> ChessGame | GoGame:
    """The rules teacher games are played and replayed under: chess without a move cap, Go with
    komi 7.5 (a game's length is the labeller's `LabelConfig.max_plies`, not a preset's cap)."""
    if game_id == "chess":
        return klent.engine.games.get(game_id, max_moves=None)  # type: ignore[return-value]
    return klent.engine.games.get(game_id)  # type: ignore[return-value]


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


def play_labelled_go_game(
    teacher: GtpProcess, config: LabelConfig, index: int, student: Player | None = None
) -> LabelledGame:
    """Go game ``index``: GNU Go (or another GTP engine with ``top_moves_black/white`` and
    ``final_status_list``) against itself from ``opening_plies`` random moves off the first
    line (and the ``student``'s plies, if the set has one), every later position labelled
    with the teacher's top moves; then the final score and ownership as the teacher judges
    them (dead stones removed)."""
    game = rules(config.game)
    assert isinstance(game, GoGame)
    rng = np.random.default_rng([config.seed, index])
    handover = student_until(config, rng, student)
    record = LabelledGame(index, [], [], [], [], first_ply=handover)
    state = game.initial_state()
    teacher.send(f"boardsize {game.size}")
    teacher.send("clear_board")
    teacher.send(f"komi {game.komi:g}")
    try:
        teacher.send(f"set_random_seed {index}")
    except GtpFailure:
        pass  # an engine without it plays its own way
    while not state.is_terminal and state.move_number < config.max_plies:
        colour = "bw"[state.to_play]
        if state.move_number < config.opening_plies:
            inner = off_the_edge(state)
            action = int(rng.choice(inner)) if inner else game.pass_action
        elif student is not None and state.move_number < handover:
            action = student_move(student, state)
        else:
            side = "black" if colour == "b" else "white"
            listed = teacher.send(f"top_moves_{side}", timeout=TEACHER_TIMEOUT).split()
            top = [(game.parse_vertex(v), float(x)) for v, x in zip(listed[::2], listed[1::2])]
            legal = state.legal_mask()
            top = [(a, x) for a, x in top if legal[a]]  # GNU Go ignores positional superko
            action = top[0][0] if top else game.pass_action
            record.hashes.append(go_position_hash(state))
            record.actions.append(np.array([a for a, _ in top] or [game.pass_action], dtype=np.int32))
            record.values.append(np.array([x for _, x in top] or [0.0], dtype=np.float32))
            record.teacher_moves.append(action)
        vertex = game.vertex(action)
        teacher.send(f"play {colour} {vertex}")
        record.moves.append(vertex)
        state = state.play(action)
    score = teacher.send("final_score", timeout=TEACHER_TIMEOUT)
    result = score_points(score)
    if result is None:
        raise EngineError(f"the teacher's final_score {score!r} is not a score")
    record.result = result
    owner = np.zeros(game.size * game.size, dtype=np.int8)
    stones = state.board().reshape(-1)
    for status in ("black_territory", "white_territory", "alive", "seki", "dead"):
        for vertex in teacher.send(f"final_status_list {status}", timeout=TEACHER_TIMEOUT).split():
            point = game.parse_vertex(vertex)
            # territory: its colour; a living stone (seki too): its own; a dead stone: the captor's
            owner[point] = {"black_territory": 1, "white_territory": -1, "dead": -stones[point]}.get(
                status, stones[point])
    record.ownership = owner
    return record


def go_position_hash(state: GoState) -> int:
    """A hash of a Go position (stones, side to move, passes) that is the same in every process
    (Python's ``hash`` of bytes is not), for deduplication across resumed runs."""
    data = bytes([state.to_play, state.consecutive_passes]) + state.board().tobytes()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


# ---------------------------------------------------------------------------------------------
# Shards
# ---------------------------------------------------------------------------------------------


def shard_arrays(
    games: list[LabelledGame], seen: set[int], config: LabelConfig
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """The arrays of one shard, keeping only positions whose hash is not in ``seen`` (which
    grows), and the counts to add to the manifest.

    Layout: ``game_index``/``game_moves`` per game (moves as one space-separated string);
    per position ``position_game`` (row in the shard's games), ``ply``, ``hash``,
    ``label_start`` (offset of its labels; one more entry at the end); per label ``action``
    and ``value``.
    """
    position_game, plies, hashes, starts, actions, values = [], [], [], [0], [], []
    teacher_actions, outcomes, owners = [], [], []  # Go only
    counts = {"positions": 0, "train_positions": 0, "validation_positions": 0, "duplicates": 0, "labels": 0}
    for row, record in enumerate(games):
        for number, key in enumerate(record.hashes):
            if key in seen:
                counts["duplicates"] += 1
                continue
            seen.add(key)
            ply = record.first_ply + number
            position_game.append(row)
            plies.append(ply)
            hashes.append(key)
            actions.append(record.actions[number])
            values.append(record.values[number])
            starts.append(starts[-1] + len(record.actions[number]))
            if record.ownership is not None:  # Go: from the view of the player to move
                mover = 1 if ply % 2 == 0 else -1
                teacher_actions.append(record.teacher_moves[number])
                outcomes.append(float(np.sign(record.result)) * mover)
                owners.append(record.ownership * mover)
            counts["positions"] += 1
            counts["validation_positions" if config.is_validation(record.index) else "train_positions"] += 1
            counts["labels"] += len(record.actions[number])
    arrays = {
        "game_index": np.array([g.index for g in games], dtype=np.int64),
        "game_moves": np.array([" ".join(g.moves) for g in games], dtype=np.str_),
        "position_game": np.array(position_game, dtype=np.int32),
        "ply": np.array(plies, dtype=np.int32),
        "hash": np.array(hashes, dtype=np.uint64),
        "label_start": np.array(starts, dtype=np.int64),
        "action": np.concatenate(actions).astype(np.int32) if actions else np.zeros(0, np.int32),
        "value": np.concatenate(values).astype(np.float32) if values else np.zeros(0, np.float32),
    }
    if any(g.ownership is not None for g in games):
        points = len(next(g.ownership for g in games if g.ownership is not None))
        arrays["teacher_action"] = np.array(teacher_actions, dtype=np.int32)
        arrays["outcome"] = np.array(outcomes, dtype=np.float32)
        arrays["ownership"] = np.array(owners, dtype=np.int8).reshape(-1, points)
    return arrays, counts


def write_shard(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with atomic_target(path) as tmp:
        with open(tmp, "wb") as handle:
            np.savez_compressed(handle, **arrays)


def read_shard(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def shard_paths(folder: Path) -> list[Path]:
    """The committed shards of a labelled set, in order (those its manifest lists)."""
    manifest = Manifest.read(Path(folder))
    if manifest is None:
        raise FileNotFoundError(f"{folder} holds no labelled set ({MANIFEST} is missing)")
    return [Path(folder) / name for name in manifest.shards]


# ---------------------------------------------------------------------------------------------
# The labelling run
# ---------------------------------------------------------------------------------------------


class _Teachers:
    """One teacher process (and student player) per worker thread, started on first use, the
    processes all closed at the end."""

    def __init__(self, config: LabelConfig) -> None:
        self.config = config
        self.local = threading.local()
        self.started: list[ChessTeacher | GtpProcess] = []
        self.lock = threading.Lock()

    def get(self) -> ChessTeacher | GtpProcess:
        teacher = getattr(self.local, "teacher", None)
        if teacher is None:
            teacher = open_teacher(self.config)
            self.local.teacher = teacher
            with self.lock:
                self.started.append(teacher)
        return teacher

    def student(self) -> Player | None:
        if self.config.student is None:
            return None
        student = getattr(self.local, "student", None)
        if student is None:
            student = self.local.student = open_student(self.config)
        return student

    def close(self) -> None:
        for teacher in self.started:
            try:
                teacher.close()
            except Exception:  # noqa: BLE001 - a teacher that died is closed anyway
                pass


def open_teacher(config: LabelConfig) -> ChessTeacher | GtpProcess:
    """Chess: the UCI teacher with one thread, a small hash and WDL output (deterministic
    searches).  Go: the GTP teacher as it is."""
    if config.game != "chess":
        try:
            teacher = GtpProcess(config.teacher)
            teacher.send("name")
        except EngineError as error:
            raise ValueError(f"cannot start the teacher {config.teacher!r}: {error}") from None
        return teacher
    try:
        return ChessTeacher(config.teacher, config.hash_mb, use_wdl=config.value == "wdl")
    except EngineError as error:
        raise ValueError(f"cannot start the teacher {config.teacher!r}: {error}") from None


def label(
    config: LabelConfig,
    out: str | Path,
    jobs: int = 1,
    progress: Callable[[Manifest], None] | None = None,
) -> Manifest:
    """Label until ``config.positions`` distinct positions are stored in ``out``; resumable.

    ``jobs`` games are played at once, each by its own teacher process.  ``progress(manifest)``
    follows every committed shard.  A folder labelled with other settings is refused.
    """
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    manifest = Manifest.read(folder)
    settings = json.loads(json.dumps(asdict(config)))
    teachers = _Teachers(config)
    if config.student is not None:
        open_student(config)  # a wrong model is an error now, not in a worker thread later
    try:
        if manifest is None:
            first = teachers.get()
            name = first.send("name") if isinstance(first, GtpProcess) else first.name
            manifest = Manifest(settings, teacher_name=str(name))
            manifest.write(folder)
        elif manifest.config != settings:
            # A setting added since the set was made reads as its default there.
            defaults = {f.name: f.default for f in fields(LabelConfig)}
            changed = sorted(k for k in settings
                             if k != "positions" and manifest.config.get(k, defaults[k]) != settings[k])
            if changed:
                raise ValueError(f"{folder} was labelled with other settings ({', '.join(changed)}); "
                                 "use the same ones or another --out")
            manifest.config = settings  # only the target count grew or shrank
        seen: set[int] = set()
        for path in shard_paths(folder):
            seen.update(int(h) for h in read_shard(path)["hash"])
        listed = set(manifest.shards)
        for stale in folder.glob("shard-*.npz"):
            if stale.name not in listed:
                stale.unlink()  # written by a run killed before its manifest listed it
        for stale in folder.glob(".*.tmp*"):
            stale.unlink()
        batches = _games_in_order(config, teachers, manifest.games, jobs)
        while manifest.positions < config.positions:
            games, seconds = next(batches)
            arrays, counts = shard_arrays(games, seen, config)
            name = f"shard-{len(manifest.shards):05d}.npz"
            write_shard(folder / name, arrays)
            manifest.shards.append(name)
            manifest.games += len(games)
            for key, value in counts.items():
                setattr(manifest, key, getattr(manifest, key) + value)
            manifest.teacher_nodes += sum(g.nodes for g in games)
            manifest.teacher_seconds += seconds
            manifest.write(folder)
            if progress is not None:
                progress(manifest)
        batches.close()
    finally:
        teachers.close()
    return manifest


def _games_in_order(
    config: LabelConfig, teachers: _Teachers, first: int, jobs: int
) -> Iterator[tuple[list[LabelledGame], float]]:
    """Shards' worth of games from game ``first`` on, in game order, ``jobs`` played at once;
    with each shard the teacher's wall seconds it took (summed over the workers)."""
    seconds: queue.SimpleQueue[float] = queue.SimpleQueue()

    def work(index: int) -> LabelledGame:
        start = time.monotonic()
        teacher = teachers.get()
        if isinstance(teacher, GtpProcess):
            record = play_labelled_go_game(teacher, config, index, teachers.student())
        else:
            record = play_labelled_game(teacher, config, index, teachers.student())
        seconds.put(time.monotonic() - start)
        return record

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        pending: list[Future[LabelledGame]] = []
        next_game = first
        try:
            while True:
                while len(pending) < config.games_per_shard + jobs:
                    pending.append(pool.submit(work, next_game))
                    next_game += 1
                games = [pending.pop(0).result() for _ in range(config.games_per_shard)]
                spent = 0.0
                while not seconds.empty():
                    spent += seconds.get()
                yield games, spent
        finally:
            for future in pending:
                future.cancel()
