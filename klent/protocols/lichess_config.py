"""Configuration of the lichess bridge: a TOML file read into one validated dataclass.

The bot author states a policy once (which challenges to take, how to think, when to resign,
how to treat the network) and the bridge follows it without asking.  Every key has a default,
so an empty file is a valid configuration; an unknown key or a bad value is a one-line
`ValueError` naming the key (`klent.engine.settings`, as for training configs), because a typo in a
bot's config should stop it before it plays with a real account, not be silently ignored.  The
token is deliberately *not* a setting: it comes from the environment only (`TOKEN_VARIABLE`), so
a config file can be shared safely.
"""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator

from klent.engine.settings import Bool, Float, Int, Str, key_path, one_line, read_toml, section

TOKEN_VARIABLE = "LICHESS_BOT_TOKEN"
DEFAULT_BASE_URL = "https://lichess.org"
MIN_RATE_LIMIT_WAIT = 60.0  # lichess asks clients to wait a full minute after an HTTP 429

Seconds = Annotated[Float, Field(ge=0)]
Positive = Annotated[Float, Field(gt=0)]
Count = Annotated[Int, Field(ge=1)]


@section
class ChallengePolicy:
    """Which challenges are accepted; the others are declined with lichess's reason."""

    variants: tuple[Literal["standard", "fromPosition"], ...] = ("standard",)  # what `ChessGame.from_fen` plays
    min_base: Seconds = 60.0  # seconds of initial clock
    max_base: Seconds = 1800.0
    min_increment: Seconds = 0.0  # seconds added per move
    max_increment: Seconds = 30.0
    accept_rated: Bool = True
    accept_casual: Bool = True
    accept_bots: Bool = True
    accept_humans: Bool = True
    allow_list: tuple[Str, ...] = ()  # lichess user ids (lower case); empty: everyone
    block_list: tuple[Str, ...] = ()

    def __post_init__(self) -> None:
        if self.min_base > self.max_base or self.min_increment > self.max_increment:
            raise ValueError("[challenge] needs min_base <= max_base and min_increment <= max_increment")


@section
class EngineSettings:
    """How moves are chosen: the model and the search budget (time comes from the clock)."""

    model: Str | None = None  # ONNX path; None: the shipped weights/chess.onnx
    mode: Literal["search", "reactive"] = "search"  # reactive: one network call per move
    simulations: Count = 800  # cap on the simulations of one move
    move_overhead: Seconds = 0.5  # seconds of network lag assumed per move
    threads: Count | None = None  # onnxruntime threads per game
    device: Str = "auto"  # klent.engine.player.DEVICE_CHOICES: where the network runs

    def __post_init__(self) -> None:
        from klent.engine.player import DEVICE_CHOICES, MAX_THREADS  # onnxruntime, only once a config is read

        if self.device not in DEVICE_CHOICES:
            raise ValueError(f"[engine] device must be one of {list(DEVICE_CHOICES)}, got {self.device!r}")
        if self.threads is not None and self.threads > MAX_THREADS:
            raise ValueError(f"[engine] threads must be <= {MAX_THREADS}, not {self.threads}")


@section
class GamePolicy:
    """Conduct during a game."""

    max_games: Count = 1  # games played at the same time
    greeting: Str = "Hi! I am {bot}, a klent engine. Good luck!"
    goodbye: Str = "Good game!"
    accept_draws: Bool = False
    accept_takebacks: Bool = False
    # The engine's value (side to move) at or below which we are lost.
    resign_value: Annotated[Float, Field(ge=-1, le=1)] = -0.95
    resign_moves: Annotated[Int, Field(ge=0)] = 3  # consecutive lost evaluations before resigning; 0 never resigns
    abort_after: Positive = 30.0  # seconds to wait for the opponent's first move before aborting
    on_shutdown: Literal["finish", "resign"] = "finish"  # the games in progress at shutdown


@section
class NetworkPolicy:
    """Behaviour on network faults."""

    backoff_base: Positive = 1.0  # first reconnection delay, doubled at each failure
    backoff_max: Positive = 60.0
    # Seconds of silence after an HTTP 429 (lichess's rule: at least a minute).
    rate_limit_wait: Annotated[Float, Field(ge=MIN_RATE_LIMIT_WAIT)] = MIN_RATE_LIMIT_WAIT
    retries: Count = 5  # attempts of a request answered by a 5xx or a transport error
    timeout: Positive = 30.0  # seconds without a byte (lichess streams send keep-alives)

    def __post_init__(self) -> None:
        if self.backoff_base > self.backoff_max:
            raise ValueError("[network] needs backoff_base <= backoff_max")


@section
class BotConfig:
    """A whole bot configuration: which lichess server, and the four policies above."""

    base_url: Str = DEFAULT_BASE_URL
    challenge: ChallengePolicy = field(default_factory=ChallengePolicy)
    engine: EngineSettings = field(default_factory=EngineSettings)
    game: GamePolicy = field(default_factory=GamePolicy)
    network: NetworkPolicy = field(default_factory=NetworkPolicy)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, got {url!r}")
        return url.rstrip("/")


def load_config(path: str | Path) -> BotConfig:
    """Read and validate a bot configuration file (see bot.example.toml)."""
    return config_from_dict(read_toml(path), source=str(path))


def config_from_dict(data: dict[str, Any], source: str = "config") -> BotConfig:
    """A validated `BotConfig` from parsed TOML (tables ``challenge``, ``engine``, ...)."""
    try:
        return BotConfig(**data)
    except ValidationError as error:
        raise ValueError(f"{source}: {one_line(error, _toml_key)}") from None


def _toml_key(loc: tuple[int | str, ...]) -> str:
    """A location in a `BotConfig` as the TOML file names it: ``[game] max_games``."""
    return f"[{loc[0]}] {key_path(loc[1:])}" if len(loc) > 1 else key_path(loc)
