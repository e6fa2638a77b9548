"""A fake lichess server for the bridge's tests: the Bot API endpoints, NDJSON streams, opponents.

It runs a FastAPI app under uvicorn in a thread on 127.0.0.1 (a free port), so the bridge talks
real HTTP with real streaming.  Tests drive it from the outside: `FakeLichess.challenge` sends a
challenge event, an `Opponent` answers the bot's moves, and faults are injected on demand
(`fail_next` answers a request with a given status, ``drop_after_bot_moves`` cuts a game stream
right after a move of the bot was applied and before its state was sent).  Everything the bot
asked for is recorded (requests, declines, chat, rejected moves) for the assertions.

The rules are python-chess's: a game ends by checkmate, stalemate, insufficient material, the
75-move rule or fivefold repetition (what lichess ends by itself), by resignation, by an agreed
draw or by an abort.  Clocks are fixed at the challenge's initial time (nothing is timed).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import parse_qs

import chess
import chess.engine
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

BOT_ID = "klentbot"
KEEPALIVE = 0.1  # seconds between keep-alive newlines (lichess: about 7)


class Opponent:
    """Plays the other side; ``offer_draw_at``/``offer_takeback_at``: the opponent's own move number."""

    title: str | None = None
    offer_draw_at: int | None = None
    offer_takeback_at: int | None = None

    def move(self, board: chess.Board) -> str:
        """A UCI move, or "resign"."""
        raise NotImplementedError

    def close(self) -> None:
        pass


@dataclass
class FirstLegal(Opponent):
    """The first legal move in python-chess's order; resigns at its move ``resign_at``."""

    resign_at: int | None = None
    offer_draw_at: int | None = None
    offer_takeback_at: int | None = None
    played: int = 0

    def move(self, board: chess.Board) -> str:
        self.played += 1
        if self.resign_at is not None and self.played >= self.resign_at:
            return "resign"
        return next(iter(board.legal_moves)).uci()


class StockfishOpponent(Opponent):
    """Stockfish at a fixed depth (deterministic): it mates a weak engine in a few dozen moves."""

    def __init__(self, path: str, depth: int = 6, offer_draw_at: int | None = None) -> None:
        self.engine = chess.engine.SimpleEngine.popen_uci(path)
        self.engine.configure({"Threads": 1})
        self.depth = depth
        self.offer_draw_at = offer_draw_at
        self.played = 0

    def move(self, board: chess.Board) -> str:
        self.played += 1
        result = self.engine.play(board, chess.engine.Limit(depth=self.depth))
        assert result.move is not None
        return result.move.uci()

    def close(self) -> None:
        self.engine.quit()


@dataclass
class FakeGame:
    id: str
    bot_white: bool
    opponent: Opponent
    initial_fen: str  # "startpos" or a FEN
    clock_ms: int
    increment_ms: int
    rated: bool = False
    board: chess.Board = field(default_factory=chess.Board)
    status: str = "started"
    winner: str | None = None
    opponent_draw: bool = False
    opponent_takeback: bool = False
    version: int = 0
    drop_after_bot_moves: set[int] = field(default_factory=set)  # cut the stream after these
    pending_drop: bool = False
    bot_moves: int = 0
    stream_connections: int = 0
    chat: list[tuple[str, str]] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)  # "draw/no", "takeback/no", "resign", ...

    @property
    def moves(self) -> list[str]:
        return [move.uci() for move in self.board.move_stack]

    @property
    def bot_to_move(self) -> bool:
        return (self.board.turn == chess.WHITE) == self.bot_white

    def state(self) -> dict:
        ours, theirs = ("w", "b") if self.bot_white else ("b", "w")
        state = {
            "type": "gameState",
            "moves": " ".join(self.moves),
            "wtime": self.clock_ms, "btime": self.clock_ms,
            "winc": self.increment_ms, "binc": self.increment_ms,
            "status": self.status,
            f"{theirs}draw": self.opponent_draw, f"{ours}draw": False,
            f"{theirs}takeback": self.opponent_takeback, f"{ours}takeback": False,
        }
        if self.winner:
            state["winner"] = self.winner
        return state

    def full(self) -> dict:
        bot = {"id": BOT_ID, "name": "KlentBot", "title": "BOT", "rating": 1500}
        human = {"id": "opponent", "name": "Opponent", "title": self.opponent.title, "rating": 1500}
        return {
            "type": "gameFull", "id": self.id, "rated": self.rated,
            "variant": {"key": "standard" if self.initial_fen == "startpos" else "fromPosition"},
            "clock": {"initial": self.clock_ms, "increment": self.increment_ms},
            "speed": "blitz",
            "white": bot if self.bot_white else human,
            "black": human if self.bot_white else bot,
            "initialFen": self.initial_fen,
            "state": self.state(),
        }

    def finish(self, status: str, winner: str | None = None) -> None:
        self.status, self.winner = status, winner
        self.version += 1

    def check_end(self) -> None:
        outcome = self.board.outcome(claim_draw=False)
        if outcome is None:
            return
        names = {chess.Termination.CHECKMATE: "mate", chess.Termination.STALEMATE: "stalemate"}
        winner = None if outcome.winner is None else ("white" if outcome.winner else "black")
        self.finish(names.get(outcome.termination, "draw"), winner)


@dataclass
class Fault:
    method: str
    prefix: str
    status: int
    count: int
    echo_auth: bool
    padding: int = 0  # characters of the error text before the echoed header


class FakeLichess:
    """The server's state plus the app; use as a context manager (`start`/`stop`)."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.lock = threading.RLock()
        self.games: dict[str, FakeGame] = {}
        self.challenges: dict[str, dict] = {}
        self.opponents: dict[str, Opponent] = {}
        self.events: list[dict] = []
        self.declines: dict[str, str] = {}
        self.requests: list[tuple[float, str, str, int]] = []  # (time, method, path, status)
        self.rejected_moves: list[tuple[str, str]] = []
        self.faults: list[Fault] = []
        self._drops: dict[str, set[int]] = {}
        self._ids = itertools.count(1)
        self._closing = False
        self.app = self._build_app()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._opponent_thread = threading.Thread(target=self._opponents_loop, daemon=True)
        self.url = ""

    # -- test-facing API -------------------------------------------------------------------

    def challenge(
        self,
        opponent: Opponent | None = None,
        variant: str = "standard",
        limit: int = 180,
        increment: int = 2,
        rated: bool = False,
        bot_white: bool = True,
        time_control: str = "clock",
        initial_fen: str | None = None,
        drop_after_bot_moves: tuple[int, ...] = (),
    ) -> str:
        """Send a challenge to the bot; returns its id (also the game's id if accepted)."""
        challenge_id = f"ch{next(self._ids):06d}"
        opponent = opponent or FirstLegal()
        clock = {"type": "clock", "limit": limit, "increment": increment, "show": f"{limit // 60}+{increment}"}
        challenge = {
            "id": challenge_id, "url": f"{self.url}/{challenge_id}", "status": "created",
            "challenger": {"id": "opponent", "name": "Opponent", "title": opponent.title, "rating": 1500},
            "destUser": {"id": BOT_ID, "name": "KlentBot", "title": "BOT", "rating": 1500},
            "variant": {"key": variant, "name": variant}, "rated": rated, "speed": "blitz",
            "timeControl": clock if time_control == "clock" else {"type": time_control},
            "color": "black" if bot_white else "white",  # the challenger's colour
        }
        if initial_fen:
            challenge["initialFen"] = initial_fen
        with self.lock:
            self.challenges[challenge_id] = challenge
            self.opponents[challenge_id] = opponent
            self._drops[challenge_id] = set(drop_after_bot_moves)
            self.events.append({"type": "challenge", "challenge": challenge})
        return challenge_id

    def start_game(self, opponent: Opponent, bot_white: bool = True, moves: list[str] = ()) -> str:
        """A game already in progress (as if started before the bot), with ``moves`` played."""
        game_id = f"gm{next(self._ids):06d}"
        game = FakeGame(game_id, bot_white, opponent, "startpos", 180_000, 2_000)
        for move in moves:
            game.board.push_uci(move)
        with self.lock:
            self.games[game_id] = game
            self.opponents[game_id] = opponent
        return game_id

    def fail_next(
        self, method: str, prefix: str, status: int, count: int = 1, echo_auth: bool = False, padding: int = 0
    ) -> None:
        """Answer the next ``count`` requests ``method`` on paths starting with ``prefix`` with
        ``status``; ``echo_auth``: the error body repeats the request's Authorization header,
        after ``padding`` characters."""
        with self.lock:
            self.faults.append(Fault(method, prefix, status, count, echo_auth, padding))

    def game(self, game_id: str) -> FakeGame:
        with self.lock:
            return self.games[game_id]

    def wait(self, condition, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if condition():
                    return
            time.sleep(0.02)
        raise AssertionError(f"condition not met within {timeout} s")

    def wait_finished(self, game_id: str, timeout: float = 30.0) -> FakeGame:
        self.wait(lambda: game_id in self.games and self.games[game_id].status != "started", timeout)
        return self.game(game_id)

    def requests_to(self, method: str, prefix: str) -> list[tuple[float, str, str, int]]:
        with self.lock:
            return [r for r in self.requests if r[1] == method and r[2].startswith(prefix)]

    # -- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> FakeLichess:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(self.app, log_level="warning", timeout_graceful_shutdown=2, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        self._opponent_thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the fake lichess server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing = True
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(timeout=10)
        for opponent in self.opponents.values():
            opponent.close()

    # -- the opponents ----------------------------------------------------------------------

    def _opponents_loop(self) -> None:
        while not self._closing:
            with self.lock:
                games = [g for g in self.games.values() if g.status == "started" and not g.bot_to_move]
            for game in games:
                reply = game.opponent.move(game.board.copy())
                with self.lock:
                    if game.status != "started" or game.bot_to_move:
                        continue
                    if reply == "resign":
                        game.finish("resign", "white" if game.bot_white else "black")
                        continue
                    game.board.push_uci(reply)
                    played = len(game.board.move_stack)
                    # the opponent's own move number (White moves at even indices from startpos)
                    number = sum(1 for i in range(played) if (i % 2 == 0) != game.bot_white)
                    game.opponent_draw = game.opponent.offer_draw_at == number
                    game.opponent_takeback = game.opponent.offer_takeback_at == number
                    game.version += 1
                    game.check_end()
            time.sleep(0.005)

    # -- the app ----------------------------------------------------------------------------

    def _build_app(self) -> FastAPI:
        app = FastAPI()
        fake = self

        @app.middleware("http")
        async def auth_faults_and_log(request: Request, call_next):
            method, path = request.method, request.url.path
            authorization = request.headers.get("authorization", "")
            status = None
            body: object = None
            with fake.lock:
                if authorization != f"Bearer {fake.token}":
                    status, body = 401, {"error": "No such token"}
                else:
                    for fault in fake.faults:
                        if fault.count > 0 and fault.method == method and path.startswith(fault.prefix):
                            fault.count -= 1
                            status = fault.status
                            echo = "x" * fault.padding + f"fault (you sent {authorization})"
                            body = {"error": echo if fault.echo_auth else "fault"}
                            break
            if status is not None:
                with fake.lock:
                    fake.requests.append((time.monotonic(), method, path, status))
                return JSONResponse(body, status_code=status)
            response = await call_next(request)
            with fake.lock:
                fake.requests.append((time.monotonic(), method, path, response.status_code))
            return response

        @app.get("/api/account")
        def account() -> dict:
            return {"id": BOT_ID, "username": "KlentBot", "title": "BOT"}

        @app.get("/api/account/playing")
        def playing() -> dict:
            with fake.lock:
                now = [
                    {"gameId": g.id, "fullId": g.id + "abcd", "color": "white" if g.bot_white else "black",
                     "fen": g.board.fen(), "isMyTurn": g.bot_to_move, "variant": {"key": "standard"}}
                    for g in fake.games.values() if g.status == "started"
                ]
            return {"nowPlaying": now}

        @app.get("/api/stream/event")
        async def event_stream() -> StreamingResponse:
            async def lines() -> AsyncIterator[bytes]:
                last = time.monotonic()
                while not fake._closing:
                    with fake.lock:
                        event = fake.events.pop(0) if fake.events else None
                    if event is not None:
                        yield (json.dumps(event) + "\n").encode()
                    elif time.monotonic() - last > KEEPALIVE:
                        last = time.monotonic()
                        yield b"\n"
                    await asyncio.sleep(0.01)

            return StreamingResponse(lines(), media_type="application/x-ndjson")

        @app.post("/api/challenge/{challenge_id}/accept")
        def accept(challenge_id: str) -> Response:
            with fake.lock:
                challenge = fake.challenges.pop(challenge_id, None)
                if challenge is None:
                    return JSONResponse({"error": "Not found"}, status_code=404)
                clock = challenge["timeControl"]
                game = FakeGame(
                    challenge_id, challenge["color"] == "black", fake.opponents[challenge_id],
                    challenge.get("initialFen", "startpos"), int(clock.get("limit", 0)) * 1000,
                    int(clock.get("increment", 0)) * 1000, challenge["rated"],
                )
                game.drop_after_bot_moves = fake._drops.pop(challenge_id, set())
                if game.initial_fen != "startpos":
                    game.board = chess.Board(game.initial_fen)
                fake.games[challenge_id] = game
                fake.events.append({"type": "gameStart", "game": {"gameId": challenge_id, "id": challenge_id}})
            return JSONResponse({"ok": True})

        @app.post("/api/challenge/{challenge_id}/decline")
        async def decline(challenge_id: str, request: Request) -> Response:
            reason = _form(await request.body()).get("reason", "generic")
            with fake.lock:
                if fake.challenges.pop(challenge_id, None) is None:
                    return JSONResponse({"error": "Not found"}, status_code=404)
                fake.declines[challenge_id] = reason
            return JSONResponse({"ok": True})

        @app.get("/api/bot/game/stream/{game_id}")
        async def game_stream(game_id: str) -> Response:
            with fake.lock:
                game = fake.games.get(game_id)
                if game is None:
                    return JSONResponse({"error": "Not found"}, status_code=404)
                game.stream_connections += 1
                first = json.dumps(game.full()) + "\n"
                seen = game.version

            async def lines() -> AsyncIterator[bytes]:
                nonlocal seen
                yield first.encode()
                last = time.monotonic()
                while not fake._closing:
                    with fake.lock:
                        if game.pending_drop:
                            game.pending_drop = False
                            return  # the connection drops: this state never reaches the bot
                        changed = game.version != seen
                        seen = game.version
                        state = json.dumps(game.state()) + "\n" if changed else None
                        over = game.status != "started"
                    if state is not None:
                        yield state.encode()
                        if over:
                            return
                    elif time.monotonic() - last > KEEPALIVE:
                        last = time.monotonic()
                        yield b"\n"
                    await asyncio.sleep(0.005)

            return StreamingResponse(lines(), media_type="application/x-ndjson")

        def bad(message: str) -> JSONResponse:
            return JSONResponse({"error": message}, status_code=400)

        @app.post("/api/bot/game/{game_id}/move/{move}")
        def move(game_id: str, move: str) -> Response:
            with fake.lock:
                game = fake.games.get(game_id)
                if game is None or game.status != "started" or not game.bot_to_move:
                    fake.rejected_moves.append((game_id, move))
                    return bad("Not your turn, or game already over")
                try:
                    game.board.push_uci(move)
                except ValueError:
                    fake.rejected_moves.append((game_id, move))
                    return bad(f"Illegal move {move}")
                game.bot_moves += 1
                game.opponent_draw = game.opponent_takeback = False
                game.version += 1
                if game.bot_moves in game.drop_after_bot_moves:
                    game.pending_drop = True
                game.check_end()
            return JSONResponse({"ok": True})

        @app.post("/api/bot/game/{game_id}/chat")
        async def chat(game_id: str, request: Request) -> Response:
            form = _form(await request.body())
            with fake.lock:
                fake.games[game_id].chat.append((form.get("room", ""), form.get("text", "")))
            return JSONResponse({"ok": True})

        @app.post("/api/bot/game/{game_id}/{action}")
        def end(game_id: str, action: str) -> Response:
            with fake.lock:
                game = fake.games.get(game_id)
                if game is None or game.status != "started":
                    return bad("game already over")
                game.answers.append(action)
                if action == "resign":
                    game.finish("resign", "black" if game.bot_white else "white")
                elif action == "abort":
                    game.finish("aborted")
                elif action == "claim-victory":
                    game.finish("timeout", "white" if game.bot_white else "black")
                else:
                    return JSONResponse({"error": "Not found"}, status_code=404)
            return JSONResponse({"ok": True})

        @app.post("/api/bot/game/{game_id}/{offer}/{answer}")
        def offer(game_id: str, offer: str, answer: str) -> Response:
            with fake.lock:
                game = fake.games.get(game_id)
                if game is None or game.status != "started" or offer not in ("draw", "takeback"):
                    return bad("no such offer")
                game.answers.append(f"{offer}/{answer}")
                if offer == "draw":
                    if answer == "yes" and game.opponent_draw:
                        game.finish("draw")
                    game.opponent_draw = False
                else:
                    if answer == "yes" and game.opponent_takeback and game.board.move_stack:
                        game.board.pop()
                    game.opponent_takeback = False
                game.version += 1
            return JSONResponse({"ok": True})

        return app


def _form(body: bytes) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(body.decode()).items()}
