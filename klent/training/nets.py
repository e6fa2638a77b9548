"""The network family of the KLENT paper, and its training checkpoints.

A pre-activation ResNet (ResNet v2, He et al. 2016) trunk feeds up to three heads (KLENT paper,
appendix C and Table 3):

* policy head: A logits;
* action-value head: A values Q(s, a) in [-1, 1] (tanh) -- KLENT models have policy + this;
* state-value head: one value V(s) in [-1, 1] (tanh) -- the Gumbel AlphaZero baseline has
  policy + this instead;
* Go's dense targets (KataGo, Wu 2019): an ownership head (each point's final owner in
  [-1, 1], tanh) and a score head (the final area score in points, komi included), trained as
  auxiliary targets; both from the view of the side to move.

Optionally some residual blocks carry KataGo's global pooling (`GlobalPoolBlock`): the mean
and max of a few channels over the board bias the others, so that a local pattern can depend
on the whole board (ko threats, who is ahead) at the cost of a few thousand weights.

The heads are `klent.training.heads`.

Values are from the view of the side to move, like everything in klent.  Outputs are raw:
illegal actions are masked by the evaluators (`klent.training.torch_evaluator`, `klent.engine.network`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import torch
from torch import Tensor, nn

import klent.engine.games
from klent.engine.files import atomic_target, check_size
from klent.engine.games.base import Game
from klent.engine.network import ModelMismatchError
from klent.training.heads import (
    ActionHead,
    BoardActionHead,
    OwnershipHead,
    PlaneHead,
    PooledScoreHead,
    PooledValueHead,
    ScoreHead,
    ValueHead,
)

if TYPE_CHECKING:
    from klent.training.gateau import GateauNet

# Network families: "resnet" is `KlentNet`, "gateau" the graph network of `klent.training.gateau`.
ARCHITECTURES = ("resnet", "gateau")

# Action and value heads of a `KlentNet` (`NetConfig.heads`).
HEADS = ("fc", "conv", "board")

# Keys of a checkpoint that `save_checkpoint` owns; everything else is the caller's.
_RESERVED_KEYS = frozenset({"model", "net_config", "game", "encoder_version"})
# The largest checkpoint read, as a file and inflated: a chess run's checkpoint.pt (the 8x96 net,
# optimiser and all) is 19 MB, so a net fifty times its size would still fit.  Listing a zip's
# members to sum them costs about 600 bytes each: a file of this size that is all index, GBs.
MAX_CHECKPOINT_BYTES = 1 << 30

# Exact types (numpy scalars subclass float but do not load with weights_only=True).
_PLAIN_TYPES = frozenset({str, int, float, bool, type(None)})


@dataclass(frozen=True)
class NetConfig:
    """Size and heads of a `KlentNet`.  The paper uses 6 blocks x 128 channels.

    ``architecture = "gateau"`` builds AlphaGateau (`klent.training.gateau.GateauNet`) instead, for
    chess variants: ``blocks`` residual GATEAU blocks of ``channels`` features per node and
    edge, with the same policy, action-value and state-value heads read off the graph.
    """

    blocks: int = 6
    channels: int = 64
    value_head: bool = False  # True for the Gumbel AlphaZero baseline (policy + state value)
    action_value_head: bool = True  # False for the Gumbel AlphaZero baseline
    # "fc": AlphaZero's heads (1x1 conv to 2 planes, one linear layer to every action), any game;
    # "conv": `PlaneHead`, actions as convolution planes, for games with `Game.action_planes`;
    # "board": KataGo's heads for Go (`BoardActionHead`, `PooledValueHead`), any board size.
    heads: str = "fc"
    ownership_head: bool = False  # each point's final owner, [B, H, W] (Go)
    score_head: bool = False  # the final score in points, [B] (Go)
    global_pooling: bool = False  # every second residual block is a `GlobalPoolBlock`
    architecture: str = "resnet"  # one of ARCHITECTURES (last: callers pass the sizes by position)
    board_sizes: tuple[int, ...] = ()  # board heads: the Go sizes it is trained for and its model serves

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"network architecture is one of {', '.join(ARCHITECTURES)}, not {self.architecture!r}")
        if self.architecture == "gateau" and (
            self.heads != "fc" or self.ownership_head or self.score_head or self.global_pooling
        ):
            # Its heads read edges and nodes; Go's dense heads and KataGo's pooling are ResNet parts.
            raise ValueError(
                "the gateau network has its own heads: no heads, ownership, score or global pooling settings"
            )
        object.__setattr__(self, "board_sizes", tuple(self.board_sizes))  # a TOML list, frozen
        if self.board_sizes and self.heads != "board":
            raise ValueError("only a network with board heads (heads = \"board\") serves several board sizes")
        if self.heads not in HEADS:
            raise ValueError(f"network heads are one of {', '.join(map(repr, HEADS))}, not {self.heads!r}")
        if self.blocks < 0 or self.channels < 1:
            raise ValueError(f"a network needs blocks >= 0 and channels >= 1, not {self}")
        if not (self.value_head or self.action_value_head):
            # Without either head a search could not value a position at all.
            raise ValueError("a network needs a state-value head, an action-value head or both")

    @property
    def arch(self) -> str:
        """Short architecture name stored in model files, e.g. ``"resnet-6x64"``
        (``"resnet-6x64-conv"`` with convolutional action heads, ``"gateau-6x64"`` for AlphaGateau)."""
        return (f"{self.architecture}-{self.blocks}x{self.channels}" + ("" if self.heads == "fc" else f"-{self.heads}")
                + ("-gpool" if self.global_pooling else ""))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NetConfig:
        """Inverse of `dataclasses.asdict`; unknown keys are an error, not silently dropped."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown network settings: {', '.join(sorted(unknown))}")
        return cls(**data)


class PreActBlock(nn.Module):
    """BN-ReLU-conv, BN-ReLU-conv, plus the identity: the ResNet v2 residual block."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        y = self.conv1(torch.relu(self.bn1(x)))
        y = self.conv2(torch.relu(self.bn2(y)))
        return x + y


class GlobalPoolBlock(PreActBlock):
    """A `PreActBlock` whose first convolution's output is biased, per channel, by a linear map
    of the mean and the max over the board of its first ``channels // 4`` channels (KataGo's
    global pooling bias; table 2 of Wu 2019 credits global pooling with about 1.6x fewer
    evaluations to equal strength)."""

    def __init__(self, channels: int) -> None:
        super().__init__(channels)
        self.pooled = max(1, channels // 4)
        self.pool_bn = nn.BatchNorm2d(self.pooled)
        self.pool_fc = nn.Linear(2 * self.pooled, channels)

    def forward(self, x: Tensor) -> Tensor:
        y = self.conv1(torch.relu(self.bn1(x)))
        g = torch.relu(self.pool_bn(y[:, : self.pooled]))
        bias = self.pool_fc(torch.cat([g.mean(dim=(2, 3)), g.amax(dim=(2, 3))], dim=1))
        y = y + bias[:, :, None, None]
        y = self.conv2(torch.relu(self.bn2(y)))
        return x + y


class NetOutputs(NamedTuple):
    """What `KlentNet.forward` returns; a head the network lacks gives None."""

    policy_logits: Tensor  # [B, A], raw
    action_values: Tensor | None  # [B, A] in [-1, 1]
    state_value: Tensor | None  # [B] in [-1, 1]
    ownership: Tensor | None  # [B, H, W] in [-1, 1]
    score: Tensor | None  # [B], points

    def as_float(self) -> NetOutputs:
        """Every present output in float32 (after an autocast pass)."""
        return NetOutputs(*(None if t is None else t.float() for t in self))


class KlentNet(nn.Module):
    """ResNet v2 trunk with a policy head and the value heads chosen by ``config``."""

    def __init__(
        self, observation_shape: tuple[int, int, int], num_actions: int, config: NetConfig,
        action_planes: int | None = None,
    ) -> None:
        super().__init__()
        in_planes, height, width = observation_shape
        self.observation_shape = tuple(observation_shape)
        self.num_actions = num_actions
        self.config = config
        points = height * width
        self.stem = nn.Conv2d(in_planes, config.channels, 3, padding=1, bias=False)
        self.blocks = nn.Sequential(*(
            GlobalPoolBlock(config.channels) if config.global_pooling and i % 2 == 1 else PreActBlock(config.channels)
            for i in range(config.blocks)
        ))
        # Pre-activation blocks leave the sum un-normalised: normalise once before the heads.
        self.trunk_bn = nn.BatchNorm2d(config.channels)
        if config.heads == "conv":
            if action_planes is None or action_planes * points != num_actions:
                raise ValueError("convolutional heads need a game whose actions are planes over its board")

            def head() -> nn.Module:
                return PlaneHead(config.channels, action_planes)
        elif config.heads == "board":
            if num_actions != points + 1:
                raise ValueError("board heads are for Go: one action per point of the board, and pass")

            def head() -> nn.Module:
                return BoardActionHead(config.channels)
        else:
            def head() -> nn.Module:
                return ActionHead(config.channels, points, num_actions)
        self.policy_head = head()
        self.action_value_head = head() if config.action_value_head else None
        pooled = config.heads == "board"
        self.value_head: nn.Module | None = None
        if config.value_head:
            self.value_head = PooledValueHead(config.channels) if pooled else ValueHead(config.channels, points)
        self.ownership_head = OwnershipHead(config.channels) if config.ownership_head else None
        self.score_head: nn.Module | None = None
        if config.score_head:
            self.score_head = PooledScoreHead(config.channels) if pooled else ScoreHead(config.channels, points)

    def forward(self, obs: Tensor) -> NetOutputs:
        """The heads' outputs, raw and unmasked; values, ownership and score are from the view
        of the side to move."""
        x = torch.relu(self.trunk_bn(self.blocks(self.stem(obs))))
        return NetOutputs(
            self.policy_head(x),
            torch.tanh(self.action_value_head(x)) if self.action_value_head is not None else None,
            self.value_head(x) if self.value_head is not None else None,
            torch.tanh(self.ownership_head(x)) if self.ownership_head is not None else None,
            self.score_head(x) if self.score_head is not None else None,
        )


def build_net(game: Game, config: NetConfig) -> KlentNet | GateauNet:
    """A freshly initialised network shaped for ``game``, of ``config.architecture``."""
    if config.architecture == "gateau":
        from klent.training.gateau import GateauNet  # it builds on this module's NetConfig and NetOutputs

        return GateauNet(game, config)
    return KlentNet(game.observation_shape, game.num_actions, config, game.action_planes)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


@dataclass
class Checkpoint:
    """A loaded checkpoint: the network, its game and settings, and the caller's other keys."""

    model: KlentNet | GateauNet
    game: Game
    config: NetConfig
    extra: dict[str, Any]


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read or does not describe a `KlentNet`."""


def save_checkpoint(
    path: str | Path, model: KlentNet | GateauNet, game: Game, config: NetConfig, /, **extra: Any
) -> None:
    """Write ``model`` (and ``extra``: optimizer state, counters, ...) to ``path`` atomically.

    The file is written next to ``path`` and renamed over it, so a crash never leaves a torn
    checkpoint.  ``extra`` must hold tensors and plain Python values only (dicts, lists,
    numbers, strings): `load_checkpoint` reads with ``weights_only=True`` so that a checkpoint
    file cannot run code.  By convention the trainer stores ``training_info`` (a dict of
    strings: algorithm, simulator evaluations, ...) for `klent.training.export` to copy into models.
    """
    clash = _RESERVED_KEYS & set(extra)
    if clash:
        raise ValueError(f"checkpoint keys reserved for the network: {', '.join(sorted(clash))}")
    for key, value in extra.items():
        _check_plain(value, key)
    payload = {
        "model": model.state_dict(),
        "net_config": asdict(config),
        "game": game.name,
        "encoder_version": game.encoder_version,
        **extra,
    }
    with atomic_target(path) as tmp:
        torch.save(payload, tmp)


def _check_plain(value: Any, where: str) -> None:
    """Raise TypeError unless ``value`` is something ``torch.load(weights_only=True)`` reads.

    Checked when saving, so that a trainer learns about a numpy array in its state at once
    instead of when it tries to resume.
    """
    if isinstance(value, dict):
        for key, item in value.items():
            _check_plain(key, where)
            _check_plain(item, f"{where}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_plain(item, f"{where}[{i}]")
    elif not (isinstance(value, torch.Tensor) or type(value) in _PLAIN_TYPES):
        raise TypeError(
            f"checkpoint entry {where} is a {type(value).__name__}; store tensors, numbers, "
            "strings, lists and dicts only"
        )


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> Checkpoint:
    """Read a checkpoint written by `save_checkpoint`.

    Raises FileNotFoundError for a missing file, `CheckpointError` for a file that is not a
    klent checkpoint (one larger than `MAX_CHECKPOINT_BYTES`, whole or inflated, refused before
    torch reads it), and `ModelMismatchError` when the game's encoder has changed since the
    checkpoint was trained (its observations would be misread).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint file {str(path)!r}")
    try:
        check_size(path, MAX_CHECKPOINT_BYTES)
    except ValueError as error:
        raise CheckpointError(str(error)) from None
    try:
        payload = torch.load(path, map_location=device, weights_only=True)
    except Exception as error:  # torch raises many types for a corrupt file, RecursionError too
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        if reason.startswith("Weights only load failed"):
            reason = "it holds objects other than tensors and plain values"
        raise CheckpointError(f"{path}: corrupt or not a checkpoint ({reason})") from None
    if not isinstance(payload, dict) or not _RESERVED_KEYS <= set(payload):
        raise CheckpointError(f"{path}: not a klent checkpoint (missing network keys)")
    try:
        config = NetConfig.from_dict(payload["net_config"])
        game = klent.engine.games.get(payload["game"])
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{path}: {error}") from None
    try:
        game = game.with_encoder(payload["encoder_version"])
    except ValueError:
        raise ModelMismatchError(
            f"{path} was trained with {game.name} encoder version {payload['encoder_version']}, "
            f"but this klent encodes {game.name} with version {game.encoder_version}"
        ) from None
    model = build_net(game, config).to(device)
    try:
        model.load_state_dict(payload["model"])
    except (RuntimeError, TypeError) as error:  # TypeError: "model" is no dict
        first_line = str(error).splitlines()[0]
        raise CheckpointError(f"{path}: weights do not fit the network ({first_line})") from None
    extra = {k: v for k, v in payload.items() if k not in _RESERVED_KEYS}
    return Checkpoint(model=model, game=game, config=config, extra=extra)
