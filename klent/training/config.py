"""The training configuration: what defines a run, read from TOML (see klent/training/configs/).

`TrainConfig` is the whole run; the sections that belong to one part of it are declared where
that part lives (`klent.training.selfplay.SelfPlayConfig`, `klent.training.distill.DistillConfig`) or here
(`OptimConfig`, `EvalConfig`).  Every section is a schema (`klent.engine.settings`): a wrong type,
an out-of-range number, an unknown key or a NaN fails when the file is read, as one line that
names the file and the key.  A run's checkpoint stores the config as `TrainConfig.to_dict`, so
a resume reads it back through the same checks; `config_changes` says what a resumed run may
change.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

import torch
from pydantic import Field, ValidationError

import klent.engine.games
from klent.engine.games.base import Game
from klent.engine.settings import (
    Bool,
    Float,
    Int,
    Location,
    Str,
    build_section,
    check_arguments,
    key_path,
    one_line,
    read_toml,
    section,
)
from klent.matchplay.config import go_limits
from klent.training import anchor, gateau, klent_rl
from klent.training.distill import DistillConfig
from klent.training.nets import NetConfig
from klent.training.selfplay import SelfPlayConfig

if TYPE_CHECKING:
    from klent.training.gumbel_az import GumbelAZConfig

ALGOS = ("klent", "gumbel-az", "distill")  # distill: from a teacher's labels (klent.training.distill)

# Each rank seeds its generators with seed * 1_000_003 + rank, which torch needs in 64 bits.
MAX_SEED = 2**32 - 1

# [optim] precision -> the autocast dtype of fitting (None: none).
PRECISIONS: dict[str, torch.dtype | None] = {"float32": None, "bfloat16": torch.bfloat16}

# The tables of a config file, and the keys of [net] (TrainConfig holds them at its top level).
SECTIONS = ("game_options", "net", "klent", "gumbel_az", "selfplay", "optim", "eval", "distill")
NET_KEYS = (
    "architecture", "blocks", "channels", "heads", "ownership_head", "score_head", "global_pooling", "board_sizes",
)
KLENT_KEYS = ("alpha", "beta", "lam")
# Whose policy KLENT's KL term pulls the improved policy towards: the current network's own (the
# paper's), or the network a run started from (--init), fixed for the whole run -- an anchor
# that keeps self-play near a teacher's play while the action values learn.
KL_REFERENCES = ("policy", "init")


@section
class OptimConfig:
    """Adam with the paper's learning rate; ``batch_size`` is the global minibatch and
    ``epochs`` the passes over each iteration's samples (the paper: one).  ``symmetries``
    trains each minibatch on a random image under the game's board symmetries (Go's eight;
    a no-op for games without any), a sample-efficiency lever measured in benchmarks/RESULTS.md.
    ``precision = "bfloat16"`` runs the network's passes while fitting under autocast (weights,
    optimiser state and losses stay float32): a compute lever for CPUs with AVX-512 BF16 or
    AMX and for recent GPUs, measured in benchmarks/RESULTS.md; self-play stays float32.
    ``lr_schedule`` lists ``[iteration, lr]`` steps: once a run has done that many iterations
    it fits with that learning rate (``lr`` before the first step), so a planned decay runs
    unattended and stays written in the run's config.  ``ownership_weight`` and ``score_weight``
    weigh Go's auxiliary targets (`klent.training.ownership`) where the network has those heads."""

    lr: Float = 1e-3
    lr_schedule: tuple[tuple[Int, Float], ...] = ()
    ownership_weight: Annotated[Float, Field(ge=0)] = 1.0  # of the ownership loss, for a network with that head
    score_weight: Annotated[Float, Field(ge=0)] = 1.0  # of the score loss (klent.training.ownership), likewise
    batch_size: Annotated[Int, Field(ge=1)] = 256
    epochs: Annotated[Int, Field(ge=1)] = 1
    symmetries: Bool = False
    precision: Str = "float32"

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(f"[optim] precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        iterations = [at for at, _ in self.lr_schedule]
        if any(at < 1 for at in iterations) or iterations != sorted(set(iterations)):
            raise ValueError("[optim] lr_schedule iterations must be positive and increasing")
        if any(lr <= 0 for lr in (self.lr, *(lr for _, lr in self.lr_schedule))):
            raise ValueError("[optim] learning rates must be positive")

    def lr_after(self, iterations: int) -> float:
        """The learning rate of the iteration that follows ``iterations`` done ones."""
        return next((lr for at, lr in reversed(self.lr_schedule) if iterations >= at), self.lr)

    def autocast_dtype(self) -> torch.dtype | None:
        """The dtype `fit` autocasts to, or None for plain float32."""
        return PRECISIONS[self.precision]


@section
class EvalConfig:
    """Every ``every`` iterations (0 = never): ``games`` greedy games against uniform random
    play and as many against the model of the previous evaluation, whose first
    ``opening_plies`` moves are random so that two deterministic players differ game to game.

    The anchor (`klent.training.anchor`, the KLENT paper's figure 5), when ``anchor`` names a UCI
    engine's command line: after the run's first iteration (where its curve starts) and then
    every ``anchor_every_evaluations`` simulator evaluations (the figure's x-axis, so that runs
    of different algorithms are measured at the same points however much one iteration of
    each spends), ``anchor_games`` games against it with ``anchor_options`` set and
    ``anchor_go`` as its search limit per move, from ``anchor_games / 2`` openings each played
    with both colours (``anchor_opening_plies`` random plies, or the lines of the file
    ``anchor_openings``); the model plays reactively, or with a Gumbel search of
    ``anchor_simulations`` simulations."""

    every: Annotated[Int, Field(ge=0)] = 10
    games: Annotated[Int, Field(ge=0)] = 64
    opening_plies: Annotated[Int, Field(ge=0)] = 2
    anchor: Str = ""  # e.g. "fairy-stockfish" (found on PATH); "" = no anchor evaluation
    anchor_options: dict[str, Str | Int | Bool] = field(default_factory=dict)  # {"Skill Level" = 0}
    anchor_go: Str = "depth 1"  # the anchor's ``go`` limits: depth N / nodes N / movetime N
    anchor_every_evaluations: Annotated[Int, Field(ge=1)] = 1_000_000
    anchor_games: Annotated[Int, Field(ge=2)] = 64
    anchor_opening_plies: Annotated[Int, Field(ge=0)] = 4
    anchor_openings: Str = ""
    anchor_simulations: Annotated[Int, Field(ge=0)] = 0  # 0: reactive, the paper's evaluation

    def __post_init__(self) -> None:
        if self.anchor_games % 2:
            raise ValueError(f"[eval] anchor_games must be even (each opening with both colours), "
                             f"not {self.anchor_games}")
        try:
            go_limits(self.anchor_go)
        except ValueError as error:
            raise ValueError(f"[eval] anchor_go: {error}") from None

    def anchor_due(self, before: int, after: int) -> bool:
        """Whether the anchor match follows an iteration that took the run's simulator
        evaluations from ``before`` to ``after``."""
        every = self.anchor_every_evaluations
        return bool(self.anchor) and (before == 0 or before // every < after // every)


@section
class TrainConfig:
    """Everything that defines a run; stored in its checkpoint so a resume cannot drift."""

    game: Str
    game_options: dict[str, Any] = field(default_factory=dict)  # the game's keyword arguments
    algo: Str = "klent"
    seed: Annotated[Int, Field(ge=0, le=MAX_SEED)] = 0
    iterations: Annotated[Int, Field(ge=1)] = 100  # default stop when neither --iterations nor --minutes is given
    export_every: Annotated[Int, Field(ge=1)] = 1  # latest.onnx every n iterations (always when self-play uses ONNX)
    keep_every: Annotated[Int, Field(ge=0)] = 0  # also keep a copy in snapshots/ every n iterations (0: never)
    architecture: Str = "resnet"  # "resnet" (nets.KlentNet) or "gateau" (gateau.GateauNet, chess variants)
    blocks: Annotated[Int, Field(ge=0)] = 6
    channels: Annotated[Int, Field(ge=1)] = 64
    heads: Str = "fc"  # action heads: "fc" (any game), "conv" (games with Game.action_planes), "board" (Go, any size)
    ownership_head: Bool = False  # Go's auxiliary heads (klent.training.ownership)
    score_head: Bool = False
    global_pooling: Bool = False  # KataGo's global pooling in every second block
    board_sizes: list[Int] = field(default_factory=list)  # heads = "board": the Go sizes trained and served
    preset: Str = "klent"  # KLENT ablation preset (klent.training.klent_rl.PRESETS)
    kl_reference: Str = "policy"  # [klent] kl_reference: whose policy KLENT's KL term pulls towards (KL_REFERENCES)
    klent_overrides: dict[str, Float] = field(default_factory=dict)  # alpha / beta / lam
    gumbel_az: dict[str, Any] = field(default_factory=dict)  # klent.training.gumbel_az.GumbelAZConfig
    selfplay: SelfPlayConfig = SelfPlayConfig()
    optim: OptimConfig = OptimConfig()
    eval: EvalConfig = EvalConfig()
    distill: DistillConfig = DistillConfig()
    init: Str = ""  # the checkpoint.pt whose weights a new run starts from; "" = random weights

    def __post_init__(self) -> None:
        if self.algo not in ALGOS:
            raise ValueError(f"unknown algorithm {self.algo!r}; known: {', '.join(ALGOS)}")
        if self.preset not in klent_rl.PRESETS:
            known = ", ".join(klent_rl.PRESETS)
            raise ValueError(f"unknown KLENT preset {self.preset!r}; known: {known}")
        _reject_unknown("[klent]", self.klent_overrides, KLENT_KEYS)
        if self.kl_reference not in KL_REFERENCES:
            known = ", ".join(KL_REFERENCES)
            raise ValueError(f"[klent] kl_reference must be one of {known}, not {self.kl_reference!r}")
        self.klent_config()  # validate the overrides now, not an hour into the run
        self.net_config()
        if (self.ownership_head or self.score_head) and self.algo == "gumbel-az":
            raise ValueError("ownership and score heads are trained by klent and distill runs")
        if self.algo == "gumbel-az" and self.distill.data:
            raise ValueError("[distill] data is read by distill runs, and by klent runs as a teacher for Q")
        if self.algo != "klent" and self.selfplay.resign_threshold > 0:
            raise ValueError("selfplay.resign_threshold is a KLENT option (gumbel-az never resigns)")
        self.gumbel_az_config()
        game = self.make_game()
        anchor.check_anchor(self.game, self.eval)
        if self.architecture == "gateau":
            gateau.rules_of(game)  # a graph network for a game without a move graph fails now

    def klent_config(self) -> klent_rl.KlentConfig:
        return dataclasses.replace(klent_rl.PRESETS[self.preset], **self.klent_overrides)

    def gumbel_az_config(self) -> GumbelAZConfig:
        """The ``[gumbel_az]`` settings, checked in every config (a preset may switch algo)."""
        from klent.training.gumbel_az import GumbelAZConfig  # imports klent.engine.search: only when asked

        return GumbelAZConfig.from_dict(self.gumbel_az)

    def net_config(self) -> NetConfig:
        """KLENT: policy + action values; Gumbel AlphaZero: policy + state value (table 3)."""
        return NetConfig(
            **{key: getattr(self, key) for key in NET_KEYS},
            value_head=self.algo == "gumbel-az",
            action_value_head=self.algo in ("klent", "distill"),
        )

    def make_game(self) -> Game:
        """The game with the config's ``[game_options]``: an option the game does not take, or
        a value of the wrong type, is a one-line error naming it."""
        plain = klent.engine.games.get(self.game)
        check_arguments("[game_options]", type(plain), self.game_options)
        if not self.game_options:
            return plain
        try:
            return klent.engine.games.get(self.game, **self.game_options)
        except (TypeError, ValueError) as error:  # e.g. a size given both by name and option
            raise ValueError(f"[game_options] {error}") from None

    def replace(self, **changes: Any) -> TrainConfig:
        """This config with ``changes`` (command-line overrides), checked as a file is."""
        try:
            return dataclasses.replace(self, **changes)
        except ValidationError as error:
            raise ValueError(one_line(error, _toml_key)) from None

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (the TOML layout), for checkpoints."""
        return {
            "game": self.game,
            "algo": self.algo,
            "seed": self.seed,
            "iterations": self.iterations,
            "export_every": self.export_every,
            "keep_every": self.keep_every,
            "init": self.init,
            "game_options": dict(self.game_options),
            "net": {key: getattr(self, key) for key in NET_KEYS},
            "klent": {"preset": self.preset, "kl_reference": self.kl_reference, **self.klent_overrides},
            "gumbel_az": dict(self.gumbel_az),
            "selfplay": dataclasses.asdict(self.selfplay),
            "optim": dataclasses.asdict(self.optim),
            "eval": dataclasses.asdict(self.eval),
            "distill": dataclasses.asdict(self.distill),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Inverse of `to_dict`, also the TOML reader; any mistake is a one-line ValueError."""
        data = dict(data)
        tables = {name: data.pop(name, {}) for name in SECTIONS}
        for name, table in tables.items():
            if not isinstance(table, dict):
                raise ValueError(f"[{name}] must be a table, not {table!r}")
        _reject_unknown("", data, ("game", "algo", "seed", "iterations", "export_every", "keep_every", "init"))
        if "game" not in data:
            raise ValueError("the config does not name a game (game = \"go9\")")
        _reject_unknown("[net]", tables["net"], NET_KEYS)
        klent_table = dict(tables["klent"])
        preset = klent_table.pop("preset", "klent")
        kl_reference = klent_table.pop("kl_reference", "policy")
        try:
            return cls(
                **data,
                game_options=tables["game_options"],
                **tables["net"],
                preset=preset,
                kl_reference=kl_reference,
                klent_overrides=klent_table,
                gumbel_az=tables["gumbel_az"],
                selfplay=build_section(SelfPlayConfig, "selfplay", tables["selfplay"]),
                optim=build_section(OptimConfig, "optim", tables["optim"]),
                eval=build_section(EvalConfig, "eval", tables["eval"]),
                distill=build_section(DistillConfig, "distill", tables["distill"]),
            )
        except ValidationError as error:
            raise ValueError(one_line(error, _toml_key)) from None


def load_config(path: str | Path) -> TrainConfig:
    """Read a TOML training config (see klent/training/configs/); a mistake in it is a one-line
    ValueError that names the file."""
    data = read_toml(path)
    try:
        return TrainConfig.from_dict(data)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def config_to_toml(config: TrainConfig) -> str:
    """The config as a TOML file `load_config` reads back equal (written into run folders)."""
    def value(v: Any) -> str:
        if isinstance(v, dict):  # an inline table: {"Skill Level" = -10}
            return "{" + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + "}"
        return str(v).lower() if isinstance(v, bool) else json.dumps(v)

    data = config.to_dict()
    lines = [f"{k} = {value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for name, table in data.items():
        if isinstance(table, dict):
            lines += ["", f"[{name}]", *(f"{k} = {value(v)}" for k, v in table.items())]
    return "\n".join(lines) + "\n"


def with_settings(config: TrainConfig, settings: list[str]) -> TrainConfig:
    """``config`` with each ``KEY=VALUE`` of ``settings`` applied (``klent train --set``), so that
    an A/B arm is a command line rather than a copy of a config file.

    KEY is the setting's TOML path (``distill.score_scale``, ``optim.lr``, ``iterations``, and the
    [net] keys as ``net.blocks``); VALUE is TOML (``10``, ``true``, ``[[100, 3e-4]]``), a bare word
    being read as a string.  The result goes through the same checks as a file, so a wrong key or
    value is a one-line ValueError that names the setting.
    """
    data = config.to_dict()
    for setting in settings:
        key, equals, text = setting.partition("=")
        path = key.strip().split(".")
        if not equals or not all(path) or len(path) > 2:
            raise ValueError(f"--set {setting!r}: expected KEY=VALUE, KEY a setting or section.setting")
        try:
            value = tomllib.loads(f"value = {text}")["value"]
        except tomllib.TOMLDecodeError:
            value = text.strip()  # a bare word: a string (preset = kl-only)
        table = data
        if len(path) == 2:
            if path[0] not in SECTIONS:
                raise ValueError(f"--set {setting!r}: no section [{path[0]}] (known: {', '.join(SECTIONS)})")
            table = data[path[0]]
        elif isinstance(data.get(path[0]), dict):
            raise ValueError(f"--set {setting!r}: {path[0]} is a section; name one of its settings")
        table[path[-1]] = value
    try:
        return TrainConfig.from_dict(data)
    except ValueError as error:
        raise ValueError(f"--set: {error}") from None


# What a resumed run may change: how it goes on (the optimiser and its training levers, when to
# export and evaluate, where self-play runs its network, when to stop), not what it is (game,
# network, algorithm and its targets, seed, the self-play games in flight).
ADJUSTABLE = (
    "iterations",
    "export_every",
    "keep_every",
    "optim",
    "eval",
    "selfplay.evaluator",
    "selfplay.resign_threshold",
    "selfplay.resign_disabled_fraction",
    "distill.data",  # a labelled set that has grown (or moved) since the run started
    "distill.positions",
    "init",  # where the start's network is now: read again only as KLENT's fixed KL reference,
    # which must be the same network (`klent.training.trainer.Trainer._check_kl_reference`)
)


def config_changes(old: TrainConfig, new: TrainConfig) -> list[str]:
    """``"setting: old -> new"`` for each setting ``new`` changes, for a resumed run.

    Raises ValueError naming the settings that define the run, which cannot change.
    """
    before, after = _flatten(old.to_dict()), _flatten(new.to_dict())
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    fixed = [k for k in changed if not any(k == a or k.startswith(a + ".") for a in ADJUSTABLE)]
    if fixed:
        raise ValueError(
            f"a resumed run cannot change {', '.join(fixed)} (only {', '.join(ADJUSTABLE)}); "
            "start a new run for that"
        )

    def shown(value: Any) -> Any:  # sequences as in the TOML file, not as Python tuples
        return json.dumps(value) if isinstance(value, (list, tuple)) else value

    return [f"{k}: {shown(before.get(k))} -> {shown(after.get(k))}" for k in changed]


def _toml_key(loc: Location) -> str:
    """A `TrainConfig` field (and the key inside it) as the TOML file names it."""
    name, inner = str(loc[0]) if loc else "", key_path(loc[1:])
    if name in NET_KEYS:
        return f"[net] {name}"
    if name in ("preset", "kl_reference", "klent_overrides"):
        return f"[klent] {inner or name}"
    if name in SECTIONS:
        return f"[{name}] {inner}".rstrip()
    return key_path(loc)


def _reject_unknown(where: str, data: dict[str, Any], known: tuple[str, ...]) -> None:
    unknown = sorted(set(data) - set(known))
    if unknown:
        prefix = f"{where} " if where else ""
        verb = "is not a setting" if len(unknown) == 1 else "are not settings"
        raise ValueError(f"{prefix}{', '.join(unknown)} {verb} (known: {', '.join(known)})")


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
