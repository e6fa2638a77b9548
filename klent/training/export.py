"""Torch network (`KlentNet`, or `GateauNet` of klent/training/gateau.py) -> ONNX model file, the
format the engine plays with.

The file has the input, outputs and metadata that `klent.engine.network` defines (DESIGN.md, "Model
files"): input ``obs`` float32[B, C, H, W] with a dynamic batch axis, outputs
``policy_logits``, ``action_values`` and, for a model with those heads, ``state_value``,
``ownership`` and ``score``; the
metadata props ``klent.game``, ``klent.encoder``, ``klent.arch`` (`NetConfig.arch`, e.g.
``resnet-6x64`` or ``gateau-6x64``) and ``klent.training`` (JSON).
The engine reads the metadata to refuse a model trained for another game or encoder.

The export uses torch's ``torch.export``-based ONNX exporter (the default since torch 2.9; the
TorchScript one is deprecated).
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import json
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from klent.engine.files import atomic_target
from klent.engine.games.base import Game
from klent.engine.games.go import MAX_SIZE, MIN_SIZE
from klent.engine.network import (
    ACTION_VALUE_OUTPUT,
    INPUT_NAME,
    META_ARCH,
    META_BOARD_SIZES,
    META_ENCODER,
    META_GAME,
    META_TRAINING,
    OWNERSHIP_OUTPUT,
    POLICY_OUTPUT,
    SCORE_OUTPUT,
    STATE_VALUE_OUTPUT,
)
from klent.training.nets import KlentNet

if TYPE_CHECKING:
    from klent.training.gateau import GateauNet

# ONNX opset of exported models: new enough for everything the network uses, old enough for
# every onnxruntime that pyproject.toml allows (>= 1.17 runs opsets up to 20).
OPSET = 18


class _PresentOutputs(nn.Module):
    """``KlentNet`` with its absent heads dropped: an ONNX graph cannot output None."""

    def __init__(self, model: KlentNet | GateauNet) -> None:
        super().__init__()
        self.model = model

    def forward(self, obs: Tensor) -> tuple[Tensor, ...]:
        return tuple(t for t in self.model(obs) if t is not None)


def output_names(model: KlentNet | GateauNet) -> list[str]:
    """The ONNX output names of ``model``, in the order `KlentNet.forward` returns them."""
    config = model.config
    present = (True, config.action_value_head, config.value_head, config.ownership_head, config.score_head)
    names = (POLICY_OUTPUT, ACTION_VALUE_OUTPUT, STATE_VALUE_OUTPUT, OWNERSHIP_OUTPUT, SCORE_OUTPUT)
    return [name for name, there in zip(names, present) if there]


def export_onnx(
    model: KlentNet | GateauNet,
    game: Game,
    path: str | Path,
    training_info: dict[str, str] | None = None,
) -> None:
    """Write ``model`` (trained for ``game``) to ``path`` as a klent ONNX model, atomically.

    ``training_info`` (algorithm, simulator evaluations, ...) goes into ``klent.training``; the
    export date is added unless given.  A Go network with board heads (`NetConfig.heads` =
    "board") is exported with dynamic board axes and serves its ``board_sizes``
    (``klent.board_sizes``; none given: ``game``'s size alone).  The caller's model is not modified (a CPU copy in eval
    mode is exported).  A model with NaN or infinite weights (a diverged training run) is
    refused: every engine search with it would fail at its first move.
    """
    if tuple(model.observation_shape) != tuple(game.observation_shape) or (
        model.num_actions != game.num_actions
    ):
        raise ValueError(f"the network is not shaped for {game.name}")
    for name, tensor in model.state_dict().items():  # parameters and batch-norm statistics
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ValueError(f"the network's {name} is not finite (NaN or infinite): not exported")
    info = {"date": datetime.date.today().isoformat(), **(training_info or {})}
    wrapped = _PresentOutputs(copy.deepcopy(model).cpu()).eval()
    # Batch 2, not 1: torch.export specialises a dimension whose example size is 1.
    example = torch.zeros((2, *game.observation_shape), dtype=torch.float32)
    axes: dict[int, torch.export.Dim] = {0: torch.export.Dim("batch")}
    meta = {}
    if model.config.heads == "board":
        sizes = sorted(set(model.config.board_sizes or [game.observation_shape[1]]))
        if not all(isinstance(size, int) and MIN_SIZE <= size <= MAX_SIZE for size in sizes):
            raise ValueError(f"Go board sizes are {MIN_SIZE}..{MAX_SIZE}, not {sizes}")
        side = torch.export.Dim("side", min=2, max=MAX_SIZE)  # square boards: one axis for both
        axes.update({2: side, 3: side})
        meta[META_BOARD_SIZES] = json.dumps(sizes)
    with _quiet_exporter():
        program = torch.onnx.export(
            wrapped,
            (example,),
            dynamo=True,
            input_names=[INPUT_NAME],
            output_names=output_names(model),
            dynamic_shapes=(axes,),
            opset_version=OPSET,
            verbose=False,
        )
    assert program is not None
    program.model.metadata_props.update(
        {
            META_GAME: game.name,
            META_ENCODER: str(game.encoder_version),
            META_ARCH: model.config.arch,
            META_TRAINING: json.dumps(info, sort_keys=True),
            **meta,
        }
    )
    with atomic_target(path) as tmp:
        program.save(tmp)


@contextlib.contextmanager
def _quiet_exporter() -> Iterator[None]:
    """Silence the exporter's warnings (missing torchvision ops, deprecations) for users."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)
