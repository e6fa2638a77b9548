"""The HTTP connections `klent serve` accepts: uvicorn, with a timeout on reading a request.

uvicorn closes a keep-alive connection that stays idle ``timeout_keep_alive`` seconds after a
response, but it never times out a connection before a request's headers are complete: one
that is opened and sends nothing, or sends its headers a byte at a time, stays open for ever,
holding a socket and memory (once, 350 idle connections stayed open for more than 30 s).
`ReadTimeoutProtocol` closes a connection that has not completed a request's headers
``read_timeout`` seconds after it opened or after its previous response.  The body's read
timeout is the app's (`klent.server.app`), which answers 408.

uvicorn's own ``limit_concurrency`` is left unset on purpose: it counts open connections, so a
flood of idle ones would make it refuse every request, health checks included; the app's lanes
(`klent.server.admission`) bound the work instead.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

KEEP_ALIVE_SECONDS = 5  # idle time after a response before uvicorn closes the connection


class ReadTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol, closing connections that are slow to send a request's headers.

    Subclass it with a ``read_timeout`` (`with_read_timeout`): uvicorn builds one protocol per
    connection from the class and its own configuration only.
    """

    read_timeout: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request's headers are due within read_timeout

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.read_timeout, self._headers_overdue)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_overdue(self) -> None:
        self._header_timer = None
        waiting_for_headers = self.cycle is None or self.cycle.response_complete
        if waiting_for_headers and not self.transport.is_closing():
            self.transport.close()


def with_read_timeout(seconds: float) -> type[ReadTimeoutProtocol]:
    """`ReadTimeoutProtocol` with its timeout set to ``seconds``."""
    if not seconds > 0:
        raise ValueError(f"read timeout must be positive, got {seconds}")
    return type("ReadTimeoutProtocol", (ReadTimeoutProtocol,), {"read_timeout": float(seconds)})
