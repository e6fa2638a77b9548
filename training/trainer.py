"""The training loop behind `klent train`: self-play, fitting, checkpoints, evaluation.

One iteration = collect ``steps`` transitions in each of ``games`` parallel games
(`training.selfplay`), fit the network on them (one pass of minibatches, Adam), then on rank 0:
export ``latest.onnx``, evaluate when due, append a line to ``metrics.jsonl`` and write
``checkpoint.pt``.  Every write is atomic, and the checkpoint holds everything the next
iteration depends on -- weights, optimizer, counters, the RNG states (torch, numpy, python) and
the running games and start archive of every rank -- so ``--resume`` continues exactly where
the last complete iteration left off.

Under ``torchrun`` (RANK / WORLD_SIZE in the environment) the network is wrapped in
DistributedDataParallel (gloo on CPU, NCCL on CUDA): each rank plays its own games with its own
seed, gradients are averaged across ranks, and rank 0 alone writes files.  ``batch_size`` is the
global minibatch; each rank takes its share.

Run folder: checkpoint.pt, latest.onnx (the current weights), reference.onnx (the model at the
previous evaluation, the "earlier checkpoint" opponent), metrics.jsonl, config.toml (a copy
for people; a resume reads the configuration stored in the checkpoint).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import math
import os
import random
import time
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

import engine.games
from engine.files import copy_atomically, write_text_atomically
from engine.games.base import Game
from engine.games.symmetry import dihedral
from engine.network import OnnxEvaluator, default_threads
from training import klent
from training.distill import DistillConfig, LabelledSet, batches, distill_loss, to_samples, validation_metrics
from training.archive import StartArchive
from training.export import export_onnx
from training.metrics import (
    append_metrics,
    greedy_agent,
    match_score,
    play_games,
    random_agent,
    truncate_metrics,
)
from training.nets import KlentNet, NetConfig, NetOutputs, build_net, load_checkpoint, save_checkpoint
from training.ownership import auxiliary_loss
from training.selfplay import GameSlots, Samples, SelfPlayConfig, collect_klent
from training.torch_evaluator import TorchEvaluator

ALGOS = ("klent", "gumbel-az", "distill")  # distill: from a teacher's labels (training.distill)
CHECKPOINT = "checkpoint.pt"
LATEST_ONNX = "latest.onnx"
REFERENCE_ONNX = "reference.onnx"
SNAPSHOTS = "snapshots"  # snapshots/iteration-000400.onnx, kept for learning curves
METRICS = "metrics.jsonl"
CONFIG_TOML = "config.toml"

# ---------------------------------------------------------------------------------------------
# Configuration (TOML)
# ---------------------------------------------------------------------------------------------


# [optim] precision -> the autocast dtype of fitting (None: none).
PRECISIONS: dict[str, torch.dtype | None] = {"float32": None, "bfloat16": torch.bfloat16}


@dataclass(frozen=True)
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
    weigh Go's auxiliary targets (`training.ownership`) where the network has those heads."""

    lr: float = 1e-3
    lr_schedule: tuple[tuple[int, float], ...] = ()
    ownership_weight: float = 1.0  # of the ownership loss, for a network with that head
    score_weight: float = 1.0  # of the score loss (training.ownership), likewise
    batch_size: int = 256
    epochs: int = 1
    symmetries: bool = False
    precision: str = "float32"

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(f"[optim] precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        try:
            steps = tuple((int(at), float(lr)) for at, lr in self.lr_schedule)
        except (TypeError, ValueError):
            raise ValueError("[optim] lr_schedule must be a list of [iteration, lr] pairs") from None
        iterations = [at for at, _ in steps]
        if any(at < 1 for at in iterations) or iterations != sorted(set(iterations)):
            raise ValueError("[optim] lr_schedule iterations must be positive and increasing")
        if any(lr <= 0 for lr in (self.lr, *(lr for _, lr in steps))):
            raise ValueError("[optim] learning rates must be positive")
        if self.ownership_weight < 0 or self.score_weight < 0:
            raise ValueError("[optim] ownership_weight and score_weight must be >= 0")
        object.__setattr__(self, "lr_schedule", steps)  # TOML gives lists; compare as tuples

    def lr_after(self, iterations: int) -> float:
        """The learning rate of the iteration that follows ``iterations`` done ones."""
        return next((lr for at, lr in reversed(self.lr_schedule) if iterations >= at), self.lr)

    def autocast_dtype(self) -> torch.dtype | None:
        """The dtype `fit` autocasts to, or None for plain float32."""
        return PRECISIONS[self.precision]


@dataclass(frozen=True)
class EvalConfig:
    """Every ``every`` iterations (0 = never): ``games`` greedy games against uniform random
    play and as many against the model of the previous evaluation, whose first
    ``opening_plies`` moves are random so that two deterministic players differ game to game."""

    every: int = 10
    games: int = 64
    opening_plies: int = 2


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a run; stored in its checkpoint so a resume cannot drift."""

    game: str
    game_options: dict[str, Any] = field(default_factory=dict)
    algo: str = "klent"
    seed: int = 0
    iterations: int = 100  # default stop when neither --iterations nor --minutes is given
    export_every: int = 1  # latest.onnx every n iterations (always when self-play uses ONNX)
    keep_every: int = 0  # also keep a copy in snapshots/ every n iterations (0: never)
    blocks: int = 6
    channels: int = 64
    heads: str = "fc"  # action heads: "fc" (any game) or "conv" (games with Game.action_planes)
    ownership_head: bool = False  # Go's auxiliary heads (training.ownership)
    score_head: bool = False
    global_pooling: bool = False  # KataGo's global pooling in every second block
    preset: str = "klent"  # KLENT ablation preset (training.klent.PRESETS)
    klent_overrides: dict[str, float] = field(default_factory=dict)  # alpha / beta / lam
    gumbel_az: dict[str, Any] = field(default_factory=dict)  # training.gumbel_az.GumbelAZConfig
    selfplay: SelfPlayConfig = SelfPlayConfig()
    optim: OptimConfig = OptimConfig()
    eval: EvalConfig = EvalConfig()
    distill: DistillConfig = DistillConfig()
    init: str = ""  # the checkpoint.pt whose weights a new run starts from; "" = random weights

    def __post_init__(self) -> None:
        # TOML reads `inf` and `nan`, which slip past every range check (nan < 0 is False):
        # a NaN setting would only show an hour later, as NaN losses and weights.
        for key, value in _flatten(self.to_dict()).items():
            if _non_finite(value):
                section, _, name = key.rpartition(".")
                raise ValueError(f"{f'[{section}] ' if section else ''}{name} must be finite, not nan or inf")
        if self.algo not in ALGOS:
            raise ValueError(f"unknown algorithm {self.algo!r}; known: {', '.join(ALGOS)}")
        if self.preset not in klent.PRESETS:
            known = ", ".join(klent.PRESETS)
            raise ValueError(f"unknown KLENT preset {self.preset!r}; known: {known}")
        self.klent_config()  # validate the overrides now, not an hour into the run
        if self.export_every < 1 or self.optim.batch_size < 1 or self.optim.epochs < 1:
            raise ValueError("export_every, batch_size and epochs must be at least 1")
        if self.keep_every < 0:
            raise ValueError("keep_every must be 0 (never) or a number of iterations")
        if (self.ownership_head or self.score_head) and self.algo == "gumbel-az":
            raise ValueError("ownership and score heads are trained by klent and distill runs")
        if self.algo != "klent" and self.selfplay.resign_threshold > 0:
            raise ValueError("selfplay.resign_threshold is a KLENT option (gumbel-az never resigns)")

    def klent_config(self) -> klent.KlentConfig:
        return dataclasses.replace(klent.PRESETS[self.preset], **self.klent_overrides)

    def net_config(self) -> NetConfig:
        """KLENT: policy + action values; Gumbel AlphaZero: policy + state value (table 3)."""
        return NetConfig(
            blocks=self.blocks,
            channels=self.channels,
            heads=self.heads,
            ownership_head=self.ownership_head,
            score_head=self.score_head,
            global_pooling=self.global_pooling,
            value_head=self.algo == "gumbel-az",
            action_value_head=self.algo in ("klent", "distill"),
        )

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
            "net": {
                "blocks": self.blocks,
                "channels": self.channels,
                "heads": self.heads,
                "ownership_head": self.ownership_head,
                "score_head": self.score_head,
                "global_pooling": self.global_pooling,
            },
            "klent": {"preset": self.preset, **self.klent_overrides},
            "gumbel_az": dict(self.gumbel_az),
            "selfplay": dataclasses.asdict(self.selfplay),
            "optim": dataclasses.asdict(self.optim),
            "eval": dataclasses.asdict(self.eval),
            "distill": dataclasses.asdict(self.distill),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Inverse of `to_dict`, also the TOML reader; unknown keys are an error."""
        data = dict(data)
        sections = {
            name: dict(data.pop(name, {}))
            for name in ("game_options", "net", "klent", "gumbel_az", "selfplay", "optim", "eval", "distill")
        }
        top = {"game", "algo", "seed", "iterations", "export_every", "keep_every", "init"}
        _reject_unknown("top level", data, top)
        if "game" not in data:
            raise ValueError("the config does not name a game (game = \"go9\")")
        _reject_unknown("[net]", sections["net"], {f.name for f in dataclasses.fields(NetConfig)} - {"value_head", "action_value_head"})
        klent_section = sections["klent"]
        preset = klent_section.pop("preset", "klent")
        _reject_unknown("[klent]", klent_section, {"alpha", "beta", "lam"})
        return cls(
            **data,
            game_options=sections["game_options"],
            **sections["net"],
            preset=preset,
            klent_overrides={k: float(v) for k, v in klent_section.items()},
            gumbel_az=sections["gumbel_az"],
            selfplay=_build(SelfPlayConfig, "[selfplay]", sections["selfplay"]),
            optim=_build(OptimConfig, "[optim]", sections["optim"]),
            eval=_build(EvalConfig, "[eval]", sections["eval"]),
            distill=_build(DistillConfig, "[distill]", sections["distill"]),
        )


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


def _non_finite(value: Any) -> bool:
    """Whether a setting is, or lists (``lr_schedule``), a NaN or infinite number."""
    if isinstance(value, (list, tuple)):
        return any(_non_finite(v) for v in value)
    return isinstance(value, float) and not math.isfinite(value)


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def load_config(path: str | Path) -> TrainConfig:
    """Read a TOML training config (see training/configs/)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no config file {str(path)!r}")
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: {error}") from None
    try:
        return TrainConfig.from_dict(data)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path}: {error}") from None


def _reject_unknown(where: str, data: dict, known: set[str]) -> None:
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"unknown setting(s) in {where}: {', '.join(sorted(unknown))}")


def _build(cls: type, where: str, data: dict) -> Any:
    _reject_unknown(where, data, {f.name for f in dataclasses.fields(cls)})
    return cls(**data)


# ---------------------------------------------------------------------------------------------
# Devices, processes and random numbers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Distributed:
    """This process's place in a torchrun job (rank 0 of 1 when run alone)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def init_distributed(device: torch.device) -> Distributed:
    """Join the torchrun job described by the environment, if any (gloo / NCCL)."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return Distributed()
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend=backend)
    return Distributed(
        rank=dist.get_rank(),
        world_size=world_size,
        local_rank=int(os.environ.get("LOCAL_RANK", "0")),
        local_world_size=int(os.environ.get("LOCAL_WORLD_SIZE", "1")),
    )


def pick_device(requested: str | None) -> torch.device:
    """``requested`` if given, else CUDA, then Apple's MPS, then the CPU.  Under torchrun each
    local rank gets its own GPU."""
    if requested:
        device = torch.device(requested)
    elif torch.cuda.is_available():
        device = torch.device("cuda")
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return device


def rng_state(rng: np.random.Generator) -> dict[str, Any]:
    """Every random number generator this process draws from, as checkpointable values."""
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": rng.bit_generator.state,
        "python": random.getstate(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(rng: np.random.Generator, state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    rng.bit_generator.state = state["numpy"]
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# ---------------------------------------------------------------------------------------------
# Fitting
# ---------------------------------------------------------------------------------------------

LossFn = Callable[[NetOutputs, dict[str, torch.Tensor]], tuple[torch.Tensor, dict[str, torch.Tensor]]]


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite (a learning rate too high, most often).

    Raised before the optimiser step that would spread it into every weight, so the iteration
    writes nothing and the run folder keeps its last good checkpoint.  (Under torchrun the rank
    that sees it fails, and torchrun ends the others.)
    """


def klent_batch_loss(
    outputs: NetOutputs, batch: dict[str, torch.Tensor]
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """`training.klent.klent_loss` on a minibatch of `Samples` fields."""
    return klent.klent_loss(
        outputs.policy_logits, outputs.action_values, batch["masks"], batch["actions"], batch["policy"], batch["returns"]
    )


def with_auxiliary(loss_fn: LossFn, ownership_weight: float, score_weight: float) -> LossFn:
    """``loss_fn`` plus Go's weighted ownership and score losses (`training.ownership`)."""

    def loss(outputs: NetOutputs, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        main, parts = loss_fn(outputs, batch)
        extra, extra_parts = auxiliary_loss(outputs, batch, ownership_weight, score_weight)
        return main + extra, {**parts, **extra_parts}

    return loss


def fit(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    samples: Samples,
    loss_fn: LossFn,
    batch_size: int,
    epochs: int,
    device: torch.device,
    symmetries: np.ndarray | None = None,
    autocast: torch.dtype | None = None,
) -> dict[str, float]:
    """Minimise ``loss_fn`` over ``samples`` in shuffled minibatches; mean loss parts.

    Minibatches are gathered on the host and moved one at a time, so an iteration's samples
    (millions on the paper's setup) never have to fit in GPU memory.  With ``symmetries`` (a
    `Game.symmetries` table) each minibatch is replaced by its image under a random one.  With
    ``autocast`` (e.g. torch.bfloat16) the network runs in that precision where autocast
    allows; its outputs are cast back to float32 before the loss, so log-softmax, the KL and
    the squared errors are float32 sums.  A non-finite loss raises `TrainingDiverged` before
    its update.
    """
    model.train()
    fields = {
        "obs": samples.obs,
        "masks": samples.masks,
        "actions": samples.actions,
        "policy": samples.policy,
        "returns": samples.returns,
        "value_weight": samples.value_weight,
    }
    if samples.q_targets is not None:
        fields["q_targets"] = samples.q_targets
    if samples.ownership is not None and samples.score is not None:
        fields["ownership"] = samples.ownership
        fields["score"] = samples.score
    totals: dict[str, float] = {}
    steps = 0
    for _ in range(epochs):
        order = torch.randperm(len(samples)).numpy()
        for start in range(0, len(order), batch_size):
            index = order[start : start + batch_size]
            arrays = {k: v[index] for k, v in fields.items()}
            if symmetries is not None and len(symmetries) > 1:
                chosen = int(torch.randint(len(symmetries), ()).item())
                arrays = symmetry_image(arrays, chosen, symmetries[chosen])
            batch = {k: torch.from_numpy(v).to(device) for k, v in arrays.items()}
            with torch.autocast(device.type, dtype=autocast or torch.float32, enabled=autocast is not None):
                outputs = model(batch["obs"])
            loss, parts = loss_fn(outputs.as_float(), batch)
            if not torch.isfinite(loss):
                raise TrainingDiverged(f"the loss is {float(loss.detach())} in minibatch {steps + 1}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            for name, value in {"loss": loss.detach(), **parts}.items():
                totals[name] = totals.get(name, 0.0) + float(value)
            steps += 1
    return {name: total / steps for name, total in totals.items()}


def symmetry_image(
    arrays: dict[str, np.ndarray], index: int, permutation: np.ndarray
) -> dict[str, np.ndarray]:
    """A minibatch's training fields as they read on the board turned by symmetry ``index``.

    ``permutation[a]`` is the image of action ``a``, so per-action columns move to their image
    (``new[:, permutation[a]] = old[:, a]``) and taken actions are mapped; per-point columns
    (ownership) move with the point's action; values and scores do not change.
    """
    inverse = np.argsort(permutation)
    per_action = {k: arrays[k][:, inverse] for k in ("masks", "policy", "q_targets") if k in arrays}
    if "ownership" in arrays:
        points = arrays["ownership"].shape[1]  # the board points are the first actions
        per_action["ownership"] = arrays["ownership"][:, inverse[:points]]
    return {**arrays, **per_action, "obs": dihedral(arrays["obs"], index), "actions": permutation[arrays["actions"]]}


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------


class Trainer:
    """One training run in one run folder (one instance per torchrun process)."""

    def __init__(
        self,
        config: TrainConfig,
        out_dir: str | Path,
        *,
        resume: bool = False,
        device: str | None = None,
        threads: int | None = None,
        progress: bool = True,
    ) -> None:
        self.config = config
        self.out = Path(out_dir)
        self.device = pick_device(device)
        self.dist = init_distributed(self.device)
        # CPU threads for torch and ONNX Runtime: the cores shared among this host's ranks.
        self.threads = threads or max(1, default_threads() // self.dist.local_world_size)
        torch.set_num_threads(self.threads)

        # The initial weights come from the config's seed (identical on every rank; DDP would
        # broadcast rank 0's anyway); everything after from a seed of each rank's own.
        torch.manual_seed(config.seed)
        self.game: Game = engine.games.get(config.game, **config.game_options)
        self.net_config = config.net_config()
        self.model: KlentNet = build_net(self.game, self.net_config).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.optim.lr)

        seed = config.seed * 1_000_003 + self.dist.rank  # each rank its own games
        torch.manual_seed(seed)
        random.seed(seed)
        self.rng = np.random.default_rng(seed)
        archive = (
            StartArchive(config.selfplay.archive_size, config.selfplay.archive_initial_prob)
            if config.selfplay.archive_size
            else None
        )
        # The augmentation's action permutations, built once (None: no augmentation).
        self.symmetries = self.game.symmetries() if config.optim.symmetries else None
        resigning = config.selfplay.resign_threshold > 0
        self.slots = GameSlots(
            self.game,
            config.selfplay.games,
            self.rng,
            archive,
            config.selfplay.resign_disabled_fraction if resigning else None,
        )
        self.iteration = 0
        self._exported = -1  # iteration whose weights latest.onnx holds (-1: none yet)
        self.simulator_evaluations = 0
        self.samples_seen = 0
        self.wall_seconds = 0.0
        self.cpu_seconds = 0.0  # CPU time of every rank's process, all threads (the budget unit)
        self.config_history: list[dict[str, Any]] = []  # settings changed on resumption, and when

        checkpoint = self.out / CHECKPOINT
        if resume:
            self._load(checkpoint)
        elif checkpoint.exists():
            raise ValueError(
                f"{self.out} already holds a training run; pass --resume to continue it "
                "or choose another --out"
            )
        elif config.init:
            self.model.load_state_dict(initial_weights(config.init, self.game, self.net_config))
        # Distillation fits a teacher's labelled positions instead of playing (training.distill).
        self.labelled: LabelledSet | None = None
        if config.algo == "distill":
            if not config.distill.data:
                raise ValueError("--algo distill needs a labelled set: --data FOLDER or [distill] data")
            self.labelled = LabelledSet.load(config.distill.data, self.game, progress=progress and self.dist.is_main)
        # The module that fits: DDP averages the gradients across ranks (and keeps the
        # batch-norm statistics of rank 0); self-play and export use the plain self.model.
        self.ddp: torch.nn.Module = self.model
        if self.dist.enabled:
            device_ids = [self.device.index] if self.device.type == "cuda" else None
            self.ddp = DistributedDataParallel(self.model, device_ids=device_ids)
        if self.dist.is_main:
            self.out.mkdir(parents=True, exist_ok=True)
            for stale in self.out.glob(".*.tmp"):  # left by a process killed mid-write
                stale.unlink()
            write_text_atomically(self.out / CONFIG_TOML, config_to_toml(config))  # for people to read
            truncate_metrics(self.out / METRICS, self.iteration)
            if self._plays_through_onnx:
                with _random_state_kept():
                    self._export()  # the weights the next self-play uses (fresh on a resume)
        self._barrier()

    # -- the loop --------------------------------------------------------------------------------

    def run(
        self,
        iterations: int | None = None,
        minutes: float | None = None,
        progress: bool = True,
    ) -> int:
        """Train until ``iterations`` in total are done or ``minutes`` have passed (the
        iteration under way is finished); returns the number of iterations completed."""
        if iterations is None and minutes is None:
            iterations = self.config.iterations
        started = time.monotonic()
        bar = tqdm(
            total=iterations,
            initial=self.iteration,
            disable=not (progress and self.dist.is_main),
            unit="it",
            dynamic_ncols=True,
        )
        try:
            while iterations is None or self.iteration < iterations:
                if minutes is not None and self._agree(time.monotonic() - started >= 60 * minutes):
                    break
                record = self.step()
                bar.update(1)
                bar.set_postfix(_postfix(record))
        finally:
            bar.close()
        if self.dist.is_main and self._exported != self.iteration:
            with _random_state_kept():
                self._export()  # latest.onnx always holds the final weights
        return self.iteration

    def step(self) -> dict[str, Any]:
        """One iteration: self-play, fit, then (rank 0) export, evaluate, log, checkpoint."""
        tick = time.monotonic()
        cpu_tick = time.process_time()
        samples = self._collect()
        tock = time.monotonic()
        lr = self.config.optim.lr_after(self.iteration)
        for group in self.optimizer.param_groups:  # a resumption's [optim] may have changed it
            group["lr"] = lr
        try:
            parts = fit(
                self.ddp,
                self.optimizer,
                samples,
                self._loss_fn(),
                max(1, self.config.optim.batch_size // self.dist.world_size),
                self.config.optim.epochs,
                self.device,
                self.symmetries,
                self.config.optim.autocast_dtype(),
            )
        except TrainingDiverged as error:
            kept = f"{CHECKPOINT} keeps iteration {self.iteration}" if self.iteration else f"no {CHECKPOINT} yet"
            raise TrainingDiverged(
                f"training diverged in iteration {self.iteration + 1}: {error}; {kept} "
                "(lower [optim] lr or lr_schedule)"
            ) from None
        self._sync_buffers()
        done = time.monotonic()
        self.iteration += 1
        totals = self._sum([samples.simulator_evaluations, len(samples), time.process_time() - cpu_tick])
        means = self._mean({**parts, **samples.stats})
        self.simulator_evaluations += int(totals[0])
        self.samples_seen += int(totals[1])
        self.wall_seconds += done - tick
        self.cpu_seconds += totals[2]
        record: dict[str, Any] = {
            "iteration": self.iteration,
            "simulator_evaluations": self.simulator_evaluations,
            "samples": self.samples_seen,
            **means,
            "lr": lr,
            "selfplay_seconds": tock - tick,
            "train_seconds": done - tock,
            "samples_per_second": totals[1] / (done - tick),
            "simulator_evaluations_per_second": totals[0] / (done - tick),
            "wall_seconds": self.wall_seconds,
            "cpu_seconds": self.cpu_seconds,
        }
        state = self._gather(self._process_state())
        if len({p["weights_sha256"] for p in state}) != 1:
            raise RuntimeError("the ranks' weights differ after an update; check torchrun's setup")
        if self.dist.is_main:
            with _random_state_kept():  # the export may draw random numbers: not the run's
                self._finish_iteration(record, state)
        self._barrier()
        return record

    def _finish_iteration(self, record: dict[str, Any], process_states: list[dict]) -> None:
        """Rank 0: export, evaluate, log and checkpoint -- in this order, so that a kill at any
        point leaves the previous checkpoint and a log that `truncate_metrics` repairs."""
        evaluate = self.config.eval.every > 0 and self.iteration % self.config.eval.every == 0
        keep = self.config.keep_every > 0 and self.iteration % self.config.keep_every == 0
        if (
            evaluate
            or keep
            or self._plays_through_onnx
            or self.iteration % self.config.export_every == 0
        ):
            self._export()
        if keep:
            copy_atomically(self.out / LATEST_ONNX, self.out / SNAPSHOTS / f"iteration-{self.iteration:06d}.onnx")
        if evaluate:
            record.update(self._evaluate())
        append_metrics(self.out / METRICS, record)
        save_checkpoint(
            self.out / CHECKPOINT,
            self.model,
            self.game,
            self.net_config,
            optimizer=self.optimizer.state_dict(),
            train_config=self.config.to_dict(),
            counters={
                "iteration": self.iteration,
                "simulator_evaluations": self.simulator_evaluations,
                "samples": self.samples_seen,
                "wall_seconds": self.wall_seconds,
                "cpu_seconds": self.cpu_seconds,
            },
            processes=process_states,
            training_info=self._training_info(),
            config_history=self.config_history,
        )
        if evaluate:
            copy_atomically(self.out / LATEST_ONNX, self.out / REFERENCE_ONNX)

    # -- pieces ------------------------------------------------------------------------------------

    @property
    def _plays_through_onnx(self) -> bool:
        """Self-play reads ``latest.onnx``, which must then follow every update; distillation
        plays no games, so its model is exported every ``export_every`` iterations only."""
        return self.labelled is None and self.config.selfplay.evaluator == "onnx"

    def _collect(self) -> Samples:
        if self.labelled is not None:
            chosen = batches(self.labelled, self.config.distill.positions, self.config.seed, self.iteration)
            mine = chosen[self.dist.rank :: self.dist.world_size]  # each rank its share
            return to_samples(self.labelled, mine, self.game.num_actions, self.config.distill.temperature)
        if self.config.selfplay.evaluator == "onnx":
            evaluator: Any = OnnxEvaluator(self.out / LATEST_ONNX, self.game, threads=self.threads)
        else:
            evaluator = TorchEvaluator(self.model, self.game, self.device)
        if self.config.algo == "klent":
            return collect_klent(
                self.slots,
                evaluator,
                self.config.klent_config(),
                self.config.selfplay.steps,
                self.config.selfplay.resign_threshold,
                ownership_targets=self.net_config.ownership_head or self.net_config.score_head,
            )
        from training import gumbel_az  # engine.search is needed only by this baseline

        return gumbel_az.collect(
            self.slots,
            evaluator,
            gumbel_az.GumbelAZConfig.from_dict(self.config.gumbel_az),
            self.config.selfplay.steps,
        )

    def _loss_fn(self) -> LossFn:
        if self.config.algo == "gumbel-az":
            from training import gumbel_az

            return gumbel_az.batch_loss
        loss = (klent_batch_loss if self.config.algo == "klent"
                else functools.partial(distill_loss, q_weight=self.config.distill.q_weight))
        if self.net_config.ownership_head or self.net_config.score_head:
            loss = with_auxiliary(loss, self.config.optim.ownership_weight, self.config.optim.score_weight)
        return loss

    def _evaluate(self) -> dict[str, float]:
        """Greedy play of ``latest.onnx`` against random play and against ``reference.onnx``."""
        cfg = self.config.eval
        result: dict[str, float] = {}
        if self.labelled is not None:
            result.update(validation_metrics(self.model, self.labelled, self.game.num_actions, self.device))
        if cfg.games == 0:
            return result
        rng = np.random.default_rng([self.config.seed, self.iteration])
        current = greedy_agent(OnnxEvaluator(self.out / LATEST_ONNX, self.game, threads=self.threads))
        result["winrate_random"] = match_score(play_games(self.game, current, random_agent(rng), cfg.games, rng))
        reference = self.out / REFERENCE_ONNX
        if reference.exists():
            opponent = greedy_agent(OnnxEvaluator(reference, self.game, threads=self.threads))
            result["winrate_reference"] = match_score(
                play_games(self.game, current, opponent, cfg.games, rng, opening_plies=cfg.opening_plies)
            )
        return result

    def _export(self) -> None:
        export_onnx(self.model, self.game, self.out / LATEST_ONNX, self._training_info())
        self._exported = self.iteration

    def _training_info(self) -> dict[str, str]:
        algo = self.config.algo if self.config.algo != "klent" else f"klent:{self.config.preset}"
        info = {
            "algorithm": algo,
            "iterations": str(self.iteration),
            "simulator_evaluations": str(self.simulator_evaluations),
        }
        if self.labelled is not None:  # where the knowledge came from
            info["labels"] = self.labelled.description
        if self.config.init:
            info["init"] = self.config.init
        return info

    def _process_state(self) -> dict[str, Any]:
        """What this rank alone knows: its random number generators and its running games,
        plus a hash of its weights (DDP keeps them identical; rank 0 checks that it did)."""
        return {
            "rng": rng_state(self.rng),
            "games": self.slots.state_dict(),
            "weights_sha256": weights_hash(self.model),
        }

    def _load(self, path: Path) -> None:
        if not path.exists():
            raise FileNotFoundError(f"nothing to resume: no {CHECKPOINT} in {self.out}")
        checkpoint = load_checkpoint(path, self.device)
        saved = TrainConfig.from_dict(checkpoint.extra["train_config"])
        self.config_history = list(checkpoint.extra.get("config_history", []))
        changes = config_changes(saved, self.config)
        if changes:
            resumed_at = checkpoint.extra["counters"]["iteration"]
            self.config_history.append({"iteration": resumed_at, "changes": changes})
        processes = checkpoint.extra["processes"]
        if len(processes) != self.dist.world_size:
            raise ValueError(
                f"{self.out} was trained by {len(processes)} process(es); resume it with as many"
            )
        self.model.load_state_dict(checkpoint.model.state_dict())
        self.optimizer.load_state_dict(checkpoint.extra["optimizer"])  # `step` sets the lr
        counters = checkpoint.extra["counters"]
        self.iteration = counters["iteration"]
        self.simulator_evaluations = counters["simulator_evaluations"]
        self.samples_seen = counters["samples"]
        self.wall_seconds = counters["wall_seconds"]
        self.cpu_seconds = counters.get("cpu_seconds", 0.0)  # runs from before it was metered
        mine = processes[self.dist.rank]
        set_rng_state(self.rng, mine["rng"])
        self.slots.load_state_dict(mine["games"])

    # -- collective helpers (no-ops when training alone) -------------------------------------------

    def _barrier(self) -> None:
        if self.dist.enabled:
            dist.barrier()

    def _sync_buffers(self) -> None:
        """Give every rank rank 0's batch-norm statistics.  DDP broadcasts them before each
        forward pass, but the last minibatch of an iteration leaves each rank with statistics of
        its own data, and self-play must run the same network everywhere."""
        if self.dist.enabled:
            for buffer in self.model.buffers():
                dist.broadcast(buffer, src=0)

    def _agree(self, flag: bool) -> bool:
        """Rank 0's decision, so that every rank stops after the same iteration."""
        if not self.dist.enabled:
            return flag
        box = [flag]
        dist.broadcast_object_list(box, src=0)
        return bool(box[0])

    def _sum(self, values: list[float]) -> list[float]:
        if not self.dist.enabled:
            return [float(v) for v in values]
        tensor = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(tensor)
        return tensor.tolist()

    def _mean(self, values: dict[str, float]) -> dict[str, float]:
        if not self.dist.enabled:
            return dict(values)
        names = sorted(values)
        totals = self._sum([values[n] for n in names])
        return {n: t / self.dist.world_size for n, t in zip(names, totals)}

    def _gather(self, state: dict[str, Any]) -> list[dict[str, Any]]:
        if not self.dist.enabled:
            return [state]
        gathered: list[Any] = [None] * self.dist.world_size
        dist.all_gather_object(gathered, state)
        return gathered

    def close(self) -> None:
        if self.dist.enabled:
            dist.destroy_process_group()


def initial_weights(path: str | Path, game: Game, net_config: NetConfig) -> dict[str, torch.Tensor]:
    """The weights of the checkpoint at ``path`` for a new run's network (``--init``): the game
    and the network's shape must be the run's.  An ONNX model cannot serve: its exporter folds
    batch norms into the convolutions, so its weights no longer name the network's layers."""
    if str(path).endswith(".onnx"):
        raise ValueError(f"--init needs the checkpoint.pt that {path} was exported from (an ONNX "
                         "model's batch norms are folded into its convolutions)")
    checkpoint = load_checkpoint(path)
    if checkpoint.game.name != game.name or checkpoint.game.encoder_version != game.encoder_version:
        raise ValueError(f"--init {path} is a {checkpoint.game.name} network of encoder version "
                         f"{checkpoint.game.encoder_version}, not {game.name} of version {game.encoder_version}")
    if checkpoint.config != net_config:
        raise ValueError(f"--init {path} is {checkpoint.config.arch} with heads {checkpoint.config}; "
                         f"this run builds {net_config}")
    return checkpoint.model.state_dict()


def weights_hash(model: torch.nn.Module) -> str:
    """SHA-256 of every parameter and buffer, in state-dict order."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def config_to_toml(config: TrainConfig) -> str:
    """The config as a TOML file `load_config` reads back equal (written into run folders)."""
    def value(v: Any) -> str:
        return str(v).lower() if isinstance(v, bool) else json.dumps(v)

    data = config.to_dict()
    lines = [f"{k} = {value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for section, table in data.items():
        if isinstance(table, dict):
            lines += ["", f"[{section}]", *(f"{k} = {value(v)}" for k, v in table.items())]
    return "\n".join(lines) + "\n"


def resume_config(out_dir: str | Path) -> TrainConfig:
    """The configuration stored in a run folder's checkpoint (for ``--resume`` without
    ``--config``)."""
    path = Path(out_dir) / CHECKPOINT
    if not path.exists():
        raise FileNotFoundError(f"nothing to resume: no {CHECKPOINT} in {out_dir}")
    return TrainConfig.from_dict(load_checkpoint(path).extra["train_config"])


@contextlib.contextmanager
def _random_state_kept() -> Iterator[None]:
    """Run a block without moving torch's or Python's global random generators, so that what
    rank 0 alone does (export, evaluation) cannot make a resumed run differ from an unbroken
    one."""
    python_state = random.getstate()
    with torch.random.fork_rng(devices=[]):
        yield
    random.setstate(python_state)


def _postfix(record: dict[str, Any]) -> dict[str, str]:
    shown = {"loss": record.get("loss"), "H": record.get("entropy")}
    shown["vs_random"] = record.get("winrate_random")
    return {k: f"{v:.3g}" for k, v in shown.items() if isinstance(v, float) and math.isfinite(v)}
