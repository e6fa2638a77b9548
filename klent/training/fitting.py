"""Fitting a network to one iteration's samples: minibatches, board symmetries, precision.

Every algorithm's loss goes through `fit` (one or more shuffled passes of Adam steps); Go's
ownership and score targets are added to any of them by `with_auxiliary`.  A non-finite loss
stops the run (`TrainingDiverged`) before its update could spread NaN into every weight.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from klent.engine.games.symmetry import dihedral
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
