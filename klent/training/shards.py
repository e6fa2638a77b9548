"""A labelled set: what to label (`LabelConfig`), the games (`LabelledGame`), the manifest and the
shard format.

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

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

import klent.engine.games
from klent.engine.files import atomic_target, read_json, read_npz, write_text_atomically
from klent.engine.games.chess import ChessGame
from klent.engine.games.go import GoGame

MANIFEST = "manifest.json"
FORMAT = 1  # shard layout version, in the manifest
VALUE_SCALES = ("wdl", "cp")  # chess labels' scales: the teacher's W - L, or its centipawns squashed
# The largest manifest read: about 25 bytes a shard, so 40,000 shards (a real set has tens to
# hundreds; go13-l1's manifest of 22 is 1.2 KB).
MAX_MANIFEST_BYTES = 1 << 20
# The largest shard read, as a file and inflated: a shard of 20 games is about 2 MB inflated
# (go19-l1: 4,500 19x19 positions with ownership; a chess shard is of the same order), so this
# leaves room for 30 times the default games_per_shard.
MAX_SHARD_BYTES = 64 << 20


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
    and the game also has the teacher's move per position (with the teacher's own W - L value of
    it where it gives one: Pachi's win rate), the final result and the final owner of every
    point (+1 Black, -1 White, 0 neither; dead stones are the captor's).
    """

    index: int
    moves: list[str]  # text of every move played (UCI / GTP vertex), from the initial position
    hashes: list[int]  # hash of each labelled position (one per ply)
    actions: list[np.ndarray]  # per position: the labelled actions (klent's action indices)
    values: list[np.ndarray]  # per position: their values, same order
    nodes: int = 0  # the teacher's nodes over the game (chess; for the throughput report)
    teacher_moves: list[int] = field(default_factory=list)  # Go: the teacher's move per position
    teacher_values: list[float] = field(default_factory=list)  # Go: its value of that move (W - L), or NaN
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
        fields = read_json(path, MAX_MANIFEST_BYTES)
        try:
            return cls(**fields)
        except TypeError as error:
            raise ValueError(f"{path} is not a labelling manifest: {error}") from None

    def write(self, folder: Path) -> None:
        write_text_atomically(folder / MANIFEST, json.dumps(asdict(self), indent=2) + "\n")


def rules(game_id: str) -> ChessGame | GoGame:
    """The rules teacher games are played and replayed under: chess without a move cap, Go with
    komi 7.5 (a game's length is the labeller's `LabelConfig.max_plies`, not a preset's cap)."""
    if game_id == "chess":
        return klent.engine.games.get(game_id, max_moves=None)  # type: ignore[return-value]
    return klent.engine.games.get(game_id)  # type: ignore[return-value]


def shard_arrays(
    games: list[LabelledGame], seen: set[int], config: LabelConfig
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """The arrays of one shard, keeping only positions whose hash is not in ``seen`` (which
    grows), and the counts to add to the manifest.

    Layout: ``game_index``/``game_moves`` per game (moves as one space-separated string);
    per position ``position_game`` (row in the shard's games), ``ply``, ``hash``,
    ``label_start`` (offset of its labels; one more entry at the end); per label ``action``
    and ``value``.  Go adds per position ``teacher_action``, ``teacher_value`` (NaN where the
    teacher gives none), ``outcome`` and ``ownership``, each from the view of the player to move.
    """
    position_game, plies, hashes, starts, actions, values = [], [], [], [0], [], []
    teacher_actions, teacher_values, outcomes, owners = [], [], [], []  # Go only
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
                teacher_values.append(record.teacher_values[number])
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
        arrays["teacher_value"] = np.array(teacher_values, dtype=np.float32)
        arrays["outcome"] = np.array(outcomes, dtype=np.float32)
        arrays["ownership"] = np.array(owners, dtype=np.int8).reshape(-1, points)
    return arrays, counts


def write_shard(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with atomic_target(path) as tmp:
        with open(tmp, "wb") as handle:
            np.savez_compressed(handle, **arrays)


def read_shard(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a shard `write_shard` wrote; ValueError naming the file for anything else
    (larger than `MAX_SHARD_BYTES`, a zip bomb, an array declared larger than its member)."""
    return read_npz(path, MAX_SHARD_BYTES, "a labelled shard")


def shard_paths(folder: Path) -> list[Path]:
    """The committed shards of a labelled set, in order (those its manifest lists)."""
    manifest = Manifest.read(Path(folder))
    if manifest is None:
        raise FileNotFoundError(f"{folder} holds no labelled set ({MANIFEST} is missing)")
    return [Path(folder) / name for name in manifest.shards]
