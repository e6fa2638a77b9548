"""Teacher labelling: positions from a strong engine's games, each labelled with its move values.

`klent distill label` runs this.  Ruoss et al. 2024 ("Grandmaster-Level Chess Without
Search") trained a network on a teacher's value of *every legal move* of a position and found
these action-value targets beat state values and behavioural cloning at equal data; klent's
Q head is exactly that output, so a labelled set trains both heads (`klent.training.distill`).

This module runs the labelling: games played in parallel by one teacher process each, stored
shard by shard so that a killed run resumes where it stopped.  The chess teacher and its games
are `klent.training.teacher_chess`, Go's `klent.training.teacher_go`, DAgger's student
`klent.training.dagger`, and the set's configuration, manifest and shard format
`klent.training.shards`.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, fields
from pathlib import Path

from klent.engine.player import Player
from klent.matchplay.engine_process import EngineError, GtpProcess
from klent.training.dagger import open_student
from klent.training.shards import (
    LabelConfig,
    LabelledGame,
    Manifest,
    read_shard,
    shard_arrays,
    shard_paths,
    write_shard,
)
from klent.training.teacher_chess import ChessTeacher, play_labelled_game
from klent.training.teacher_go import play_labelled_go_game


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
