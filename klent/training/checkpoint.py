"""A run folder and its checkpoint: what ``checkpoint.pt`` holds and how a run reads it back.

Run folder: checkpoint.pt, latest.onnx (the current weights), reference.onnx (the model at the
previous evaluation, the "earlier checkpoint" opponent), snapshots/ (models kept for learning
curves), metrics.jsonl, config.toml (a copy for people; a resume reads the configuration
stored in the checkpoint).

The checkpoint holds everything the next iteration depends on -- weights, optimizer, counters,
the configuration, and each process's random number generators and running games -- so that
``--resume`` continues exactly where the last complete iteration left off.  A file that lacks
any of it (a network saved by other means, a damaged run) is refused in one line naming the
file and what is missing, and ``--init`` is the way to start a new run from its weights.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import torch
from pydantic import Field, ValidationError

from klent.engine.games.base import Game
from klent.engine.games.go import GoGame
from klent.engine.settings import Float, Int, key_path, one_line, section
from klent.training.config import TrainConfig
from klent.training.gateau import BOARDS
from klent.training.nets import CheckpointError, KlentNet, NetConfig, load_checkpoint, save_checkpoint

CHECKPOINT = "checkpoint.pt"
LATEST_ONNX = "latest.onnx"
REFERENCE_ONNX = "reference.onnx"
SNAPSHOTS = "snapshots"  # snapshots/iteration-000400.onnx, kept for learning curves
METRICS = "metrics.jsonl"
CONFIG_TOML = "config.toml"

# What every process saves of its own (`process_state`), and what a resumable checkpoint holds.
PROCESS_KEYS = ("rng", "games")
RUN_KEYS = ("train_config", "optimizer", "counters", "processes")


@section
class Counters:
    """How far a run has come, summed over its processes and resumptions."""

    iteration: Annotated[Int, Field(ge=0)]
    simulator_evaluations: Annotated[Int, Field(ge=0)]
    samples: Annotated[Int, Field(ge=0)]
    wall_seconds: Float
    cpu_seconds: Float = 0.0  # 0 in runs from before it was metered


@dataclass
class RunState:
    """What a resumed run reads back from its checkpoint."""

    model: KlentNet
    config: TrainConfig
    optimizer: dict[str, Any]  # the state dict of torch's Adam
    counters: Counters
    processes: list[dict[str, Any]]  # `process_state` of each rank, in rank order
    config_history: list[dict[str, Any]]  # settings changed on resumption, and when
    training_info: dict[str, str]  # the run's provenance when it was saved (`Algorithm.provenance`, ...)


def write_run_state(
    path: Path,
    model: KlentNet,
    game: Game,
    net_config: NetConfig,
    state: RunState,
) -> None:
    """Write a resumable checkpoint (atomically, as `klent.training.nets.save_checkpoint` does)."""
    save_checkpoint(
        path,
        model,
        game,
        net_config,
        optimizer=state.optimizer,
        train_config=state.config.to_dict(),
        counters=dataclasses.asdict(state.counters),
        processes=state.processes,
        training_info=state.training_info,
        config_history=state.config_history,
    )


def read_run_state(path: str | Path, device: str | torch.device = "cpu") -> RunState:
    """The run state in the checkpoint at ``path``; a file that is not a resumable training
    checkpoint raises a one-line `CheckpointError` (FileNotFoundError when there is none)."""
    checkpoint = load_checkpoint(path, device)
    extra = checkpoint.extra
    missing = [key for key in RUN_KEYS if key not in extra]
    if missing:
        raise CheckpointError(
            f"{path} holds no {', '.join(missing)}: not a training run that --resume can continue "
            "(--init starts a new run from its weights)"
        )
    try:
        config = TrainConfig.from_dict(_table(extra, "train_config", path))
    except ValueError as error:
        raise CheckpointError(f"{path}: its train_config: {error}") from None
    try:
        counters = Counters(**_table(extra, "counters", path))
    except ValidationError as error:
        raise CheckpointError(f"{path}: {one_line(error, lambda loc: 'counters.' + key_path(loc))}") from None
    processes = extra["processes"]
    if not isinstance(processes, list) or not all(
        isinstance(p, dict) and all(k in p for k in PROCESS_KEYS) for p in processes
    ):
        raise CheckpointError(f"{path}: its processes are not a list of {' and '.join(PROCESS_KEYS)} states")
    return RunState(
        model=checkpoint.model,
        config=config,
        optimizer=_table(extra, "optimizer", path),
        counters=counters,
        processes=processes,
        config_history=list(extra.get("config_history", [])),
        training_info=dict(extra.get("training_info", {})),
    )


def _table(extra: dict[str, Any], key: str, path: str | Path) -> dict[str, Any]:
    value = extra[key]
    if not isinstance(value, dict):
        raise CheckpointError(f"{path}: its {key} is a {type(value).__name__}, not a table")
    return value


def resume_config(out_dir: str | Path) -> TrainConfig:
    """The configuration stored in a run folder's checkpoint (for ``--resume`` without
    ``--config``)."""
    path = Path(out_dir) / CHECKPOINT
    if not path.exists():
        raise FileNotFoundError(f"nothing to resume: no {CHECKPOINT} in {out_dir}")
    return read_run_state(path).config


def initial_weights(path: str | Path, game: Game, net_config: NetConfig) -> dict[str, torch.Tensor]:
    """The weights of the checkpoint at ``path`` for a new run's network (``--init``): the game
    and the network's shape must be the run's.  An ONNX model cannot serve: its exporter folds
    batch norms into the convolutions, so its weights no longer name the network's layers."""
    if str(path).endswith(".onnx"):
        raise ValueError(f"--init needs the checkpoint.pt that {path} was exported from (an ONNX "
                         "model's batch norms are folded into its convolutions)")
    checkpoint = load_checkpoint(path)
    same_game = checkpoint.game.name == game.name and checkpoint.game.encoder_version == game.encoder_version
    if not same_game and not transfers_between_boards(checkpoint.game, game, net_config):
        raise ValueError(f"--init {path} is a {checkpoint.game.name} network of encoder version "
                         f"{checkpoint.game.encoder_version}, not {game.name} of version {game.encoder_version}")
    if checkpoint.config != net_config:
        raise ValueError(f"--init {path} is {checkpoint.config.arch} with heads {checkpoint.config}; "
                         f"this run builds {net_config}")
    return checkpoint.model.state_dict()


def transfers_between_boards(trained: Game, run: Game, net_config: NetConfig) -> bool:
    """Whether a ``trained`` network serves a run on another board: AlphaGateau's do between the
    chess variants it knows (the paper's Gardner-to-chess fine-tuning), and a Go network with
    board heads between the sizes it lists (13x13 self-play from the 13x13-and-19x19 network)."""
    if net_config.architecture == "gateau":
        return trained.name in BOARDS and run.name in BOARDS
    return (net_config.heads == "board" and isinstance(trained, GoGame) and isinstance(run, GoGame)
            and trained.encoder_version == run.encoder_version
            and trained.size in net_config.board_sizes and run.size in net_config.board_sizes)


def remove_stale_temporaries(out: Path) -> list[Path]:
    """Delete the temporary files that a process killed mid-write left in the run folder
    ``out`` (`klent.engine.files.atomic_target` names them ``.NAME.RANDOM.tmp`` + NAME's suffix, e.g.
    ``.checkpoint.pt.k2j4x9q1.tmp.pt``); returns them.  Only while no process of the run is
    writing: when a run starts or resumes."""
    stale = [
        path
        for folder in (out, out / SNAPSHOTS)
        for pattern in (".*.tmp", ".*.tmp.*")
        for path in folder.glob(pattern)
        if path.is_file()
    ]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def process_state(rng: np.random.Generator, games: dict[str, Any], model: torch.nn.Module) -> dict[str, Any]:
    """What one process alone knows: its random number generators and its running games, plus
    a hash of its weights (DDP keeps them identical; rank 0 checks that it did)."""
    return {"rng": rng_state(rng), "games": games, "weights_sha256": weights_hash(model)}


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
    """Restore `rng_state`'s generators.  The states are byte tensors that torch wants on the
    CPU, and a checkpoint read onto a GPU (``map_location``) has moved them there."""
    torch.set_rng_state(state["torch"].cpu())
    rng.bit_generator.state = state["numpy"]
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([generator.cpu() for generator in state["cuda"]])


def weights_hash(model: torch.nn.Module) -> str:
    """SHA-256 of every parameter and buffer, in state-dict order."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()
