"""The heads of a `klent.training.nets.KlentNet`: what it reads off its trunk's features.

Every head starts with a 1x1 convolution to a few planes, flattens them and ends in
fully-connected layers, as in AlphaZero.  The action heads end in one fully-connected layer to
``game.num_actions`` outputs for every game, so one code path serves Go (size*size + 1 with
pass), chess (4672 = 64 x 73) and any future game without knowing how its actions map onto
squares.  A convolutional 73-plane chess policy head would save about 0.6M parameters per action
head, but it would tie this module to the chess encoder's square order; the fully-connected head
costs little time (about 4% of the multiply-adds of a 6 x 64 chess net) and learns the mapping.
The paper says only that its heads are multilayer perceptrons; these sizes are ours (at the
paper's 6 x 128 on 9x9 Go the whole net has 1.82M parameters, inside its 1.7M-2.1M range).

``heads = "board"`` (Go) replaces them with KataGo's fully convolutional heads (Wu 2019,
appendix A): each point's logit and action value from a 1x1 convolution, pass and the state
value and score from features pooled over the board (`BoardPooling`), so no layer depends on
the board's size and one network, exported with dynamic board axes, plays every size.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

# Planes of the 1x1 convolution that opens each action head (AlphaZero's policy head uses 2).
ACTION_HEAD_PLANES = 2


class ActionHead(nn.Module):
    """1x1 conv to a few planes, BN-ReLU, then one linear layer to one output per action."""

    def __init__(self, channels: int, board_points: int, num_actions: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, ACTION_HEAD_PLANES, 1, bias=False)
        self.bn = nn.BatchNorm2d(ACTION_HEAD_PLANES)
        self.fc = nn.Linear(ACTION_HEAD_PLANES * board_points, num_actions)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))


class PlaneHead(nn.Module):
    """Actions as convolution planes (lc0's policy head): 3x3 conv-BN-ReLU, then a 1x1 conv to
    ``planes`` planes, read point-major (action = point * planes + plane, `Game.action_planes`).

    Each move is scored by features at its from-square, with weights shared across squares:
    for chess 4,672 outputs from a few thousand weights instead of 600k, and a move's logit no
    longer has to squeeze through the 128 features of the fully-connected head.
    """

    def __init__(self, channels: int, planes: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(channels)
        self.out = nn.Conv2d(channels, planes, 1)

    def forward(self, x: Tensor) -> Tensor:
        y = self.out(torch.relu(self.bn(self.conv(x))))  # [B, planes, H, W]
        return y.permute(0, 2, 3, 1).flatten(1)


class ValueHead(nn.Module):
    """AlphaZero's value head: 1x1 conv to one plane, BN-ReLU, FC-ReLU, FC, tanh."""

    def __init__(self, channels: int, board_points: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(1)
        self.fc1 = nn.Linear(board_points, channels)
        self.fc2 = nn.Linear(channels, 1)

    def raw(self, x: Tensor) -> Tensor:
        """The output before the tanh, [B]."""
        y = torch.relu(self.bn(self.conv(x))).flatten(1)
        return self.fc2(torch.relu(self.fc1(y))).squeeze(1)

    def forward(self, x: Tensor) -> Tensor:
        return torch.tanh(self.raw(x))


class OwnershipHead(nn.Module):
    """1x1 conv to 1 plane: each point's final owner, +1 = the side to move (tanh outside)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, 1, 1)

    def forward(self, x: Tensor) -> Tensor:
        return self.conv(x).squeeze(1)


class ScoreHead(ValueHead):
    """The value head's shape without the tanh: the final score in points (side to move's
    view).  The output is scaled by the board's points, so the layers work in units of "the
    whole board" whatever its size."""

    def __init__(self, channels: int, board_points: int) -> None:
        super().__init__(channels, board_points)
        self.points = float(board_points)

    def forward(self, x: Tensor) -> Tensor:
        return self.raw(x) * self.points


class BoardPooling(nn.Module):
    """KataGo's pooling of a head's features over the board: per channel the mean, the mean
    scaled by the board's width, (sqrt(points) - 14) / 10, and the max -- [B, 3 * channels].
    The width term lets one set of weights read a 9x9 and a 19x19 board differently."""

    def forward(self, x: Tensor) -> Tensor:
        mean = x.mean(dim=(2, 3))
        points = torch.ones_like(x[:, :1]).sum(dim=(2, 3))  # [B, 1]; traced with dynamic board axes
        return torch.cat([mean, mean * (points.sqrt() - 14.0) / 10.0, x.amax(dim=(2, 3))], dim=1)


def board_points(x: Tensor) -> Tensor:
    """The number of points of ``x``'s board, [B]; `BoardPooling`'s way, so it exports with dynamic axes."""
    return torch.ones_like(x[:, 0]).sum(dim=(1, 2))


class BoardActionHead(nn.Module):
    """KataGo's policy head, for Go on any board: one output per point and one for pass.

    A 1x1 convolution gives ``head`` feature planes; a second set is pooled over the board
    (`BoardPooling`) and biases them per channel (what the whole board says about each point:
    who leads, ko threats), then BN-ReLU and a 1x1 convolution give each point's output; pass
    comes from the pooled features alone.  Point outputs are read row-major, then pass: Go's
    action layout.
    """

    def __init__(self, channels: int) -> None:
        super().__init__()
        head = max(1, channels // 2)
        self.points = nn.Conv2d(channels, head, 1, bias=False)
        self.pooled = nn.Conv2d(channels, head, 1, bias=False)
        self.pooled_bn = nn.BatchNorm2d(head)
        self.pool = BoardPooling()
        self.bias = nn.Linear(3 * head, head)
        self.bn = nn.BatchNorm2d(head)
        self.out = nn.Conv2d(head, 1, 1)
        self.pass_out = nn.Linear(3 * head, 1)

    def forward(self, x: Tensor) -> Tensor:
        g = self.pool(torch.relu(self.pooled_bn(self.pooled(x))))
        y = self.points(x) + self.bias(g)[:, :, None, None]
        board = self.out(torch.relu(self.bn(y))).flatten(1)
        return torch.cat([board, self.pass_out(g)], dim=1)


class PooledValueHead(nn.Module):
    """KataGo's value head, for any board: 1x1 conv, BN-ReLU, `BoardPooling`, FC-ReLU, FC."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        head = max(1, channels // 2)
        self.conv = nn.Conv2d(channels, head, 1, bias=False)
        self.bn = nn.BatchNorm2d(head)
        self.pool = BoardPooling()
        self.fc1 = nn.Linear(3 * head, channels)
        self.fc2 = nn.Linear(channels, 1)

    def raw(self, x: Tensor) -> Tensor:
        """The output before the tanh, [B]."""
        g = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.fc2(torch.relu(self.fc1(g))).squeeze(1)

    def forward(self, x: Tensor) -> Tensor:
        return torch.tanh(self.raw(x))


class PooledScoreHead(PooledValueHead):
    """`PooledValueHead`'s shape without the tanh, scaled by the board's points (as `ScoreHead`)."""

    def forward(self, x: Tensor) -> Tensor:
        return self.raw(x) * board_points(x)
