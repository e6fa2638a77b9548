"""This process's place in a ``torchrun`` job, its device, and what the ranks agree on.

Under ``torchrun`` (RANK / WORLD_SIZE in the environment) every process joins a process group
(gloo on CPU, NCCL on CUDA).  The collective helpers are methods of `Distributed`, and each is a
no-op when a process trains alone, so the training loop reads the same either way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist


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

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()

    def broadcast_buffers(self, model: torch.nn.Module) -> None:
        """Give every rank rank 0's batch-norm statistics.  DDP broadcasts them before each
        forward pass, but the last minibatch of an iteration leaves each rank with statistics of
        its own data, and self-play must run the same network everywhere."""
        if self.enabled:
            for buffer in model.buffers():
                dist.broadcast(buffer, src=0)

    def agree(self, flag: bool) -> bool:
        """Rank 0's decision, so that every rank stops after the same iteration."""
        if not self.enabled:
            return flag
        box = [flag]
        dist.broadcast_object_list(box, src=0)
        return bool(box[0])

    def sum(self, values: list[float]) -> list[float]:
        """Each of ``values`` summed over the ranks."""
        if not self.enabled:
            return [float(v) for v in values]
        tensor = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(tensor)
        return tensor.tolist()

    def mean(self, values: dict[str, float]) -> dict[str, float]:
        """Each of ``values`` averaged over the ranks (every rank must give the same names)."""
        if not self.enabled:
            return dict(values)
        names = sorted(values)
        totals = self.sum([values[n] for n in names])
        return {n: t / self.world_size for n, t in zip(names, totals)}

    def gather(self, state: dict[str, Any]) -> list[dict[str, Any]]:
        """Every rank's ``state``, in rank order."""
        if not self.enabled:
            return [state]
        gathered: list[Any] = [None] * self.world_size
        dist.all_gather_object(gathered, state)
        return gathered

    def close(self) -> None:
        if self.enabled:
            dist.destroy_process_group()


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
