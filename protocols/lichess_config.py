"""Configuration of the lichess bridge: a TOML file read into one validated dataclass.

The bot author states a policy once (which challenges to take, how to think, when to resign,
how to treat the network) and the bridge follows it without asking.  Every key has a default,
so an empty file is a valid configuration; an unknown key or a bad value is a one-line
`ValueError` naming the key, because a typo in a bot's config should stop it before it plays
with a real account, not be silently ignored.  The token is deliberately *not* a setting: it
comes from the environment only (`TOKEN_VARIABLE`), so a config file can be shared safely.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

TOKEN_VARIABLE = "LICHESS_BOT_TOKEN"
DEFAULT_BASE_URL = "https://lichess.org"
SUPPORTED_VARIANTS = ("standard", "fromPosition")  # what `ChessGame.from_fen` can play
SHUTDOWN_POLICIES = ("finish", "resign")
MIN_RATE_LIMIT_WAIT = 60.0  # lichess asks clients to wait a full minute after an HTTP 429


@dataclass(frozen=True)
class ChallengePolicy:
    """Which challenges are accepted; the others are declined with lichess's reason."""

    variants: tuple[str, ...] = ("standard",)
    min_base: float = 60.0  # seconds of initial clock
    max_base: float = 1800.0
    min_increment: float = 0.0  # seconds added per move
    max_increment: float = 30.0
    accept_rated: bool = True
    accept_casual: bool = True
    accept_bots: bool = True
    accept_humans: bool = True
    allow_list: tuple[str, ...] = ()  # lichess user ids (lower case); empty: everyone
    block_list: tuple[str, ...] = ()


@dataclass(frozen=True)
class EngineSettings:
    """How moves are chosen: the model and the search budget (time comes from the clock)."""

    model: str | None = None  # ONNX path; None: the shipped weights/chess.onnx
    mode: str = "search"  # "search" or "reactive" (one network call per move)
    simulations: int = 800  # cap on the simulations of one move
    move_overhead: float = 0.5  # seconds of network lag assumed per move
    threads: int | None = None  # onnxruntime threads per game
    device: str = "auto"  # engine.network.DEVICE_CHOICES: where the network runs


@dataclass(frozen=True)
class GamePolicy:
    """Conduct during a game."""

    max_games: int = 1  # games played at the same time
    greeting: str = "Hi! I am {bot}, a klent engine. Good luck!"
    goodbye: str = "Good game!"
    accept_draws: bool = False
    accept_takebacks: bool = False
    resign_value: float = -0.95  # the engine's value (side to move) at or below which we are lost
    resign_moves: int = 3  # consecutive lost evaluations before resigning; 0 never resigns
    abort_after: float = 30.0  # seconds to wait for the opponent's first move before aborting
    on_shutdown: str = "finish"  # "finish" the games in progress or "resign" them


@dataclass(frozen=True)
class NetworkPolicy:
    """Behaviour on network faults."""

    backoff_base: float = 1.0  # first reconnection delay, doubled at each failure
    backoff_max: float = 60.0
    rate_limit_wait: float = MIN_RATE_LIMIT_WAIT  # seconds of silence after an HTTP 429
    retries: int = 5  # attempts of a request answered by a 5xx or a transport error
    timeout: float = 30.0  # seconds without a byte (lichess streams send keep-alives)


@dataclass(frozen=True)
class BotConfig:
    base_url: str = DEFAULT_BASE_URL
    challenge: ChallengePolicy = field(default_factory=ChallengePolicy)
    engine: EngineSettings = field(default_factory=EngineSettings)
    game: GamePolicy = field(default_factory=GamePolicy)
    network: NetworkPolicy = field(default_factory=NetworkPolicy)


_SECTIONS = {"challenge": ChallengePolicy, "engine": EngineSettings, "game": GamePolicy, "network": NetworkPolicy}


def load_config(path: str | Path) -> BotConfig:
    """Read and validate a bot configuration file (see bot.example.toml)."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not valid TOML: {error}") from None
    return config_from_dict(data, source=str(path))


def config_from_dict(data: dict[str, Any], source: str = "config") -> BotConfig:
    """A validated `BotConfig` from parsed TOML (tables ``challenge``, ``engine``, ...)."""
    top = dict(data)
    base_url = top.pop("base_url", DEFAULT_BASE_URL)
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise ValueError(f"{source}: base_url must be an http(s) URL, got {base_url!r}")
    sections: dict[str, Any] = {}
    for name, value in top.items():
        if name not in _SECTIONS:
            known = ", ".join(["base_url", *_SECTIONS])
            raise ValueError(f"{source}: unknown setting {name!r} (known: {known})")
        if not isinstance(value, dict):
            raise ValueError(f"{source}: [{name}] must be a table")
        sections[name] = _section(_SECTIONS[name], value, f"{source}: [{name}]")
    config = BotConfig(base_url=base_url.rstrip("/"), **sections)
    _validate(config, source)
    return config


def _section(cls: type, values: dict[str, Any], where: str) -> Any:
    known = {f.name: f for f in fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        if key not in known:
            raise ValueError(f"{where}: unknown key {key!r} (known: {', '.join(known)})")
        default = known[key].default
        if isinstance(default, tuple):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{where}: {key} must be a list of strings")
            value = tuple(value)
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                raise ValueError(f"{where}: {key} must be true or false")
        elif isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{where}: {key} must be a number")
            value = float(value)
        elif isinstance(default, int) or key == "threads":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{where}: {key} must be an integer")
        elif not isinstance(value, str):
            raise ValueError(f"{where}: {key} must be a string")
        kwargs[key] = value
    return cls(**kwargs)


def _validate(config: BotConfig, source: str) -> None:
    from engine.player import DEVICE_CHOICES

    c, e, g, n = config.challenge, config.engine, config.game, config.network
    problems = []
    bad_variants = [v for v in c.variants if v not in SUPPORTED_VARIANTS]
    if bad_variants:
        problems.append(f"[challenge] variants: unsupported {bad_variants} (supported: {list(SUPPORTED_VARIANTS)})")
    if not 0 <= c.min_base <= c.max_base:
        problems.append("[challenge] needs 0 <= min_base <= max_base")
    if not 0 <= c.min_increment <= c.max_increment:
        problems.append("[challenge] needs 0 <= min_increment <= max_increment")
    if e.mode not in ("search", "reactive"):
        problems.append(f"[engine] mode must be 'search' or 'reactive', got {e.mode!r}")
    if e.simulations < 1:
        problems.append("[engine] simulations must be >= 1")
    if e.move_overhead < 0:
        problems.append("[engine] move_overhead must be >= 0")
    if e.threads is not None and e.threads < 1:
        problems.append("[engine] threads must be >= 1")
    if e.device not in DEVICE_CHOICES:
        problems.append(f"[engine] device must be one of {list(DEVICE_CHOICES)}, got {e.device!r}")
    if g.max_games < 1:
        problems.append("[game] max_games must be >= 1")
    if not -1.0 <= g.resign_value <= 1.0:
        problems.append("[game] resign_value must be in [-1, 1]")
    if g.resign_moves < 0:
        problems.append("[game] resign_moves must be >= 0")
    if g.abort_after <= 0:
        problems.append("[game] abort_after must be > 0")
    if g.on_shutdown not in SHUTDOWN_POLICIES:
        problems.append(f"[game] on_shutdown must be one of {list(SHUTDOWN_POLICIES)}")
    if not 0 < n.backoff_base <= n.backoff_max:
        problems.append("[network] needs 0 < backoff_base <= backoff_max")
    if n.rate_limit_wait < MIN_RATE_LIMIT_WAIT:
        problems.append(f"[network] rate_limit_wait must be >= {MIN_RATE_LIMIT_WAIT:g} seconds (lichess's rule)")
    if n.retries < 1:
        problems.append("[network] retries must be >= 1")
    if n.timeout <= 0:
        problems.append("[network] timeout must be > 0")
    if problems:
        raise ValueError(f"{source}: {'; '.join(problems)}")
