"""The lichess Bot API client: one method per endpoint, over one HTTP client with the fault policy.

This module is all the bridge knows of lichess's network side; the game loop
(`klent.protocols.lichess`) calls its methods and never builds a URL.  Every endpoint is a row of
`ENDPOINTS` (https://lichess.org/api), and every URL is made in `LichessClient._route`, which
quotes the ids it is given, so an id from the event stream cannot reach another endpoint.

A bot author hands the client a real account token, so it is written to be trusted:

* the token lives in one header of one HTTP client; it is never logged, and every error text
  that could echo a request or a response goes through `redact` first, before it is cut to
  length; `redact` also masks the token's escaped forms and any piece of it long enough to
  matter (a text cut short by whoever echoed it);
* a token that is not an RFC 6750 bearer token (``token68``: letters, digits and ``-._~+/``,
  then ``=`` padding) is refused at start-up, without being shown: one with a newline or a
  space inside would reach the HTTP library, whose error prints the header escaped;
* an HTTP 429 silences *all* requests of the client for at least a minute (lichess's rule);
  a 5xx or a transport error is retried with backoff;
* the account's event stream and each game's stream are NDJSON over long-lived responses that
  lichess drops at will: a stream that breaks or cannot open for a passing reason raises
  `StreamDropped`, and the caller reconnects.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from urllib.parse import quote

import httpx

from klent.engine.files import parse_json
from klent.protocols.lichess_config import BotConfig

log = logging.getLogger("klent.lichess")

# name -> (HTTP method, path); path fields are filled by `LichessClient._path`.
ENDPOINTS: dict[str, tuple[str, str]] = {
    "account": ("GET", "/api/account"),
    "playing": ("GET", "/api/account/playing"),
    "event_stream": ("GET", "/api/stream/event"),
    "accept_challenge": ("POST", "/api/challenge/{challenge_id}/accept"),
    "decline_challenge": ("POST", "/api/challenge/{challenge_id}/decline"),
    "game_stream": ("GET", "/api/bot/game/stream/{game_id}"),
    "move": ("POST", "/api/bot/game/{game_id}/move/{move}"),
    "chat": ("POST", "/api/bot/game/{game_id}/chat"),
    "abort": ("POST", "/api/bot/game/{game_id}/abort"),
    "resign": ("POST", "/api/bot/game/{game_id}/resign"),
    "answer_draw": ("POST", "/api/bot/game/{game_id}/draw/{answer}"),
    "answer_takeback": ("POST", "/api/bot/game/{game_id}/takeback/{answer}"),
    "claim_victory": ("POST", "/api/bot/game/{game_id}/claim-victory"),
}

Event = dict[str, Any]


class LichessError(Exception):
    """A request lichess refused (4xx other than 429), or retries exhausted; text is redacted."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class StreamDropped(Exception):
    """A stream ended or broke before its natural end: reconnect."""


# RFC 6750's b64token (RFC 7235's token68): what an ``Authorization: Bearer`` credential may hold.
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
# The shortest piece of a token that `redact` masks on its own: a text cut in the middle of the
# token shows a piece of it; a piece shorter than this says too little about it to matter, and
# masking it would mask ordinary words.
MIN_PIECE = 6


def check_token(token: str) -> None:
    """ValueError, which never shows the token, unless it is a bearer token (`_TOKEN68`)."""
    if not _TOKEN68.fullmatch(token):
        raise ValueError(
            "the lichess token holds a character a bearer token cannot (whitespace, a control "
            "character, or other punctuation than -._~+/=); copy it again from lichess.org/account/oauth/token"
        )


def redact(text: str, secret: str) -> str:
    """``text`` with ``secret`` masked as ``<token>`` (error texts may echo headers): see `redaction`."""
    return redaction(secret).sub("<token>", text) if secret else text


def redaction(secret: str) -> re.Pattern[str]:
    """What `redact` masks: ``secret``, its escaped forms (Python's repr, JSON, URL quoting),
    and each piece of one of them that starts or ends it and is at least `MIN_PIECE` characters
    long (what is left of it in a text cut short); longer pieces first, so that a whole form is
    masked as one."""
    forms = {secret, repr(secret)[1:-1], json.dumps(secret)[1:-1], quote(secret, safe="")}
    pieces: set[str] = set()
    for form in forms:
        for length in range(min(MIN_PIECE, len(form)), len(form) + 1):
            pieces.update((form[:length], form[-length:]))
    return re.compile("|".join(re.escape(piece) for piece in sorted(pieces, key=len, reverse=True)))


class LichessClient:
    """The Bot API endpoints the bridge uses, with the fault policy of the module docstring.

    ``sleep`` is how the client waits out a 429 and between retries; tests replace it to check
    the requested waits without spending them.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        config: BotConfig,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        check_token(token)
        self._token = token
        self._redaction = redaction(token)
        self._network = config.network
        self._sleep = sleep
        self._gate = threading.Lock()  # held while waiting out a 429: every request queues on it
        timeout = httpx.Timeout(connect=10.0, read=self._network.timeout, write=10.0, pool=None)
        self._http = httpx.Client(
            base_url=base_url,
            headers={"Authorization": f"Bearer {token}", "User-Agent": "klent-lichess-bridge"},
            timeout=timeout,
        )

    def __repr__(self) -> str:
        return f"LichessClient({self._http.base_url!s})"

    def close(self) -> None:
        self._http.close()

    def redact(self, text: str) -> str:
        return self._redaction.sub("<token>", text)

    # --- the account ----------------------------------------------------------------------

    def account(self) -> dict[str, Any]:
        """The bot account's profile (``id``, ``username``)."""
        return self._call("account")

    def playing(self) -> list[dict[str, Any]]:
        """The games the account is playing now (each with its ``gameId``)."""
        return list(self._call("playing").get("nowPlaying", []))

    def event_stream(self) -> AbstractContextManager[Iterator[Event | None]]:
        """The account's events (challenges, game starts and ends); see `_stream`."""
        return self._stream("event_stream")

    def accept_challenge(self, challenge_id: str) -> None:
        self._call("accept_challenge", challenge_id=challenge_id)

    def decline_challenge(self, challenge_id: str, reason: str) -> None:
        """Decline with one of lichess's reason keys ("later", "tooFast", "noBot", ...)."""
        self._call("decline_challenge", {"reason": reason}, challenge_id=challenge_id)

    # --- one game -------------------------------------------------------------------------

    def game_stream(self, game_id: str) -> AbstractContextManager[Iterator[Event | None]]:
        """A game's events: ``gameFull`` first (also on each reconnection), then ``gameState``,
        ``chatLine``, ``opponentGone``; see `_stream`."""
        return self._stream("game_stream", game_id=game_id)

    def move(self, game_id: str, move: str) -> None:
        """Play ``move`` (UCI text)."""
        self._call("move", game_id=game_id, move=move)

    def chat(self, game_id: str, text: str, room: str = "player") -> None:
        self._call("chat", {"room": room, "text": text}, game_id=game_id)

    def abort(self, game_id: str) -> None:
        self._call("abort", game_id=game_id)

    def resign(self, game_id: str) -> None:
        self._call("resign", game_id=game_id)

    def answer_draw(self, game_id: str, accept: bool) -> None:
        self._call("answer_draw", game_id=game_id, answer="yes" if accept else "no")

    def answer_takeback(self, game_id: str, accept: bool) -> None:
        self._call("answer_takeback", game_id=game_id, answer="yes" if accept else "no")

    def claim_victory(self, game_id: str) -> None:
        """Claim the win once lichess says the opponent has been gone long enough."""
        self._call("claim_victory", game_id=game_id)

    # --- transport ------------------------------------------------------------------------

    @staticmethod
    def _route(endpoint: str, fields: dict[str, str]) -> tuple[str, str]:
        """The method and path of ``endpoint``, its fields filled in, each quoted as one path segment."""
        method, template = ENDPOINTS[endpoint]
        return method, template.format(**{name: quote(value, safe="") for name, value in fields.items()})

    def _call(self, endpoint: str, data: dict[str, str] | None = None, **fields: str) -> Any:
        """JSON answer of one request, after waiting out 429s and retrying 5xx/transport faults."""
        method, path = self._route(endpoint, fields)
        delay = self._network.backoff_base
        last = ""
        for _ in range(self._network.retries):
            self._wait_gate()
            try:
                response = self._http.request(method, path, data=data)
            except httpx.TransportError as error:
                last = f"{type(error).__name__}: {error}"
            else:
                if response.status_code == 429:
                    self._rate_limited(f"{method} {path}")
                    continue
                if response.status_code < 500:
                    return self._json(response, method, path)
                last = f"HTTP {response.status_code}"
            log.warning("%s %s failed (%s); retrying in %.1f s", method, path, self.redact(last), delay)
            self._sleep(delay)
            delay = min(2 * delay, self._network.backoff_max)
        raise LichessError(self.redact(f"{method} {path}: gave up after {self._network.retries} attempts: {last}"))

    @contextmanager
    def _stream(self, endpoint: str, **fields: str) -> Iterator[Iterator[Event | None]]:
        """Open an NDJSON stream: yields an iterator of events, None for each keep-alive line.

        Raises `StreamDropped` when the stream cannot be opened for a passing reason (429,
        5xx, transport error) or breaks while read, `LichessError` on a refusal (4xx).
        """
        method, path = self._route(endpoint, fields)
        self._wait_gate()
        try:
            with self._http.stream(method, path) as response:
                if response.status_code == 429:
                    self._rate_limited(f"{method} {path}")
                    raise StreamDropped(f"{method} {path}: HTTP 429")
                if response.status_code >= 500:
                    raise StreamDropped(f"{method} {path}: HTTP {response.status_code}")
                if response.status_code >= 400:
                    response.read()
                    raise self._refusal(response, method, path)
                yield self._events(response)
        except httpx.TransportError as error:
            raise StreamDropped(self.redact(f"{method} {path}: {type(error).__name__}: {error}")) from None

    def _events(self, response: httpx.Response) -> Iterator[Event | None]:
        for line in response.iter_lines():
            line = line.strip()
            if not line:
                yield None
                continue
            try:
                yield parse_json(line)
            except ValueError as error:  # not JSON, nested too deeply, an integer of 4,300+ digits
                log.warning("ignoring a malformed stream line (%s): %s", str(error)[:80], self.redact(line)[:200])

    def _wait_gate(self) -> None:
        with self._gate:
            pass

    def _rate_limited(self, what: str) -> None:
        wait = self._network.rate_limit_wait
        log.warning("%s: HTTP 429 (rate limited); pausing all requests for %.0f s", what, wait)
        with self._gate:
            self._sleep(wait)

    def _json(self, response: httpx.Response, method: str, path: str) -> Any:
        if response.status_code >= 400:
            raise self._refusal(response, method, path)
        try:
            return response.json()
        except ValueError:
            return {}

    def _refusal(self, response: httpx.Response, method: str, path: str) -> LichessError:
        body = self.redact(response.text)[:300].replace("\n", " ")  # masked before it is cut
        return LichessError(f"{method} {path}: HTTP {response.status_code}: {body}", status=response.status_code)
