"""Fitting a network to one iteration's samples: minibatches, board symmetries, precision.

Every algorithm's loss goes through `fit` (one or more shuffled passes of Adam steps); Go's
ownership and score targets are added to any of them by `with_auxiliary`.  A non-finite loss
stops the run (`TrainingDiverged`) before its update could spread NaN into every weight.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from klent.training.nets import NetOutputs
from klent.training.ownership import auxiliary_loss
from klent.training.selfplay import Samples

# A minibatch of `Samples` fields as tensors, and what a loss returns: the loss to minimise and
# its parts (detached) for the metrics log.
Batch = dict[str, torch.Tensor]
Loss = tuple[torch.Tensor, dict[str, torch.Tensor]]
LossFn = Callable[[NetOutputs, Batch], Loss]


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite (a learning rate too high, most often).

    Raised before the optimiser step that would spread it into every weight, so the iteration
    writes nothing and the run folder keeps its last good checkpoint.  (Under torchrun the rank
    that sees it fails, and torchrun ends the others.)
    """


def with_auxiliary(loss_fn: LossFn, ownership_weight: float, score_weight: float) -> LossFn:
    """``loss_fn`` plus Go's weighted ownership and score losses (`klent.training.ownership`)."""

    def loss(outputs: NetOutputs, batch: Batch) -> Loss:
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

    Minibatches are gathered where the samples are kept (`_keep`): on a GPU when the
    iteration's samples fit in a quarter of its free memory, so that the host gathers nothing,
    else on the host, moved one at a time, so that an iteration's samples (millions on the
    paper's setup) never have to fit in GPU memory.  With ``symmetries`` (a `Game.symmetries`
    table) each minibatch is replaced by its image under a random one, turned where the network
    runs.  With
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
    kept = _keep(fields, device)
    where = kept["obs"].device
    tables = None if symmetries is None or len(symmetries) <= 1 else torch.from_numpy(symmetries).to(device)
    totals: dict[str, float] = {}
    steps = 0
    for _ in range(epochs):
        order = torch.randperm(len(samples))
        for start in range(0, len(order), batch_size):
            index = order[start : start + batch_size].to(where)
            batch = {k: v[index].to(device) for k, v in kept.items()}
            if tables is not None:  # turned where the network runs
                chosen = int(torch.randint(len(tables), ()).item())
                batch = symmetry_image(batch, chosen, tables[chosen])
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


def _keep(fields: dict[str, np.ndarray], device: torch.device) -> Batch:
    """The training fields as tensors where minibatches are gathered: on ``device`` when it is a
    GPU with four times their size free, else on the host (without a copy)."""
    if device.type == "cuda":
        size = sum(array.nbytes for array in fields.values())
        if 4 * size <= torch.cuda.mem_get_info(device)[0]:
            return {k: torch.from_numpy(v).to(device) for k, v in fields.items()}
    return {k: torch.from_numpy(v) for k, v in fields.items()}


def symmetry_image(batch: Batch, index: int, permutation: torch.Tensor) -> Batch:
    """A minibatch's training fields as they read on the board turned by symmetry ``index``
    (`klent.engine.games.symmetry.dihedral`, on the tensors' own device).

    ``permutation[a]`` is the image of action ``a``, so per-action columns move to their image
    (``new[:, permutation[a]] = old[:, a]``) and taken actions are mapped; per-point columns
    (ownership) move with the point's action; values and scores do not change.
    """
    inverse = torch.argsort(permutation)
    per_action = {k: batch[k].index_select(1, inverse) for k in ("masks", "policy", "q_targets") if k in batch}
    if "ownership" in batch:
        points = batch["ownership"].shape[1]  # the board points are the first actions
        per_action["ownership"] = batch["ownership"].index_select(1, inverse[:points])
    obs = torch.rot90(batch["obs"], index % 4, dims=(-2, -1))
    if index >= 4:
        obs = torch.flip(obs, dims=(-1,))
    return {**batch, **per_action, "obs": obs.contiguous(), "actions": permutation[batch["actions"]]}
