"""`klent uci`'s search thread: the ``go`` commands it answers in order, each with its limits,
ponder and stop, searched through `klent.engine.player.Player.decide` and ``analyse``."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import TextIO

from klent.engine.games.base import State
from klent.engine.player import Decision, Player, PlayOptions, Tablebase
from klent.protocols.uci_go import GoCommand
from klent.protocols.uci_info import info_lines
from klent.protocols.uci_options import MAX_SIMULATIONS

DEFAULT_SIMULATIONS = 800  # a `go` without any limit
INFO_INTERVAL = 1.0  # seconds an iteration of an open-ended search aims at
LONG_SEARCH = 5.0  # timed searches longer than this are iterated (info lines, memory cap)
QUIT_JOIN_SECONDS = 5.0
MAX_INFO = 400  # characters of an info string's message: messages quote the input, up to a megabyte of it
KEPT_END = 80  # characters of a longer message's end that are kept


class Output:
    """The GUI's stream, written by the command loop and the search thread in whole lines.

    ``lock`` also guards the search queue (`Searches`), so that a ``bestmove`` and the start of
    the next queued search are one step.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.lock = threading.Lock()

    def write(self, line: str) -> None:
        """Write ``line``; the caller holds ``lock``."""
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # the GUI went away; the end of input will follow
            pass

    def send(self, line: str) -> None:
        with self.lock:
            self.write(line)

    def info(self, message: str) -> None:
        """``message`` as an ``info string`` line, on one line and at most `MAX_INFO` characters:
        a longer one loses its middle, where the quoted input is, and keeps its end, which says
        what was done about it ("; position unchanged")."""
        text = " ".join(str(message).split())
        if len(text) > MAX_INFO:
            text = text[: MAX_INFO - KEPT_END] + " ... " + text[-KEPT_END:]
        self.send("info string " + text)


class SearchJob:
    """One ``go``: the position it searches, its limits, the events the main thread signals it
    with, and (once it starts) its player.

    ``options`` are how each of its searches decides, from the option values when the ``go``
    came (the budget is set where a search runs); ``cap`` is the simulations of the whole
    ``go``: ``nodes`` or the Simulations option, the smaller.  ``interrupt`` ends the running
    ``decide`` call (stop, quit, ponderhit); ``stopped`` says the whole search must end;
    ``ponderhit`` that the pondered move was played.  A job queued behind a running search
    keeps its position and its clock (``start``) from the ``go`` command.
    """

    def __init__(self, go: GoCommand, options: PlayOptions, cap: int | None, show_wdl: bool,
                 start: float, budget: float | None, initial: State, actions: list[int], state: State) -> None:
        self.go = go
        self.options = options
        self.cap = cap
        self.show_wdl = show_wdl
        self.start = start
        self.budget = budget
        self.initial = initial
        self.actions = actions
        self.state = state
        self.value_scale = "outcome"  # the player's (`Player.value_scale`), once it starts
        self.interrupt = threading.Event()
        self.stopped = threading.Event()
        self.ponderhit = threading.Event()
        self.simulations = 0

    def stop(self) -> None:
        self.stopped.set()
        self.interrupt.set()

    def resume(self) -> None:
        """Clear the interrupt after a ponderhit, unless a stop came meanwhile."""
        self.interrupt.clear()
        if self.stopped.is_set():
            self.interrupt.set()

    @property
    def waits_for_stop(self) -> bool:
        """Whether the search would never end by itself: ``infinite``, or pondering before
        the ``ponderhit``."""
        return not self.stopped.is_set() and (
            self.go.infinite or (self.go.ponder and not self.ponderhit.is_set())
        )

    @property
    def deadline(self) -> float | None:
        return None if self.budget is None else self.start + self.budget


class Searches:
    """The search thread and the ``go``s queued behind its search.

    Every ``go`` gets one ``bestmove``, in order.  ``load_player`` gives the player of the
    current game and model (None: no model to play); ``tables`` the endgame tables to use.
    """

    def __init__(self, output: Output, load_player: Callable[[], Player | None],
                 tables: Callable[[], Tablebase | None]) -> None:
        self.output = output
        self.load_player = load_player
        self.tables = tables
        self._job: SearchJob | None = None  # the search running (or about to start)
        self._queue: deque[SearchJob] = deque()  # the ``go``s that came while it runs, in order
        self._thread: threading.Thread | None = None

    def busy(self) -> bool:
        with self.output.lock:
            return self._job is not None

    def submit(self, job: SearchJob) -> None:
        """Start ``job``, or queue it behind the running search; a search that would never end
        by itself (``infinite``, pondering) is stopped first: the GUI forgot ``stop``."""
        with self.output.lock:
            ahead = [queued for queued in (self._job, *self._queue) if queued is not None]
            if not ahead:
                self._job = job
                self._thread = threading.Thread(target=self._work, args=(job,), name="uci-search", daemon=True)
                self._thread.start()
                return
            self._queue.append(job)
        if any(queued.waits_for_stop for queued in ahead):
            self.output.info("go: stopping the running search first (send stop before go)")
            for queued in ahead:
                if queued.waits_for_stop:
                    queued.stop()

    def stop(self) -> None:
        """End the running search and those queued behind it: each answers its bestmove now."""
        with self.output.lock:
            jobs = [job for job in (self._job, *self._queue) if job is not None]
        for job in jobs:
            job.stop()

    def ponderhit(self) -> None:
        """The pondered move was played: the pondering search goes on as a normal one."""
        with self.output.lock:
            job = next((j for j in (self._job, *self._queue) if j is not None and j.go.ponder
                        and not j.ponderhit.is_set()), None)
        if job is None:
            self.output.info("ponderhit: not pondering; ignored")
            return
        job.ponderhit.set()
        if not job.go.infinite:
            job.interrupt.set()

    def shutdown(self) -> None:
        """Drop the queued searches, stop the running one and wait (briefly) for its thread."""
        with self.output.lock:
            self._queue.clear()
            job, thread = self._job, self._thread
        if job is not None:
            job.stop()
        if thread is not None:
            thread.join(QUIT_JOIN_SECONDS)

    # --- the search thread ---------------------------------------------------------------------

    def _work(self, job: SearchJob) -> None:
        """Answer ``job``, then each search queued behind it, in order (the search thread)."""
        next_job: SearchJob | None = job
        while next_job is not None:
            answer = self._answer(next_job)
            with self.output.lock:
                self.output.write(answer)
                next_job = self._job = self._queue.popleft() if self._queue else None

    def _answer(self, job: SearchJob) -> str:
        """Search, report, and return the ``bestmove`` line (always, even if the search failed).

        With no move to search (a finished game, or no model), ``go infinite`` and ``go ponder``
        still answer only after ``stop`` / ``ponderhit``, as UCI asks of them."""
        try:
            player = self.load_player()
            state = job.state
            if player is None or state.is_terminal:
                if job.go.infinite or job.go.ponder:
                    job.interrupt.wait()
                if state.is_terminal:
                    self.output.send(f"info depth 0 score {'mate 0' if state.outcome() != 0 else 'cp 0'}")
                return "bestmove (none)"
            player.set_position(job.initial, job.actions, job.state)
            player.tablebase = self.tables()
            job.value_scale = player.value_scale
            decision = self._search(job, player)
            answer = f"bestmove {decision.move}"
            if decision.ponder is not None:
                answer += f" ponder {decision.ponder}"
            return answer
        except Exception as error:  # noqa: BLE001 - the GUI must get its bestmove regardless
            self.output.info(f"search failed: {type(error).__name__}: {error}")
            return "bestmove (none)"

    def _search(self, job: SearchJob, player: Player) -> Decision:
        go = job.go
        if go.infinite or go.ponder:
            decision = self._analyse(job, player, deadline=None, depth=None)
            job.interrupt.wait()
            if job.stopped.is_set() or go.infinite:
                return decision
            job.resume()
            if job.deadline is not None and time.perf_counter() >= job.deadline:
                return decision  # pondered for longer than this move's whole budget
        long_search = go.nodes is None and job.budget is not None and job.budget > LONG_SEARCH
        # One Sequential Halving search plans every simulation of its budget in memory up front;
        # `go nodes` beyond the largest Simulations setting is reached in steps instead.
        many_nodes = job.cap is not None and job.cap > MAX_SIMULATIONS
        if go.depth is not None or job.options.mode == "reactive" or long_search or many_nodes:
            return self._analyse(job, player, deadline=job.deadline, depth=go.depth)
        simulations = DEFAULT_SIMULATIONS if job.cap is None and job.deadline is None else job.cap
        options = replace(job.options, simulations=simulations, time=_seconds_until(job.deadline))
        decision = player.decide(options, stop=job.interrupt)
        job.simulations += decision.simulations
        self._report(job, decision)
        return decision

    def _analyse(self, job: SearchJob, player: Player, deadline: float | None, depth: int | None) -> Decision:
        """Successive searches on one tree with growing budgets, reporting after each.

        Ends when interrupted, at ``deadline``, once the PV is ``depth`` plies long or ends the
        game, when the simulation cap (``nodes``, ``Simulations``) is spent, or when the tree
        holds ``Hash`` MB.
        """
        cap = job.cap

        def update(decision: Decision) -> bool:
            job.simulations += decision.simulations
            self._report(job, decision)
            return depth is None or (decision.depth < depth and decision.outcome is None)

        return player.analyse(
            update, job.interrupt, job.options,
            simulations=None if cap is None else max(0, cap - job.simulations),
            time=_seconds_until(deadline),
            interval=INFO_INTERVAL,
        )

    def _report(self, job: SearchJob, decision: Decision) -> None:
        lines = info_lines(decision, job.simulations, time.perf_counter() - job.start, job.value_scale, job.show_wdl)
        for line in lines:
            self.output.send(line)


def _seconds_until(deadline: float | None) -> float | None:
    """The time left to a search that must end at ``deadline`` (None: no deadline)."""
    return None if deadline is None else max(0.0, deadline - time.perf_counter())
