"""AlphaGateau (Rigaux & Kashima 2024): one graph network that plays chess on any board.

A position is a graph whose nodes are the squares and whose edges are AlphaZero's moves: every
action ``from_square * planes + plane`` that lands on the board is one directed edge from its
from-square to its to-square (1,858 edges on 8x8 chess, 455 on 5x5 Gardner chess; the 73 or 49
planes are laid out the same way on both boards, see `klent.engine.games.chess` and
`klent.engine.games.gardner`).  Everything is in the side to move's frame, as the observation and
the actions already are, so the graph is one constant per board size, not per colour.

Node features (`NODE_FEATURES` = 119 per square, the paper's table 1) are the game's own
observation planes, mapped onto one layout that both encoders fit:

* 0..111: the 8 positions of the history, 14 planes each (own P N B R Q K, the opponent's
  six, two repetition planes) -- identical in both encoders;
* 112: colour (1 when Black is to move) -- identical;
* 113..116: own kingside / queenside and the opponent's kingside / queenside castling rights
  -- chess's planes 113..116; zeros on Gardner, which has no castling (the paper does the same);
* 117: plies since the start of the game / 512 -- chess's plane 117; Gardner's plane 113 is
  plies / 256, so it enters halved: the same feature means the same number of plies on both
  boards (Gardner games are capped at 256 plies, so its cap at 1.0 is never the difference);
* 118: plies without capture or pawn move / 100 -- chess's 118, Gardner's 114.

The mapping is a constant matrix per board (`BoardRules.node_planes`), so the network reads
the game's usual ``obs`` input and the model file keeps the engine's interface.

Edge features (`EDGE_FEATURES` = 15, the paper's table 2): whether the move is legal here,
its file and rank steps, the piece a pawn would promote to (knight, bishop, rook, queen),
whether an own / opponent pawn, a knight, bishop, rook or queen, an own / opponent king could
make this move.  All but the first are constants of the board.  The paper reads legality off
the environment; a klent model sees only ``obs``, so the network computes the flag from the
observation's current piece planes: the move's piece is the side to move's, its path is empty,
its destination holds no own piece (pawns: empty ahead, an opponent piece on a diagonal;
castling: the right is held and the squares between king and rook are empty).  That is
pseudo-legality: it ignores checks and pins, and en passant (not in the observation's current
planes) is never flagged.  The engine masks illegal actions after the network anyway.

GATEAU layer (eqs. 4-6): ``g'_ij = Wu h_i + We g_ij + Wv h_j``; attention over a node's
out-edges ``alpha_ij = softmax_j(LeakyReLU(a . g'_ij))``; ``h'_i = W0 h_i + sum_j alpha_ij
(Wh h_j + Wg g_ij)``.  The softmax runs over a dense table of each node's out-edges (padded to
the largest degree), so the whole network is gathers, matrix products and a softmax: plain
PyTorch that the ONNX exporter writes without scatter operators or torch_geometric.

Heads (figures 3 and 4): the policy logits and KLENT's action values (tanh) each come from
edge features through BN-ReLU, a linear layer, BN-ReLU and a linear layer to one number per
edge, scattered onto the game's action vector (actions off the board get 0; the evaluators
mask them as illegal); the state value pools node features by attention.  The parameters do
not depend on the board: the graph is held in non-persistent buffers, rebuilt for each game,
so a state dict trained on Gardner loads into an 8x8 chess network unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from klent.engine.games.base import Game
from klent.training.nets import NetConfig, NetOutputs

NODE_FEATURES = 119
EDGE_FEATURES = 15
PIECE_PLANES = 6  # P N B R Q K of one side in the observation's current position
COLOUR = 112
CASTLING = (113, 114, 115, 116)  # own kingside, own queenside, opponent's kingside, queenside
MOVE_COUNT = 117
NO_PROGRESS = 118

# Direction order of the queen-like planes and the knight planes, shared by both encoders.
QUEEN_DIRECTIONS = ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1))
KNIGHT_STEPS = ((2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2), (1, -2), (2, -1))
UNDERPROMOTIONS = 3  # knight, bishop, rook, each straight or capturing towards either side
KING_FILE = 4  # both boards put the kings on the e-file

# Columns of the static edge features (the legality flag is column 0 of the full vector).
STEP_FILE, STEP_RANK = 0, 1
PROMOTION = slice(2, 6)  # knight, bishop, rook, queen
OWN_PAWN, OPPONENT_PAWN = 6, 7
PIECE_CAPABLE = slice(8, 12)  # knight, bishop, rook, queen
OWN_KING, OPPONENT_KING = 12, 13
STATIC_FEATURES = EDGE_FEATURES - 1

# Attention score of the padding of a node's out-edge table: exp() of it is exactly 0.
_NO_EDGE = -1e9


@dataclass(frozen=True)
class BoardRules:
    """What the graph needs to know about a chess variant beyond its action encoding."""

    size: int
    pawn_double_step: bool
    castling: bool
    node_planes: tuple[tuple[int, int, float], ...]  # (observation plane, node feature, scale)


def _shared_planes() -> tuple[tuple[int, int, float], ...]:
    """History and colour: the planes that both encoders lay out alike (0..112)."""
    return tuple((plane, plane, 1.0) for plane in range(COLOUR + 1))


BOARDS: dict[str, BoardRules] = {
    "chess": BoardRules(8, True, True, _shared_planes() + tuple((p, p, 1.0) for p in range(113, 119))),
    # Gardner: 113 = plies / 256 (halved into chess's plies / 512), 114 = no-progress / 100.
    "gardner": BoardRules(5, False, False, _shared_planes() + ((113, MOVE_COUNT, 0.5), (114, NO_PROGRESS, 1.0))),
}


@dataclass(frozen=True)
class MoveGraph:
    """The move graph of one board, in the side to move's frame (square = rank * size + file).

    Edge ``e`` is action ``action[e]`` from ``src[e]`` to ``dst[e]``; edges are in action
    order, so grouped by from-square.  The other arrays drive the pseudo-legality flag.
    """

    size: int
    num_actions: int
    src: np.ndarray  # int64[E]
    dst: np.ndarray  # int64[E]
    action: np.ndarray  # int64[E]
    static: np.ndarray  # float32[E, STATIC_FEATURES]
    path: np.ndarray  # int64[E, size - 2]: squares strictly between, padded with the square count
    pieces: np.ndarray  # float32[E, 5]: an own knight, bishop, rook, queen, king (one step) could move so
    pawn_push: np.ndarray  # float32[E]: an own pawn's move straight ahead (needs an empty destination)
    pawn_capture: np.ndarray  # float32[E]: an own pawn's diagonal step (needs an opponent's piece)
    castle_right: np.ndarray  # int64[E]: node feature of the castling right it needs, NODE_FEATURES if none
    castle_empty: np.ndarray  # int64[E]: a further square castling needs empty (b1), or the padding

    @property
    def num_nodes(self) -> int:
        return self.size * self.size

    @property
    def action_edge(self) -> np.ndarray:
        """int64[num_actions]: each action's edge, ``E`` (one past the last) for none."""
        table = np.full(self.num_actions, len(self.src), dtype=np.int64)
        table[self.action] = np.arange(len(self.src))
        return table

    @property
    def out_edges(self) -> np.ndarray:
        """int64[N, D]: each node's out-edges, padded with ``E`` to the largest degree D."""
        degree = np.bincount(self.src, minlength=self.num_nodes)
        table = np.full((self.num_nodes, degree.max()), len(self.src), dtype=np.int64)
        for node in range(self.num_nodes):
            edges = np.flatnonzero(self.src == node)
            table[node, : len(edges)] = edges
        return table


def move_graph(rules: BoardRules) -> MoveGraph:
    """The move graph of a board with AlphaZero's action layout: per from-square, 8 queen
    directions x (size - 1) distances, 8 knight steps, 3 underpromotions x 3 directions."""
    n = rules.size
    planes: list[tuple[int, int, int]] = []  # (rank step, file step, underpromotion piece or -1)
    planes += [(dr * dist, df * dist, -1) for dr, df in QUEEN_DIRECTIONS for dist in range(1, n)]
    planes += [(dr, df, -1) for dr, df in KNIGHT_STEPS]
    planes += [(1, df, piece) for piece in range(UNDERPROMOTIONS) for df in (-1, 0, 1)]
    rows: list[dict] = []
    for frm in range(n * n):
        rank, file = divmod(frm, n)
        for plane, (dr, df, under) in enumerate(planes):
            to_rank, to_file = rank + dr, file + df
            if not (0 <= to_rank < n and 0 <= to_file < n) or (under >= 0 and rank != n - 2):
                continue
            rows.append(_edge(rules, rank, file, dr, df, under, action=frm * len(planes) + plane))
    stacked = {key: np.array([row[key] for row in rows]) for key in rows[0]}
    return MoveGraph(
        size=n,
        num_actions=n * n * len(planes),
        src=stacked["src"].astype(np.int64),
        dst=stacked["dst"].astype(np.int64),
        action=stacked["action"].astype(np.int64),
        static=stacked["static"].astype(np.float32),
        path=stacked["path"].astype(np.int64).reshape(len(rows), n - 2),
        pieces=stacked["pieces"].astype(np.float32),
        pawn_push=stacked["pawn_push"].astype(np.float32),
        pawn_capture=stacked["pawn_capture"].astype(np.float32),
        castle_right=stacked["castle_right"].astype(np.int64),
        castle_empty=stacked["castle_empty"].astype(np.int64),
    )


def _edge(rules: BoardRules, rank: int, file: int, dr: int, df: int, under: int, action: int) -> dict:
    """One edge's constants: what could make the move, and what its legality depends on."""
    n = rules.size
    pad = n * n
    distance = max(abs(dr), abs(df))
    knight = abs(dr * df) == 2
    straight = dr == 0 or df == 0
    one_step = distance == 1 and not knight
    pawn_ranks = 1 <= rank <= n - 2  # a pawn never stands on either back rank
    own_push = pawn_ranks and df == 0 and (dr == 1 or (dr == 2 and rules.pawn_double_step and rank == 1))
    own_capture = pawn_ranks and dr == 1 and abs(df) == 1
    opponent_pawn = pawn_ranks and (
        (dr == -1 and abs(df) <= 1) or (dr == -2 and df == 0 and rules.pawn_double_step and rank == n - 2)
    )
    promotes = (own_push or own_capture) and rank + dr == n - 1
    castle = -1
    if rules.castling and dr == 0 and abs(df) == 2 and file == KING_FILE and rank in (0, n - 1):
        castle = (0 if rank == 0 else 2) + (0 if df > 0 else 1)  # index into CASTLING
    static = np.zeros(STATIC_FEATURES, dtype=np.float32)
    static[STEP_FILE], static[STEP_RANK] = df, dr
    if under >= 0:  # an underpromotion: only a pawn makes it, and nothing else is on this edge
        static[PROMOTION.start + under] = 1.0
        static[OWN_PAWN] = 1.0
        own_push, own_capture = df == 0, df != 0
    else:
        static[PROMOTION.start + 3] = promotes
        static[OWN_PAWN] = own_push or own_capture
        static[OPPONENT_PAWN] = opponent_pawn
        static[PIECE_CAPABLE] = (knight, not knight and not straight, not knight and straight, not knight)
        static[OWN_KING] = one_step or castle in (0, 1)
        static[OPPONENT_KING] = one_step or castle in (2, 3)
    path = [(rank + dr * step // distance) * n + file + df * step // distance for step in range(1, distance)]
    slides = under < 0 and not knight
    return {
        "src": rank * n + file,
        "dst": (rank + dr) * n + file + df,
        "action": action,
        "static": static,
        "path": (path if slides else []) + [pad] * (n - 2 - (len(path) if slides else 0)),
        "pieces": static[PIECE_CAPABLE].tolist()[:4] + [float(one_step)] if under < 0 else [0.0] * 5,
        "pawn_push": own_push,
        "pawn_capture": own_capture,
        # Only the side to move's castling is an action; the opponent's shows in the features.
        "castle_right": CASTLING[castle] if castle in (0, 1) else NODE_FEATURES,
        "castle_empty": rank * n + 1 if castle == 1 else pad,
    }


def rules_of(game: Game) -> BoardRules:
    """The board rules of ``game``; ValueError for a game that is not a chess variant."""
    rules = BOARDS.get(game.name)
    if rules is None:
        raise ValueError(f"the gateau network plays chess variants ({', '.join(BOARDS)}), not {game.name}")
    channels, height, width = game.observation_shape
    if (height, width) != (rules.size, rules.size) or max(p for p, _, _ in rules.node_planes) != channels - 1:
        raise ValueError(f"{game.name}'s observation {game.observation_shape} is not the layout gateau reads")
    return rules


def node_map(rules: BoardRules, channels: int) -> np.ndarray:
    """float32[channels, NODE_FEATURES]: observation planes -> shared node features."""
    matrix = np.zeros((channels, NODE_FEATURES), dtype=np.float32)
    for plane, feature, scale in rules.node_planes:
        matrix[plane, feature] = scale
    return matrix


def _norm(bn: nn.BatchNorm1d, x: Tensor) -> Tensor:
    """Batch norm over the feature axis of [B, items, K] (nodes or edges)."""
    return bn(x.flatten(0, 1)).view_as(x)


class Gateau(nn.Module):
    """One GATEAU layer (eqs. 4-6): updates edge features from both end nodes, then node
    features from their out-edges weighted by attention on the new edge features."""

    def __init__(self, width: int) -> None:
        super().__init__()
        # Named after the paper's matrices.  Six products, not one wide product split in four
        # and two: ONNX Runtime copies a split's parts, which cost more than the products saved.
        self.w_u, self.w_v, self.w_e, self.w_0, self.w_h, self.w_g = (
            nn.Linear(width, width, bias=False) for _ in range(6)
        )
        self.attention = nn.Parameter(torch.randn(width) / math.sqrt(width))  # a

    def forward(self, h: Tensor, g: Tensor, graph: GraphBuffers) -> tuple[Tensor, Tensor]:
        g_new = self.w_u(h).index_select(1, graph.src) + self.w_e(g) + self.w_v(h).index_select(1, graph.dst)
        # A product and a sum, not a matrix-vector product: ONNX Runtime runs the latter slowly.
        score = F.leaky_relu((g_new * self.attention).sum(-1), 0.2)  # [B, E]
        nodes, degree = graph.out_edges.shape
        score = F.pad(score, (0, 1), value=_NO_EDGE).index_select(1, graph.out_edges.flatten())
        alpha = torch.softmax(score.unflatten(1, (nodes, degree)), dim=-1)  # [B, N, D]
        message = F.pad(self.w_h(h).index_select(1, graph.dst) + self.w_g(g), (0, 0, 0, 1))
        message = message.index_select(1, graph.out_edges.flatten()).unflatten(1, (nodes, degree))
        h_new = self.w_0(h) + (alpha.unsqueeze(-1) * message).sum(dim=2)
        return h_new, g_new


class ResGateau(nn.Module):
    """(h, g) + GATEAU(BNR(GATEAU(BNR(h, g)))): AlphaZero's residual block on the graph (eq. 9)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.node_norms = nn.ModuleList([nn.BatchNorm1d(width), nn.BatchNorm1d(width)])
        self.edge_norms = nn.ModuleList([nn.BatchNorm1d(width), nn.BatchNorm1d(width)])
        self.layers = nn.ModuleList([Gateau(width), Gateau(width)])

    def forward(self, h: Tensor, g: Tensor, graph: GraphBuffers) -> tuple[Tensor, Tensor]:
        y, z = h, g
        for node_norm, edge_norm, layer in zip(self.node_norms, self.edge_norms, self.layers):
            y, z = layer(torch.relu(_norm(node_norm, y)), torch.relu(_norm(edge_norm, z)), graph)
        return h + y, g + z


class HeadTrunk(nn.Module):
    """BNR, linear, BNR: how both the edge heads and the value head begin (figures 3 and 4)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm1d(width)
        self.fc = nn.Linear(width, width)
        self.bn2 = nn.BatchNorm1d(width)

    def forward(self, x: Tensor) -> Tensor:
        return torch.relu(_norm(self.bn2, self.fc(torch.relu(_norm(self.bn1, x)))))


class EdgeHead(nn.Module):
    """`HeadTrunk`, then a linear layer to one number per edge (figure 4): [B, E, K] -> [B, E]."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.trunk = HeadTrunk(width)
        self.out = nn.Linear(width, 1)

    def forward(self, g: Tensor) -> Tensor:
        return self.out(self.trunk(g)).squeeze(-1)


class AttentionValueHead(nn.Module):
    """`HeadTrunk`, attention pooling over the nodes (eq. 7), ReLU, linear, tanh (figure 3)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.trunk = HeadTrunk(width)
        self.pool = nn.Parameter(torch.randn(width) / math.sqrt(width))
        self.out = nn.Linear(width, 1)

    def forward(self, h: Tensor) -> Tensor:
        y = self.trunk(h)
        weights = torch.softmax(F.leaky_relu(y @ self.pool, 0.2), dim=-1)  # [B, N]
        pooled = (weights.unsqueeze(-1) * y).sum(dim=1)
        return torch.tanh(self.out(torch.relu(pooled)).squeeze(-1))


class GraphBuffers(nn.Module):
    """The move graph of one board as tensors: non-persistent buffers, so a state dict holds
    only learnt weights and moves between boards; `GateauNet` builds them for its game."""

    src: Tensor
    dst: Tensor
    out_edges: Tensor
    action_edge: Tensor
    static: Tensor
    path: Tensor
    pieces: Tensor
    pawn_push: Tensor
    pawn_capture: Tensor
    castle_right: Tensor
    castle_empty: Tensor
    node_map: Tensor

    def __init__(self, graph: MoveGraph, node_map: np.ndarray) -> None:
        super().__init__()
        arrays = {
            "src": graph.src, "dst": graph.dst, "out_edges": graph.out_edges, "action_edge": graph.action_edge,
            "static": graph.static, "path": graph.path.flatten(), "pieces": graph.pieces,
            "pawn_push": graph.pawn_push, "pawn_capture": graph.pawn_capture,
            "castle_right": graph.castle_right, "castle_empty": graph.castle_empty, "node_map": node_map,
        }
        for name, array in arrays.items():
            self.register_buffer(name, torch.from_numpy(np.ascontiguousarray(array)), persistent=False)

    def nodes(self, obs: Tensor) -> Tensor:
        """Observation [B, C, H, W] -> node features [B, N, NODE_FEATURES] (square = rank * W + file)."""
        return obs.flatten(2).transpose(1, 2) @ self.node_map

    def pseudo_legal(self, nodes: Tensor) -> Tensor:
        """[B, E]: 1 where the side to move has a piece that can make the edge's move on this
        board (checks, pins and en passant aside), from the current position's piece planes."""
        own = nodes[..., :PIECE_PLANES]
        occupied = nodes[..., : 2 * PIECE_PLANES].sum(-1)
        own_occupied = own.sum(-1)
        opponent = occupied - own_occupied
        padded = F.pad(occupied, (0, 1))  # the padding square is empty
        edges = len(self.src)
        blocked = padded.index_select(1, self.path).unflatten(1, (edges, -1)).sum(-1)
        clear = 1.0 - blocked.clamp(max=1.0)
        empty_to = 1.0 - occupied.index_select(1, self.dst)
        mover = own.index_select(1, self.src)  # [B, E, 6]: which own piece stands on the from-square
        rights = F.pad(nodes[:, 0], (0, 1)).index_select(1, self.castle_right)  # the padding: no right
        castle = rights * (1.0 - padded.index_select(1, self.castle_empty)) * empty_to
        pawn = self.pawn_push * empty_to + self.pawn_capture * opponent.index_select(1, self.dst)
        pieces = (mover[..., 1:] * self.pieces).sum(-1) * (1.0 - own_occupied.index_select(1, self.dst))
        return clear * (mover[..., 0] * pawn + pieces + mover[..., 5] * castle)

    def to_actions(self, per_edge: Tensor) -> Tensor:
        """[B, E] -> [B, A] in the game's action order; actions off the board get 0."""
        return F.pad(per_edge, (0, 1)).index_select(1, self.action_edge)


class GateauNet(nn.Module):
    """AlphaGateau with KLENT's heads: the same `NetOutputs` as `KlentNet`, from a graph
    network whose weights fit every board in `BOARDS`."""

    def __init__(self, game: Game, config: NetConfig) -> None:
        super().__init__()
        rules = rules_of(game)
        self.observation_shape = tuple(game.observation_shape)
        self.num_actions = game.num_actions
        self.config = config
        graph = move_graph(rules)
        if graph.num_actions != game.num_actions:
            raise ValueError(f"{game.name} has {game.num_actions} actions, its move graph {graph.num_actions}")
        self.graph = GraphBuffers(graph, node_map(rules, game.observation_shape[0]))
        width = config.channels
        self.node_embed = nn.Linear(NODE_FEATURES, width)
        self.edge_embed = nn.Linear(EDGE_FEATURES, width)  # column 0: the legality flag
        self.blocks = nn.ModuleList([ResGateau(width) for _ in range(config.blocks)])
        self.policy_head = EdgeHead(width)
        self.action_value_head = EdgeHead(width) if config.action_value_head else None
        self.value_head = AttentionValueHead(width) if config.value_head else None

    def forward(self, obs: Tensor) -> NetOutputs:
        """Raw policy logits, action values and state value from the side to move's view."""
        nodes = self.graph.nodes(obs)
        legal = self.graph.pseudo_legal(nodes)
        h = self.node_embed(nodes)
        # The static edge features are the same in every position: embed them once per call.
        weight = self.edge_embed.weight
        g = F.linear(self.graph.static, weight[:, 1:], self.edge_embed.bias) + legal.unsqueeze(-1) * weight[:, 0]
        for block in self.blocks:
            h, g = block(h, g, self.graph)
        return NetOutputs(
            self.graph.to_actions(self.policy_head(g)),
            None if self.action_value_head is None else self.graph.to_actions(torch.tanh(self.action_value_head(g))),
            None if self.value_head is None else self.value_head(h),
            None,
            None,
        )
