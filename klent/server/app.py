"""The HTTP/JSON API and the web page (FastAPI).

Every request that asks the engine something plays in a worker thread with a fresh `Player`
(players of a game share one `klent.server.batching.BatchingEvaluator`, which merges the network
calls of concurrent requests into one batch), so requests never share a position.  The routes,
their JSON, errors and limits: docs/http.md.
"""

from __future__ import annotations

import asyncio
import hmac
import importlib.metadata
import logging
import math
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from klent.engine.games.base import IllegalMoveError
from klent.engine.network import ModelOutputError
from klent.engine.player import DEFAULT_WEIGHTS_DIR, Decision, Player, PlayOptions, ShapeWeights, load_td_weights
from klent.protocols.katago_answer import analyse_turn
from klent.protocols.katago_query import (
    QueryError,
    Turn,
    error_line,
    parse_query,
    query_id,
    warning_lines,
)
from klent.server import metrics as metrics_module
from klent.server.admission import Lane, stop_on_disconnect
from klent.server.batching import EvaluatorClosedError
from klent.server.guard import RequestGuard
from klent.server.models import ModelRegistry, ServedModel
from klent.server.positions import PositionError, describe, parse_position, result_text
from klent.server.schemas import (
    AnalyzeRequest,
    AnalyzeResponse,
    ErrorOut,
    KataGoQuery,
    ModelOut,
    ModelsResponse,
    MoveRequest,
    MoveResponse,
    MoveStatOut,
    MoveValue,
    PositionOut,
    PositionRequest,
    SearchOut,
)

log = logging.getLogger("klent.server")

STATIC_DIR = Path(__file__).resolve().parent / "static"
API_KEYS_ENV = "KLENT_API_KEYS"

T = TypeVar("T")


def api_keys_from_env(environ: Mapping[str, str] = os.environ) -> frozenset[str]:
    """The keys in ``KLENT_API_KEYS`` (comma-separated; empty or unset: no keys required)."""
    return frozenset(key.strip() for key in environ.get(API_KEYS_ENV, "").split(",") if key.strip())


@dataclass(frozen=True)
class ServerConfig:
    """What `klent serve` configures.  Times are in seconds."""

    models_dir: Path = DEFAULT_WEIGHTS_DIR
    default_simulations: int = 200
    max_simulations: int = 2000
    max_time: float = 30.0
    max_body_bytes: int = 256 * 1024
    read_timeout: float = 10.0
    max_concurrency: int = 64  # cheap requests (no search) at once
    max_searches: int = 32
    max_batch: int = 64
    batch_wait: float = 0.005
    threads: int | None = None
    precision: str = "float32"  # "int8": each model's quantized sibling (`klent.server.models`)
    device: str = "auto"  # klent.engine.network.DEVICE_CHOICES: where the models run
    api_keys: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if not 1 <= self.default_simulations <= self.max_simulations:
            raise ValueError("need 1 <= default simulations <= max simulations")
        if not all(0 < value < math.inf for value in (self.max_time, self.read_timeout, self.max_body_bytes)):
            raise ValueError("max time, read timeout and max body size must be positive and finite")
        if not 0 <= self.batch_wait < math.inf:
            raise ValueError("batch wait must be a finite number of seconds >= 0")
        if self.max_concurrency < 1 or self.max_searches < 1:
            raise ValueError("max concurrency and max searches must be at least 1")


def create_app(config: ServerConfig, registry: ModelRegistry | None = None) -> FastAPI:
    """The application.  Models are loaded here (errors surface before serving starts)."""
    metrics = metrics_module.ServerMetrics()
    if registry is None:
        registry = ModelRegistry(
            config.models_dir,
            max_batch=config.max_batch,
            max_wait=config.batch_wait,
            threads=config.threads,
            observer=metrics.record_batch,
            precision=config.precision,
            device=config.device,
        )
    service = _Service(config, registry, metrics)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # One worker thread per slot of either lane (the lanes' counts keep within it).
        service.limiter = anyio.CapacityLimiter(config.max_concurrency + config.max_searches)
        await anyio.to_thread.run_sync(service.warm_up)
        yield
        registry.close()

    app = FastAPI(
        title="klent",
        summary="A KLENT-trained board-game engine: moves and analysis for Go and chess.",
        version=_version(),
        lifespan=lifespan,
        responses={422: {"model": ErrorOut}},
    )
    app.state.service = service
    app.state.metrics = metrics
    app.add_middleware(
        RequestGuard, max_body_bytes=config.max_body_bytes, read_timeout=config.read_timeout, metrics=metrics
    )

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
        errors = [_field_error(e) for e in error.errors()]
        summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return JSONResponse({"detail": f"invalid request: {summary}", "errors": errors}, 422)

    @app.exception_handler(PositionError)
    async def position_error(request: Request, error: PositionError) -> JSONResponse:
        return JSONResponse({"detail": str(error)}, 422)

    @app.exception_handler(ModelOutputError)
    async def model_output_error(request: Request, error: ModelOutputError) -> JSONResponse:
        log.warning("%s %s: %s", request.method, request.url.path, error)
        return JSONResponse({"detail": f"the model failed on this position: {error}"}, 500)

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    # HEAD as well as GET: load balancers and uptime checkers probe with either.
    @app.head("/healthz", include_in_schema=False)
    @app.get("/healthz", tags=["operations"])
    async def healthz() -> dict[str, str]:
        """The process answers."""
        return {"status": "ok"}

    @app.head("/readyz", include_in_schema=False)
    @app.get("/readyz", tags=["operations"])
    async def readyz() -> JSONResponse:
        """Models loaded and their batching threads running."""
        if all(model.evaluator.alive for model in registry.models.values()):
            return JSONResponse({"status": "ready", "models": sorted(registry.models)})
        return JSONResponse({"status": "not ready"}, 503)

    @app.get("/metrics", tags=["operations"], response_class=PlainTextResponse)
    async def prometheus(request: Request) -> Response:
        """Prometheus text format (OpenMetrics if the scraper asks for it)."""
        body, content_type = metrics.exposition(request.headers.get("accept"))
        return Response(body, media_type=content_type)

    # The key check only where keys are configured: a dependency costs every request a pass
    # through FastAPI's dependency solver.
    guard = [Depends(service.check_key)] if config.api_keys else []
    api = APIRouter(prefix="/v1", dependencies=guard, tags=["engine"])

    @api.get("/models")
    async def models() -> ModelsResponse:
        """The games this server plays, and the model of each."""
        return ModelsResponse(
            models=[
                ModelOut(
                    game=game_id,
                    arch=model.info.arch,
                    encoder_version=model.info.encoder_version,
                    training=model.info.training,
                    num_actions=model.game.num_actions,
                    observation_shape=list(model.game.observation_shape),
                )
                for game_id, model in sorted(registry.models.items())
            ]
        )

    # The engine's answers are built as response models in the worker thread and written as
    # JSON there by pydantic (`_json`); FastAPI passes a returned Response through as it is,
    # and the routes name their models (response_model) for the API docs.
    @api.post("/{game}/move", response_model=MoveResponse)
    async def move(game: str, body: MoveRequest, request: Request) -> Response:
        """The engine's move in a position, with its evaluation and top moves."""
        model = service.model(game)
        lane = service.cheap if body.mode == "reactive" else service.searches
        return await service.run(lane, request, lambda stop: _json(service.move(model, body, stop)))

    @api.post("/{game}/analyze", response_model=AnalyzeResponse)
    async def analyze(game: str, body: AnalyzeRequest, request: Request) -> Response:
        """Every legal move's prior and action value (one network call), and a search if asked."""
        model = service.model(game)
        lane = service.searches if body.search else service.cheap
        return await service.run(lane, request, lambda stop: _json(service.analyze(model, body, stop)))

    @api.post("/{game}/position", response_model=PositionOut)
    async def position(game: str, body: PositionRequest, request: Request) -> Response:
        """The board, side to move, legal moves and result of a position (no network call)."""
        model = service.model(game)
        return await service.run(service.cheap, request, lambda stop: _json(service.position(model, body)))

    @api.post("/katago-analysis", response_model=list[dict[str, Any]])
    async def katago_analysis(body: KataGoQuery, request: Request) -> Response:
        """A query of KataGo's JSON analysis protocol, answered as `klent analysis` answers it (its
        warnings, then each turn's final answer, in the query's order); an error is KataGo's error
        object with status 422."""
        return await service.run(service.searches, request, lambda stop: service.katago_analysis(body.root, stop))

    app.include_router(api)
    return app


class _Service:
    """The request handlers' state and the work they run in worker threads."""

    def __init__(self, config: ServerConfig, registry: ModelRegistry, metrics: metrics_module.ServerMetrics) -> None:
        self.config = config
        self.registry = registry
        self.searches = Lane("search", config.max_searches, metrics.working)
        self.cheap = Lane("cheap", config.max_concurrency, metrics.working)
        self.limiter: anyio.CapacityLimiter | None = None
        self._permanent: dict[str, ShapeWeights | None] = {}  # Dyna-2's weights by game, read on first use
        self._permanent_lock = threading.Lock()

    # --- admission ----------------------------------------------------------------------------

    async def check_key(self, request: Request) -> None:
        """401 without a configured key.  A coroutine, though it never awaits: FastAPI runs a
        plain function dependency in a worker thread, a thread hop per request for a few
        string comparisons."""
        keys = self.config.api_keys
        if not keys:
            return
        header = request.headers.get("authorization", "")
        key = header[7:].strip() if header.lower().startswith("bearer ") else request.headers.get("x-api-key")
        if key is None or not any(hmac.compare_digest(key.encode(), k.encode()) for k in keys):
            raise HTTPException(
                401,
                "missing or unknown API key (send `Authorization: Bearer <key>` or `X-API-Key`)",
                headers={"WWW-Authenticate": "Bearer"},
            )

    def model(self, game: str) -> ServedModel:
        model = self.registry.get(game)
        if model is None and game in self.registry.failed:
            raise HTTPException(503, f"the model for {game} is not served: {self.registry.failed[game]}")
        if model is None:
            served = ", ".join(sorted(self.registry.models))
            raise HTTPException(404, f"no model for game {game[:40]!r}; this server plays {served}")
        return model

    async def run(self, lane: Lane, request: Request, work: Callable[[threading.Event], T]) -> T:
        """Run ``work(stop)`` in a worker thread holding a slot of ``lane`` (503 at once when
        the lane is full); for a search, ``stop`` is set if the client disconnects meanwhile.

        Only searches watch for the disconnect: the cheap lane's work (one network call or
        none) never looks at ``stop``, so a watcher would cost a task and its turns on the
        event loop for nothing (benchmarks/RESULTS.md, "int8 models": a reactive request's
        cost outside the network).
        """
        with lane.slot():
            stop = threading.Event()
            # A plain asyncio task, not a task group: a task group would wrap the work's
            # HTTPException in an ExceptionGroup.  uvicorn and the TestClient run on asyncio.
            watcher = asyncio.ensure_future(stop_on_disconnect(request, stop)) if lane is self.searches else None
            try:
                return await anyio.to_thread.run_sync(work, stop, limiter=self.limiter)
            except EvaluatorClosedError:
                raise HTTPException(503, "server shutting down", headers={"Retry-After": "1"}) from None
            finally:
                if watcher is not None:
                    watcher.cancel()

    # --- the work (worker threads) ------------------------------------------------------------

    def warm_up(self) -> None:
        """One short search per model before serving: the first request should not pay for
        compiling the search kernels and initialising ONNX Runtime.  A model that fails it
        (its outputs not finite a move away from the start) is served no more: 503."""
        for game_id, model in list(self.registry.models.items()):
            try:
                Player(model.evaluator, PlayOptions(mode="search", simulations=4)).decide()
            except ModelOutputError as error:
                log.warning("not serving %s: %s (in the warm-up search)", game_id, error)
                self.registry.fail(game_id, f"{error} (in the warm-up search)")
                continue
            if model.game.name.startswith("go"):  # and TD search's kernels
                Player(model.evaluator, PlayOptions(mode="td", simulations=2)).decide()

    def move(self, model: ServedModel, request: MoveRequest, stop: threading.Event) -> MoveResponse:
        with model.evaluator.client():
            return self._move(model, request, stop)

    def analyze(self, model: ServedModel, request: AnalyzeRequest, stop: threading.Event) -> AnalyzeResponse:
        with model.evaluator.client():
            return self._analyze(model, request, stop)

    def _move(self, model: ServedModel, request: MoveRequest, stop: threading.Event) -> MoveResponse:
        options = self._options(request, request.mode, request.top_moves, request.temperature)
        player, state = self._player(model, request, options)
        decision = self._decide(player, options, stop)
        position = None
        if request.include_position:
            position = describe(state.play(decision.action), last_move=decision.move)
        return MoveResponse(game=model.game.name, mode=request.mode, position=position, **_search_out(decision))

    def _analyze(self, model: ServedModel, request: AnalyzeRequest, stop: threading.Event) -> AnalyzeResponse:
        start = time.perf_counter()
        every_move = PlayOptions(mode="reactive", top_moves=model.game.num_actions)
        player, _ = self._player(model, request, every_move)
        reactive = self._decide(player, every_move, stop)
        search = None
        if request.search:
            options = self._options(request, "search", request.top_moves)
            search = SearchOut(**_search_out(self._decide(player, options, stop)))
        # The reactive call's ownership and score, turned to Black's view as a board is drawn.
        ownership, score = reactive.result.ownership, reactive.result.score
        black = 1.0 if player.state.to_play == 0 else -1.0
        return AnalyzeResponse(
            game=model.game.name,
            value=reactive.value,
            winrate=reactive.winrate,
            moves=[MoveValue(move=m.move, prior=m.prior, q=m.q) for m in reactive.top_moves],
            search=search,
            ownership=None if ownership is None else (ownership * black).round(4).tolist(),
            score=None if score is None else score * black,
            elapsed=time.perf_counter() - start,
        )

    def katago_analysis(self, raw: dict[str, Any], stop: threading.Event) -> JSONResponse:
        """`klent.protocols.katago_query`'s reading and analysis of a query, the same as
        `klent analysis`'s, within this server's caps (visits, time) and without reports during
        the search (HTTP answers once)."""
        sizes = sorted(int(name[2:]) for name in self.registry.models if name[:2] == "go" and name[2:].isdigit())
        try:
            query = parse_query(raw, sizes, self.config.default_simulations)
        except QueryError as error:
            return JSONResponse(error_line(str(error), error.field, query_id(raw)), 422)
        cap = self.config
        if query.max_visits > cap.max_simulations:
            message = f"maxVisits: {query.max_visits} is more than this server's limit of {cap.max_simulations}"
            return JSONResponse(error_line(message, "maxVisits", query.id), 422)
        query = replace(query, max_time=min(query.max_time or cap.max_time, cap.max_time), report_every=None)
        model = self.model(f"go{query.size}")
        answers = warning_lines(query)
        with model.evaluator.client():
            player = Player(model.evaluator, PlayOptions())
            for index in range(len(query.turns)):
                answers.append(analyse_turn(player, Turn(query, index, stop), lambda _: None, PlayOptions()))
        return JSONResponse(answers)

    def position(self, model: ServedModel, request: PositionRequest) -> PositionOut:
        parsed = parse_position(model.game, request)
        return describe(parsed.state, last_move=parsed.last_move)

    def _options(self, request: Any, mode: str, top_moves: int, temperature: float = 0.0) -> PlayOptions:
        """Play options within the server's caps (422 beyond them).

        A search always runs under a time budget (the request's or ``max_time``), so no request
        can hold a worker longer than that.
        """
        cap = self.config
        if request.simulations is not None and request.simulations > cap.max_simulations:
            raise HTTPException(
                422, f"simulations: {request.simulations} is more than this server's limit of {cap.max_simulations}"
            )
        if request.time is not None and request.time > cap.max_time:
            raise HTTPException(422, f"time: {request.time:g} s is more than this server's limit of {cap.max_time:g} s")
        simulations = request.simulations
        if simulations is None and request.time is None:
            simulations = cap.default_simulations
        return PlayOptions(
            mode=mode,  # type: ignore[arg-type]
            simulations=simulations,
            time=request.time if request.time is not None else cap.max_time,
            temperature=temperature,
            top_moves=top_moves,
        )

    def _player(self, model: ServedModel, request: PositionRequest, options: PlayOptions) -> tuple[Player, Any]:
        parsed = parse_position(model.game, request)
        if parsed.state.is_terminal:
            raise PositionError(f"the game is over ({result_text(parsed.state)}): there is no move to choose")
        permanent = self._dyna2_weights(model) if options.mode == "dyna2" else None
        try:
            player = Player(model.evaluator, options, permanent=permanent)
        except ValueError as error:  # TD search asked of a game that is not Go
            raise HTTPException(422, f"mode: {error}") from None
        # The parsed state itself, not its start and moves again: a fresh player has no tree to
        # carry over, and the state holds the history the rules and the encoding read, so
        # replaying the moves a second time would only repeat parse_position's work.
        player.set_position(parsed.state)
        return player, parsed.state

    def _dyna2_weights(self, model: ServedModel) -> ShapeWeights:
        """The permanent memory of ``model``'s game (``<game>-td.npz`` beside the models), read
        once; 422 when the server has none."""
        name = model.game.name
        with self._permanent_lock:
            if name not in self._permanent:
                try:
                    self._permanent[name] = load_td_weights(model.game, weights_dir=self.config.models_dir)
                except (FileNotFoundError, ValueError):
                    self._permanent[name] = None
            weights = self._permanent[name]
        if weights is None:
            raise HTTPException(422, f"mode: this server has no Dyna-2 weights for {name}")
        return weights

    @staticmethod
    def _decide(player: Player, options: PlayOptions, stop: threading.Event) -> Decision:
        """``stop`` ends a search early (reactive play is one network call and ignores it)."""
        try:
            return player.decide(options, stop=stop)
        except IllegalMoveError as error:  # a position with no legal move
            raise PositionError(str(error)) from None


def _json(answer: BaseModel) -> Response:
    """``answer`` as a JSON response, serialised by pydantic in one step.

    What FastAPI does with a returned model (validate it against the route's response model,
    turn it into Python lists and dicts, then ``json.dumps`` them) is three passes over the
    answer on the event loop; ``model_dump_json`` writes the same JSON in one pass, in the
    worker thread that built the answer.
    """
    return Response(answer.model_dump_json(), media_type="application/json")


def _search_out(decision: Decision) -> dict[str, Any]:
    return {
        "move": decision.move,
        "value": decision.value,
        "winrate": decision.winrate,
        "top_moves": [
            MoveStatOut(move=m.move, prior=m.prior, q=m.q, visits=m.visits, policy=m.policy)
            for m in decision.top_moves
        ],
        "pv": decision.pv,
        "simulations": decision.simulations,
        "elapsed": decision.elapsed,
    }


def _field_error(error: Mapping[str, Any]) -> dict[str, str]:
    """One pydantic error as {"field": "simulations", "message": "..."}."""
    location = [str(part) for part in error.get("loc", ()) if part != "body"]
    return {"field": ".".join(location) or "body", "message": str(error.get("msg", "invalid"))}


def _version() -> str:
    try:
        return importlib.metadata.version("klent")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
