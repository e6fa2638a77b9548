"""Server metrics in the Prometheus text exposition format (version 0.0.4).

The server needs four kinds of figures (requests, their latency, network batch sizes and
evaluations per second) and nothing else of a metrics library, so this module writes the text
format itself instead of adding a dependency: counters, gauges and histograms with labels,
thread-safe because decisions run in worker threads and batches in the batching thread.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)

LabelValues = tuple[str, ...]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _format_labels(names: Sequence[str], values: Sequence[str], extra: str = "") -> str:
    parts = [f'{name}="{_escape(value)}"' for name, value in zip(names, values)]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


def _format_number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


class _Metric:
    """A named family of samples, one per combination of label values."""

    kind = ""

    def __init__(self, name: str, help_text: str, labels: Sequence[str] = ()) -> None:
        self.name = name
        self.help = help_text
        self.label_names = tuple(labels)
        self._lock = threading.Lock()

    def _key(self, labels: dict[str, str]) -> LabelValues:
        if set(labels) != set(self.label_names):
            raise ValueError(f"{self.name} takes labels {self.label_names}, got {tuple(labels)}")
        return tuple(str(labels[name]) for name in self.label_names)

    def render(self) -> list[str]:
        return [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}", *self._samples()]

    def _samples(self) -> list[str]:
        raise NotImplementedError


class Counter(_Metric):
    """A value that only goes up (requests served, positions evaluated)."""

    kind = "counter"

    def __init__(self, name: str, help_text: str, labels: Sequence[str] = ()) -> None:
        super().__init__(name, help_text, labels)
        self._values: dict[LabelValues, float] = {}

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        key = self._key(labels)
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, **labels: str) -> float:
        with self._lock:
            return self._values.get(self._key(labels), 0.0)

    def _samples(self) -> list[str]:
        with self._lock:
            items = sorted(self._values.items())
        return [f"{self.name}{_format_labels(self.label_names, k)} {_format_number(v)}" for k, v in items]


class Gauge(_Metric):
    """A value that goes up and down, or one computed when the metrics are read."""

    kind = "gauge"

    def __init__(
        self,
        name: str,
        help_text: str,
        labels: Sequence[str] = (),
        read: Callable[[], dict[LabelValues, float]] | None = None,
    ) -> None:
        super().__init__(name, help_text, labels)
        self._values: dict[LabelValues, float] = {}
        self._read = read

    def add(self, amount: float, **labels: str) -> None:
        key = self._key(labels)
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, **labels: str) -> float:
        with self._lock:
            return self._values.get(self._key(labels), 0.0)

    def _samples(self) -> list[str]:
        if self._read is not None:
            items = sorted(self._read().items())
        else:
            with self._lock:
                items = sorted(self._values.items())
        return [f"{self.name}{_format_labels(self.label_names, k)} {_format_number(v)}" for k, v in items]


class Histogram(_Metric):
    """Counts of observations per bucket, plus their sum and count (latencies, batch sizes)."""

    kind = "histogram"

    def __init__(
        self, name: str, help_text: str, buckets: Sequence[float], labels: Sequence[str] = ()
    ) -> None:
        super().__init__(name, help_text, labels)
        self.buckets = tuple(sorted(float(b) for b in buckets))
        # Per label values: [count per bucket (not cumulative) + overflow, sum, count].
        self._data: dict[LabelValues, tuple[list[int], list[float]]] = {}

    def observe(self, value: float, **labels: str) -> None:
        key = self._key(labels)
        index = next((i for i, bound in enumerate(self.buckets) if value <= bound), len(self.buckets))
        with self._lock:
            counts, totals = self._data.setdefault(key, ([0] * (len(self.buckets) + 1), [0.0, 0.0]))
            counts[index] += 1
            totals[0] += value
            totals[1] += 1

    def count(self, **labels: str) -> int:
        with self._lock:
            data = self._data.get(self._key(labels))
            return 0 if data is None else int(data[1][1])

    def sum(self, **labels: str) -> float:
        with self._lock:
            data = self._data.get(self._key(labels))
            return 0.0 if data is None else data[1][0]

    def _samples(self) -> list[str]:
        with self._lock:
            items = sorted((k, (list(c), list(t))) for k, (c, t) in self._data.items())
        lines = []
        for key, (counts, (total, count)) in items:
            cumulative = 0
            for bound, bucket_count in zip((*self.buckets, math.inf), counts):
                cumulative += bucket_count
                le = f'le="{_format_number(bound)}"'
                lines.append(
                    f"{self.name}_bucket{_format_labels(self.label_names, key, le)} {cumulative}"
                )
            labels = _format_labels(self.label_names, key)
            lines.append(f"{self.name}_sum{labels} {_format_number(total)}")
            lines.append(f"{self.name}_count{labels} {_format_number(count)}")
        return lines


class RateWindow:
    """Events per second over the last ``window`` seconds, per label value.

    Prometheus derives rates from counters itself (``rate(klent_network_evaluations_total[1m])``);
    this gauge is for people reading /metrics directly.
    """

    def __init__(self, window: float = 10.0) -> None:
        self.window = window
        self._events: dict[LabelValues, deque[tuple[float, int]]] = {}
        self._lock = threading.Lock()

    def add(self, amount: int, key: LabelValues) -> None:
        now = time.monotonic()
        with self._lock:
            events = self._events.setdefault(key, deque())
            events.append((now, amount))
            self._trim(events, now)

    def rates(self) -> dict[LabelValues, float]:
        now = time.monotonic()
        with self._lock:
            for events in self._events.values():
                self._trim(events, now)
            return {key: sum(n for _, n in events) / self.window for key, events in self._events.items()}

    def _trim(self, events: deque[tuple[float, int]], now: float) -> None:
        while events and events[0][0] < now - self.window:
            events.popleft()


class ServerMetrics:
    """Every metric the server exports, and the /metrics text."""

    def __init__(self) -> None:
        self.requests = Counter(
            "klent_http_requests_total", "HTTP requests answered.", ("method", "route", "status")
        )
        self.latency = Histogram(
            "klent_http_request_duration_seconds",
            "Time from request to response.",
            LATENCY_BUCKETS,
            ("route",),
        )
        self.in_flight = Gauge("klent_http_requests_in_flight", "Requests being answered now.")
        self.batch_size = Histogram(
            "klent_network_batch_size",
            "Positions per network call after merging concurrent requests.",
            BATCH_SIZE_BUCKETS,
            ("game",),
        )
        self.batch_seconds = Histogram(
            "klent_network_batch_seconds", "Time of one network call.", LATENCY_BUCKETS, ("game",)
        )
        self.evaluations = Counter(
            "klent_network_evaluations_total", "Positions evaluated by the network.", ("game",)
        )
        self._recent = RateWindow()
        self.evaluations_per_second = Gauge(
            "klent_network_evaluations_per_second",
            f"Positions evaluated per second over the last {self._recent.window:g} s.",
            ("game",),
            read=self._recent.rates,
        )
        self._all: list[_Metric] = [
            self.requests,
            self.latency,
            self.in_flight,
            self.batch_size,
            self.batch_seconds,
            self.evaluations,
            self.evaluations_per_second,
        ]

    def record_batch(self, game: str, positions: int, seconds: float) -> None:
        """Called by the batching evaluator after each network call."""
        self.batch_size.observe(positions, game=game)
        self.batch_seconds.observe(seconds, game=game)
        self.evaluations.inc(positions, game=game)
        self._recent.add(positions, (game,))

    def render(self) -> str:
        lines: list[str] = []
        for metric in self._all:
            lines += metric.render()
        return "\n".join(lines) + "\n"
