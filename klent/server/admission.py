"""Which requests get a worker thread, and calling off the work of a client that left.

Requests that ask the engine something run in worker threads, and each thread is a slot.  A
search holds its slot for up to ``--max-time`` seconds while a reactive move, an analysis
without search or a position holds it for milliseconds, so the two kinds take their slots from
separate lanes (`Lane`): searches that fill their lane get 503 without taking anything from
the cheap requests (once, 64 long searches answered 503 to every request for 30 s).  A
lane answers 503 at once when it is full, instead of queueing without bound.

A client that disconnects no longer waits for its answer, so its search is called off:
`stop_on_disconnect` sets the search's stop flag when the server sees the connection close, and
the search ends within one network batch, freeing its slot.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import HTTPException, Request
from prometheus_client import Gauge


class Lane:
    """At most ``limit`` requests of one kind at once; more get 503 with ``Retry-After``.

    Only touched on the event loop, so the count needs no lock.  ``working`` is the gauge the
    count is exported as.
    """

    def __init__(self, name: str, limit: int, working: Gauge) -> None:
        if limit < 1:
            raise ValueError(f"the {name} lane needs at least one slot, got {limit}")
        self.name = name
        self.limit = limit
        self.active = 0
        self._gauge = working.labels(lane=name)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one slot for the block, or raise a 503 `HTTPException` when all are taken."""
        if self.active >= self.limit:
            raise HTTPException(
                503,
                f"server busy: {self.limit} {self.name} requests in progress; retry shortly",
                headers={"Retry-After": "1"},
            )
        self.active += 1
        self._gauge.inc()
        try:
            yield
        finally:
            self.active -= 1
            self._gauge.dec()


async def stop_on_disconnect(request: Request, stop: threading.Event) -> None:
    """Set ``stop`` when the client of ``request`` disconnects (run as a task, cancelled once
    the answer is ready).

    Once the body has been read, the server's next ASGI message for a request is
    ``http.disconnect``, which comes when the connection closes (or, under some servers, when
    the response is complete, by which time this task is cancelled).
    """
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            stop.set()
            return
