"""Request batching: one network call for the evaluations of many concurrent requests.

Each HTTP request plays in its own worker thread with its own `klent.engine.player.Player`; every
player evaluates through the same `BatchingEvaluator`.  Its ``evaluate`` encodes the states in
the calling thread, queues them and waits; one batching thread takes whatever is queued (up to
``max_batch`` positions, waiting at most ``max_wait`` seconds for more), runs it as a single
ONNX Runtime batch and hands each caller its rows.  A reactive request (one position) and a
search (one call per wave of leaves) are merged the same way, without either knowing: the
batcher is just another `klent.engine.network.Evaluator`.

A network on a CPU or GPU evaluates 32 positions in far less than 32 times the time of one,
so under load this multiplies throughput.  Waiting for a batch to fill costs latency, so the
batcher waits only for calls it knows are coming: callers that will evaluate soon register
for the duration of their work (``with batcher.client(): ...``, one per HTTP request), and a
batch waits for more calls (at most ``max_wait``) only while it holds fewer calls than there
are registered clients.  One client alone never waits.  ``max_batch=1`` evaluates one call at
a time (what the benchmark compares against).

A merged batch that fails (a model whose outputs are NaN on one caller's position, an ONNX
Runtime error) is evaluated again call by call, so that each caller gets its own rows or its
own error: one request's position never fails the requests it shared a batch with.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from klent.engine.games.base import Game, State
from klent.engine.network import EncodedEvaluator, Evaluation, encode_states

# Called after each network call with (positions, seconds).
BatchObserver = Callable[[int, float], None]


class EvaluatorClosedError(RuntimeError):
    """The batching evaluator was closed (the server is shutting down)."""


@dataclass(eq=False)
class _Job:
    """One caller's positions, and the slot its result (or error) is put in."""

    obs: np.ndarray
    masks: np.ndarray
    done: threading.Event = field(default_factory=threading.Event)
    result: Evaluation | None = None
    error: BaseException | None = None

    @property
    def size(self) -> int:
        return int(self.obs.shape[0])


_CLOSE = None  # queued by close(): the batching thread stops after the jobs before it


class BatchingEvaluator:
    """An `Evaluator` that merges concurrent ``evaluate`` calls into one network batch.

    ``max_batch`` bounds the positions per network call (a single call with more positions
    runs alone, unsplit); ``max_wait`` is the longest a batch waits for the calls of
    registered clients (`client`).  ``observer`` is told the size and duration of every
    network call (metrics).
    """

    def __init__(
        self,
        inner: EncodedEvaluator,
        max_batch: int = 64,
        max_wait: float = 0.005,
        observer: BatchObserver | None = None,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        if max_wait < 0:
            raise ValueError(f"max_wait must be >= 0 seconds, got {max_wait}")
        self.inner = inner
        self.game: Game = inner.game
        self.max_batch = max_batch
        self.max_wait = max_wait
        self._observer = observer
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._closed = False
        self._clients = 0
        self._clients_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"batcher-{self.game.name}", daemon=True)
        self._thread.start()

    @contextmanager
    def client(self) -> Iterator[None]:
        """Announce a caller that will evaluate during the block (batches wait for it)."""
        with self._clients_lock:
            self._clients += 1
        try:
            yield
        finally:
            with self._clients_lock:
                self._clients -= 1

    def evaluate(self, states: Sequence[State]) -> Evaluation:
        """Encode ``states`` here (in the caller's thread) and evaluate them in a shared batch."""
        return self.evaluate_encoded(*encode_states(self.game, states))

    def evaluate_encoded(self, obs: np.ndarray, masks: np.ndarray) -> Evaluation:
        """Queue encoded positions and wait for their rows of a merged batch."""
        if self._closed:
            raise EvaluatorClosedError("the evaluator is shut down")
        job = _Job(np.ascontiguousarray(obs, dtype=np.float32), masks)
        if job.size == 0:
            return self.inner.evaluate_encoded(job.obs, job.masks)
        self._queue.put(job)
        job.done.wait()
        if job.error is not None:
            raise job.error
        assert job.result is not None
        return job.result

    @property
    def alive(self) -> bool:
        """True while the batching thread runs (the server's readiness check)."""
        return self._thread.is_alive() and not self._closed

    def close(self) -> None:
        """Finish the queued calls, then stop the batching thread."""
        if not self._closed:
            self._closed = True
            self._queue.put(_CLOSE)
            self._thread.join()

    # --- the batching thread ------------------------------------------------------------------

    def _run(self) -> None:
        carried: _Job | None = None
        while True:
            first = carried if carried is not None else self._queue.get()
            carried = None
            if first is _CLOSE:
                break
            jobs, carried, closing = self._collect(first)
            self._evaluate(jobs)
            if closing:
                break
        # Calls that raced with close() and were queued behind the marker.
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return
            if job is not _CLOSE:
                job.error = EvaluatorClosedError("the evaluator is shut down")
                job.done.set()

    def _collect(self, first: _Job) -> tuple[list[_Job], _Job | None, bool]:
        """Jobs for one batch, the job that did not fit (next batch's first), and whether
        the close marker was reached."""
        jobs, rows = [first], first.size
        deadline = time.monotonic() + self.max_wait
        while rows < self.max_batch:
            try:
                # Take what is already queued at once; wait only for calls known to be coming.
                job = self._queue.get_nowait()
            except queue.Empty:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or len(jobs) >= self._clients:
                    break
                try:
                    job = self._queue.get(timeout=remaining)
                except queue.Empty:
                    break
            if job is _CLOSE:
                return jobs, None, True
            if rows + job.size > self.max_batch:
                return jobs, job, False
            jobs.append(job)
            rows += job.size
        return jobs, None, False

    def _evaluate(self, jobs: list[_Job]) -> None:
        start = time.perf_counter()
        try:
            if len(jobs) == 1:
                evaluations = [self.inner.evaluate_encoded(jobs[0].obs, jobs[0].masks)]
            else:
                merged = self.inner.evaluate_encoded(
                    np.concatenate([job.obs for job in jobs]),
                    np.concatenate([job.masks for job in jobs]),
                )
                evaluations = _split(merged, [job.size for job in jobs])
        except Exception as error:  # handed to the callers it belongs to, the thread goes on
            if len(jobs) == 1:
                jobs[0].error = error
                jobs[0].done.set()
            else:
                for job in jobs:
                    self._evaluate([job])
            return
        seconds = time.perf_counter() - start
        for job, evaluation in zip(jobs, evaluations):
            job.result = evaluation
            job.done.set()
        if self._observer is not None:
            self._observer(sum(job.size for job in jobs), seconds)


def _split(evaluation: Evaluation, sizes: list[int]) -> list[Evaluation]:
    """Rows of a merged evaluation, per caller (copies, so callers never share memory)."""
    bounds = np.cumsum([0, *sizes])
    return [
        Evaluation(*(None if part is None else part[lo:hi].copy() for part in evaluation))
        for lo, hi in zip(bounds[:-1], bounds[1:])
    ]
