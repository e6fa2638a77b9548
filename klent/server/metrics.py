"""Server metrics for Prometheus, counted and written out by ``prometheus_client``.

This module only names the server's figures (requests, their latency, the worker threads in
use, network batch sizes and evaluations) and keeps them in a registry of the app's own rather than the library's global
one, so that several apps in one process (the tests) do not collide on metric names.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
RATE_WINDOW = 10.0  # seconds


class RecentRate(Collector):
    """A gauge of events per second over the last ``window`` seconds, per game.

    Prometheus derives rates from counters itself (``rate(klent_network_evaluations_total[1m])``);
    this gauge is for people reading /metrics directly.  The library has no windowed rate, and a
    callback gauge (``Gauge.set_function``) takes no labels, hence this collector, which computes
    the rates when the metrics are read.
    """

    def __init__(self, name: str, documentation: str, window: float) -> None:
        self.name = name
        self.documentation = documentation
        self.window = window
        self._events: dict[str, deque[tuple[float, int]]] = {}
        self._lock = threading.Lock()

    def add(self, game: str, amount: int) -> None:
        now = time.monotonic()
        with self._lock:
            events = self._events.setdefault(game, deque())
            events.append((now, amount))
            self._trim(events, now)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = time.monotonic()
        family = GaugeMetricFamily(self.name, self.documentation, labels=("game",))
        with self._lock:
            for game, events in sorted(self._events.items()):
                self._trim(events, now)
                family.add_metric((game,), sum(n for _, n in events) / self.window)
        yield family

    def _trim(self, events: deque[tuple[float, int]], now: float) -> None:
        while events and events[0][0] < now - self.window:
            events.popleft()


class ServerMetrics:
    """Every metric the server exports, in one registry per app."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "klent_http_requests_total",
            "HTTP requests answered.",
            ("method", "route", "status"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "klent_http_request_duration_seconds",
            "Time from request to response.",
            ("route",),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "klent_http_requests_in_flight", "Requests being answered now.", registry=self.registry
        )
        self.working = Gauge(
            "klent_requests_working",
            "Requests holding a worker thread now, by lane (search, cheap).",
            ("lane",),
            registry=self.registry,
        )
        self.batch_size = Histogram(
            "klent_network_batch_size",
            "Positions per network call after merging concurrent requests.",
            ("game",),
            buckets=BATCH_SIZE_BUCKETS,
            registry=self.registry,
        )
        self.batch_seconds = Histogram(
            "klent_network_batch_seconds",
            "Time of one network call.",
            ("game",),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.evaluations = Counter(
            "klent_network_evaluations_total",
            "Positions evaluated by the network.",
            ("game",),
            registry=self.registry,
        )
        self.evaluations_per_second = RecentRate(
            "klent_network_evaluations_per_second",
            f"Positions evaluated per second over the last {RATE_WINDOW:g} s.",
            RATE_WINDOW,
        )
        self.registry.register(self.evaluations_per_second)

    def record_batch(self, game: str, positions: int, seconds: float) -> None:
        """Called by the batching evaluator after each network call."""
        self.batch_size.labels(game=game).observe(positions)
        self.batch_seconds.labels(game=game).observe(seconds)
        self.evaluations.labels(game=game).inc(positions)
        self.evaluations_per_second.add(game, positions)

    def exposition(self, accept: str | None) -> tuple[bytes, str]:
        """The /metrics body and its content type, in the format the ``Accept`` header asks for.

        Plain clients get the classic text format (version 0.0.4); scrapers that ask for
        OpenMetrics get it.
        """
        encode, content_type = choose_encoder(accept or "")
        return encode(self.registry), content_type
