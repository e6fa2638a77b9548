"""What the training loop needs of an algorithm, and the algorithms it knows.

Each algorithm is one module that reads top to bottom (CleanRL's habit): how an iteration's
samples are collected, their targets computed, and the loss that fits the network to them --
`klent.training.klent_rl` (KLENT self-play), `klent.training.gumbel_az` (the Gumbel AlphaZero baseline) and
`klent.training.distill` (a teacher's labelled positions).  The loop (`klent.training.trainer`) owns
everything the algorithms share: the network and optimiser, the game slots that self-play
continues across iterations, fitting, export, evaluation and checkpoints.  Adding an algorithm
means writing such a module and naming it in `build_algorithm`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import torch

from klent.engine.network import EncodedEvaluator, Evaluator
from klent.training.fitting import Batch, Loss
from klent.training.nets import NetOutputs
from klent.training.selfplay import GameSlots, Samples

if TYPE_CHECKING:
    from klent.engine.games.base import Game
    from klent.training.config import TrainConfig


class SelfPlayNetwork(Evaluator, EncodedEvaluator, Protocol):
    """The network self-play asks, by states (search) or by encoded batches (reactive moves):
    `klent.training.torch_evaluator.TorchEvaluator` or `klent.engine.network.OnnxEvaluator`."""


class Algorithm(Protocol):
    """A training algorithm as the loop runs it."""

    plays_games: bool  # its samples come from playing the run's games with the current network

    def collect(self, slots: GameSlots, network: Callable[[], SelfPlayNetwork], iteration: int) -> Samples:
        """This process's samples for iteration ``iteration`` (0-based).  Self-play continues
        the games in ``slots``; ``network()`` opens the current network, only when asked (a
        distillation never plays)."""
        ...

    def loss(self, outputs: NetOutputs, batch: Batch) -> Loss:
        """The loss of a minibatch of samples."""
        ...

    def validate(self, model: torch.nn.Module, device: torch.device) -> dict[str, float]:
        """Metrics of the network beyond match play, logged when the run evaluates (empty for
        self-play, which has no held-out data)."""
        ...

    def provenance(self) -> dict[str, str]:
        """What a model file says about how it was trained: ``algorithm``, and where the
        knowledge came from when it came from outside."""
        ...


def build_algorithm(
    config: TrainConfig, game: Game, rank: int, world_size: int, progress: bool, device: torch.device
) -> Algorithm:
    """The algorithm ``config.algo`` of a run, for process ``rank`` of ``world_size`` (whose
    networks live on ``device``)."""
    ownership_targets = config.ownership_head or config.score_head
    if config.kl_reference == "init" and not (config.algo == "klent" and config.init):
        raise ValueError('[klent] kl_reference = "init" needs a KLENT run started from a network (--init)')
    if config.algo == "klent":
        from klent.training.checkpoint import initial_weights, weights_hash
        from klent.training.klent_rl import Klent
        from klent.training.nets import build_net
        from klent.training.torch_evaluator import TorchEvaluator

        reference, reference_sha256 = None, ""
        if config.kl_reference == "init":  # the start's network, frozen for the whole run
            model = build_net(game, config.net_config())
            model.load_state_dict(initial_weights(config.init, game, config.net_config()))
            reference, reference_sha256 = TorchEvaluator(model, game, device), weights_hash(model)
        teacher = None
        if config.distill.data:  # a teacher's labels beside the games: their action values anchor Q
            from klent.training.distill import Distill

            teacher = Distill.load(config.distill, game, config.seed, rank, world_size, progress)
        return Klent(
            config.klent_config(), config.preset, config.selfplay.steps,
            config.selfplay.resign_threshold, ownership_targets, reference, reference_sha256,
            teacher,
        )
    if config.algo == "gumbel-az":
        from klent.training.gumbel_az import GumbelAZ  # klent.engine.search is needed only by this baseline

        return GumbelAZ(config.gumbel_az_config(), config.selfplay.steps)
    from klent.training.distill import Distill

    return Distill.load(config.distill, game, config.seed, rank, world_size, progress, tuple(config.board_sizes))
