"""KataGo's JSON analysis engine on stdin/stdout (`klent analysis`), the protocol KaTrain,
Ogatak, q5Go and analyze-sgf drive their engine with.

One JSON query per input line, one JSON answer per output line, flushed at once; stdout carries
nothing else.  Queries are read into positions by `klent.protocols.katago_query`, which also
analyses each turn through the `Player` facade and writes its answers.  Here is the engine
around it:

* **Queries in flight.**  Each turn of a query is a task in one priority queue (highest
  ``priority`` first, then the earlier query); ``analysis_threads`` workers take them, each
  with its own `Player` per board size over the one network of that size, so several turns
  are analysed at once and answered as they finish, out of order.  Every turn ends with
  exactly one answer whose ``isDuringSearch`` is false (or an error line).
* **Actions.**  ``query_version``, ``clear_cache`` (klent keeps no cache between queries:
  answered at once), ``terminate`` (by ``terminateId``, optionally ``turnNumbers``) and
  ``terminate_all``: a turn still queued is answered ``noResults``, one being analysed stops
  within one network batch and answers what it found; ``query_models`` lists the Go models.
  Each action is acknowledged by echoing it.
* **Bad input** gets KataGo's error line (``{"error", "field", "id"}``, the ``id`` when the
  query has one) and the engine reads on: nothing a client sends ends the process.  Warnings
  (territory rules, settings klent does not apply, unknown fields) come as ``{"warning",
  "field", "id"}`` lines before the query's answers.
* **End of input**: the queued queries are finished, then the engine exits with status 0
  (with ``quit_without_waiting``, they are terminated first).
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from klent.engine.games.go import GoGame
from klent.engine.player import (
    DEFAULT_WEIGHTS_DIR,
    Evaluator,
    Player,
    PlayOptions,
    go_board_sizes,
    model_path_for,
    read_model_info,
)
from klent.protocols.katago_answer import analyse_turn, no_results
from klent.protocols.katago_query import (
    DEFAULT_MAX_VISITS,
    Query,
    QueryError,
    Turn,
    error_line,
    parse_query,
    query_id,
    warning_lines,
)

MAX_LINE = 4 * 2**20  # bytes of one query line; a longer line is an error
MAX_NESTING = 64  # levels of arrays and objects in a query (KataGo's queries have 4)
KATAGO_VERSION = "1.15.3"  # the analysis protocol's version klent answers to (query_version)


@dataclass
class AnalysisConfig:
    """How `klent analysis` was started."""

    model: Path | None = None  # one model; None: weights_dir/go{N}.onnx for each size N
    weights_dir: Path = DEFAULT_WEIGHTS_DIR
    options: PlayOptions = field(default_factory=PlayOptions)  # the search's settings (its budget is the query's)
    analysis_threads: int = 2
    max_visits: int = DEFAULT_MAX_VISITS  # when a query gives no maxVisits
    threads: int | None = None
    device: str = "auto"
    precision: str = "float32"
    seed: int | None = None
    version: str = "0"
    quit_without_waiting: bool = False


class AnalysisEngine:
    """Answers analysis queries from a stream, ``analysis_threads`` turns at a time."""

    def __init__(self, config: AnalysisConfig, out: TextIO) -> None:
        self.config = config
        self.out = out
        self._sizes = go_board_sizes(config.options, config.model, config.weights_dir)
        self._networks: dict[int, Evaluator] = {}
        self._write_lock = threading.Lock()
        self._queue: list[tuple[int, int, Turn]] = []  # heap of (-priority, arrival, turn)
        self._arrival = itertools.count()
        self._running: list[Turn] = []
        self._changed = threading.Condition()
        self._closing = False

    @property
    def sizes(self) -> list[int]:
        """The board sizes there are models for: the only ones a query may ask."""
        return list(self._sizes)

    # --- the session ----------------------------------------------------------------------

    def load(self) -> None:
        """Load the network of every board size there is a model for (and warm the search up),
        so that the first query is answered as fast as the next ones."""
        for size in self._sizes:
            game = GoGame(size)
            player = Player.load(
                game, model=self.config.model, weights_dir=self.config.weights_dir, options=self.config.options,
                threads=self.config.threads, seed=self.config.seed, precision=self.config.precision,
                device=self.config.device,
            )
            assert player.evaluator is not None
            self._networks[size] = player.evaluator

    def run(self, stdin: BinaryIO) -> int:
        """Serve queries from ``stdin`` until its end; returns the exit status (0)."""
        self.load()
        count = max(1, self.config.analysis_threads)
        workers = [threading.Thread(target=self._work, daemon=True) for _ in range(count)]
        for worker in workers:
            worker.start()
        for line in _lines(stdin):
            self.handle_line(line)
        if self.config.quit_without_waiting:
            self._terminate(lambda turn: True)
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        for worker in workers:
            worker.join()
        return 0

    def handle_line(self, line: str | None) -> None:
        """Answer one input line (None: a line over `MAX_LINE`): queue its query, run its
        action, or write its error."""
        if line is None:
            self._write(error_line(f"query line longer than {MAX_LINE} bytes"))
            return
        if not line.strip():
            return
        try:
            raw = decode_line(line)
        except (ValueError, RecursionError) as error:
            self._write(error_line(f"could not parse the query as JSON: {str(error)[:200]}"))
            return
        try:
            if _too_deep(raw):
                raise QueryError(f"query nested deeper than {MAX_NESTING} levels")
            if isinstance(raw, dict) and "action" in raw:
                self._action(raw)
            else:
                self._enqueue(parse_query(raw, self._sizes, self.config.max_visits))
        except QueryError as error:
            self._write(error_line(str(error), error.field, query_id(raw)))
        except Exception as error:  # a bug must not end the engine: the query gets an error line
            self._write(_internal_error(error, query_id(raw)))

    def _write(self, answer: dict[str, Any]) -> None:
        """One answer as one line of JSON, flushed."""
        try:
            text = json.dumps(answer, separators=(",", ":"), allow_nan=False)
        except ValueError:  # a NaN from the network: the answer would not be JSON
            text = json.dumps(error_line("internal error: the analysis holds a value that is not a number",
                                         id=answer.get("id")))
        with self._write_lock:
            self.out.write(text + "\n")
            self.out.flush()

    # --- queries --------------------------------------------------------------------------

    def _enqueue(self, query: Query) -> None:
        for warning in warning_lines(query):
            self._write(warning)
        with self._changed:
            for index in range(len(query.turns)):
                turn = Turn(query, index)
                heapq.heappush(self._queue, (-turn.priority, next(self._arrival), turn))
            self._changed.notify_all()

    def _work(self) -> None:
        """A worker: analyse the most urgent queued turn, again and again, until the input has
        ended and the queue is empty."""
        players: dict[int, Player] = {}
        while True:
            with self._changed:
                while not self._queue and not self._closing:
                    self._changed.wait()
                if not self._queue:
                    return
                _, _, turn = heapq.heappop(self._queue)
                self._running.append(turn)
            try:
                size = turn.query.size
                if size not in players:
                    players[size] = Player(self._networks[size], self.config.options, seed=self.config.seed)
                final = analyse_turn(players[size], turn, self._write, self.config.options)
            except Exception as error:  # a bug must not end the engine: the query gets an error line
                final = _internal_error(error, turn.query.id)
            self._write(final)
            with self._changed:
                self._running.remove(turn)

    # --- actions --------------------------------------------------------------------------

    def _action(self, raw: dict[str, Any]) -> None:
        id = query_id(raw)
        if id is None:
            raise QueryError("an action needs an id: a string of at most 1000 characters", "id")
        action = raw["action"]
        if action == "query_version":
            self._write({**raw, "version": KATAGO_VERSION, "git_hash": f"klent-{self.config.version}"})
        elif action == "clear_cache":
            self._write(raw)
        elif action in ("terminate", "terminate_all"):
            terminate_id = raw.get("terminateId")
            if action == "terminate" and not isinstance(terminate_id, str):
                raise QueryError("terminate needs the terminateId of the query to end", "terminateId")
            turns = raw.get("turnNumbers")
            if turns is not None and not (isinstance(turns, list) and all(type(t) is int for t in turns)):
                raise QueryError("turnNumbers must be a list of integers", "turnNumbers")
            self._write(raw)
            self._terminate(lambda turn: (action == "terminate_all" or turn.query.id == terminate_id)
                            and (turns is None or turn.number in turns))
        elif action == "query_models":
            self._write({**raw, "models": self._models()})
        else:
            raise QueryError(f"unknown action {str(action)[:40]!r}", "action")

    def _terminate(self, chosen: Callable[[Turn], bool]) -> None:
        """Stop the turns ``chosen(turn)`` picks: queued ones are answered ``noResults`` now,
        those being analysed stop and answer what they found."""
        with self._changed:
            ended = [turn for _, _, turn in self._queue if chosen(turn)]
            self._queue = [entry for entry in self._queue if not chosen(entry[2])]
            heapq.heapify(self._queue)
            for turn in self._running:
                if chosen(turn):
                    turn.stop.set()
        for turn in ended:
            self._write(no_results(turn))

    def _models(self) -> list[dict[str, Any]]:
        """The Go models, one per board size, as KataGo's ``query_models`` lists its own."""
        models = []
        for size in self._sizes:
            path = self.config.model or model_path_for(GoGame(size), self.config.weights_dir)
            info = read_model_info(path)
            models.append({
                "name": Path(path).name, "internalName": info.arch, "boardSize": size,
                "maxBatchSize": 0, "usesHumanSLProfile": False, "usesScore": info.has_score,
                "usesOwnership": info.has_ownership, "version": info.encoder_version, "usingFP16": False,
            })
        return models


def _lines(stdin: BinaryIO) -> Iterator[str | None]:
    """The lines of ``stdin`` as text; None for a line over `MAX_LINE` (the rest of it is skipped)."""
    while raw := stdin.readline(MAX_LINE + 1):
        if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
            while (rest := stdin.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                pass
            yield None
        else:
            yield raw.decode("utf-8", "replace")


def decode_line(line: str) -> Any:
    """The JSON value of a query line, read as KataGo reads it: NaN, Infinity and numbers past a
    double's range are refused (ValueError), as is nesting past the reader's recursion
    (RecursionError)."""
    return json.loads(line, parse_constant=_not_json, parse_float=_finite, parse_int=_finite_int)


def _internal_error(error: Exception, id: str | None) -> dict[str, Any]:
    """The error line of a bug met answering query ``id``, which is also logged on stderr."""
    print(f"klent analysis: internal error on query {id!r}: {error!r}", file=sys.stderr)
    return error_line(f"internal error: {type(error).__name__}: {error}", id=id)


def _not_json(constant: str) -> Any:
    """Refuses NaN and Infinity, which Python's JSON reader takes and KataGo's does not."""
    raise ValueError(f"{constant} is not a JSON number")


def _finite(text: str) -> float:
    """A JSON number that a double holds: KataGo's reader refuses 1e400 (or an integer of 400
    digits), which Python's reads as inf (no answer can echo it) or as an int no float holds."""
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"number out of range: {text[:20]!r}")
    return number


def _finite_int(text: str) -> int:
    """A JSON integer within a double's range (`_finite`)."""
    _finite(text)
    return int(text)


def _too_deep(value: Any) -> bool:
    """Whether arrays and objects nest deeper than `MAX_NESTING` in ``value``.  The JSON reader
    takes about 1,000 levels, which an action's echo, written from deeper in the call stack,
    cannot; walked level by level, without recursion."""
    level = [value]
    for _ in range(MAX_NESTING + 1):
        level = [child for item in level if isinstance(item, (list, dict))
                 for child in (item.values() if isinstance(item, dict) else item)]
        if not level:
            return False
    return True
