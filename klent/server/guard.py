"""The ASGI middleware around every request: the body's size and read-time limits and the
request metrics (docs/http.md, "Limits")."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
from fastapi import HTTPException
from fastapi.responses import JSONResponse

from klent.server import metrics as metrics_module


class _BodyTooLarge(HTTPException):
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body larger than {limit} bytes")


class _BodyTooSlow(HTTPException):
    def __init__(self, seconds: float) -> None:
        super().__init__(408, f"request body not received within {seconds:g} s", headers={"Connection": "close"})


class RequestGuard:
    """ASGI middleware: body size and read-time limits and request metrics, around everything
    else.  (The headers' read timeout is the connection's: `klent.server.connections`.)"""

    def __init__(
        self, app: Any, max_body_bytes: int, read_timeout: float, metrics: metrics_module.ServerMetrics
    ) -> None:
        self.app = app
        self.limit = max_body_bytes
        self.read_timeout = read_timeout
        self.metrics = metrics

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        body_deadline = time.monotonic() + self.read_timeout
        body_complete = False
        status = 500
        received = 0

        async def send_counting(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        async def receive_limited() -> dict[str, Any]:
            nonlocal received, body_complete
            if body_complete:  # what follows the body is the disconnect, whenever it comes
                return await receive()
            try:
                with anyio.fail_after(max(0.0, body_deadline - time.monotonic())):
                    message = await receive()
            except TimeoutError:
                raise _BodyTooSlow(self.read_timeout) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:  # chunked bodies have no Content-Length to check
                    raise _BodyTooLarge(self.limit)
                body_complete = not message.get("more_body", False)
            return message

        try:
            with self.metrics.in_flight.track_inprogress():
                length = dict(scope["headers"]).get(b"content-length")
                if length is not None and not length.isdigit():
                    response = JSONResponse({"detail": "invalid Content-Length header"}, 400)
                    await response(scope, receive, send_counting)
                elif length is not None and int(length) > self.limit:
                    response = JSONResponse({"detail": f"request body larger than {self.limit} bytes"}, 413)
                    await response(scope, receive, send_counting)
                else:
                    await self.app(scope, receive_limited, send_counting)
        finally:
            route = scope.get("route")
            label = getattr(route, "path", "unmatched")
            self.metrics.requests.labels(method=scope["method"], route=label, status=str(status)).inc()
            self.metrics.latency.labels(route=label).observe(time.perf_counter() - start)
