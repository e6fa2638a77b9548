"""AlphaGateau (klent/training/gateau.py): the move graph against the games' action encodings, the
features it reads off a position, ONNX parity on both boards, one set of weights for 5x5 and
8x8, and KLENT training through the trainer."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import chess
import numpy as np
import pytest
import torch
from test_export import TOLERANCE, assert_same_evaluation, random_positions, trained_looking_net

import klent.engine.games as games
from klent.cli import main as klent_main
from klent.engine.games import chess_kernels
from klent.engine.games.base import Game, IllegalMoveError, State
from klent.engine.network import OnnxEvaluator
from klent.training import klent_rl
from klent.training.checkpoint import initial_weights
from klent.training.config import EvalConfig, OptimConfig, load_config
from klent.training.export import export_onnx
from klent.training.fitting import fit
from klent.training.gateau import (
    BOARDS,
    EDGE_FEATURES,
    NODE_FEATURES,
    OPPONENT_PAWN,
    OWN_KING,
    OWN_PAWN,
    PIECE_CAPABLE,
    PROMOTION,
    GateauNet,
    move_graph,
)
from klent.training.nets import NetConfig, build_net, count_parameters, load_checkpoint, save_checkpoint
from klent.training.selfplay import GameSlots, SelfPlayConfig
from klent.training.torch_evaluator import TorchEvaluator
from klent.training.trainer import Trainer

CONFIGS = Path(__file__).resolve().parents[2] / "klent" / "training" / "configs"
TINY = NetConfig(architecture="gateau", blocks=1, channels=16)
EDGES = {"gardner": 455, "chess": 1858}  # the paper's counts (section 4.2)
UNDER_LETTERS = "nbr"


@pytest.fixture(autouse=True)
def one_torch_thread():
    """One thread: on a shared CPU the intra-op threads of these small tensors only wait for
    each other (batch norms ran 30x slower with two threads on a busy two-core machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def net_for(name: str, config: NetConfig = TINY, seed: int = 0) -> GateauNet:
    torch.manual_seed(seed)
    model = build_net(games.get(name), config)
    assert isinstance(model, GateauNet)
    return model.eval()


def flagged(model: GateauNet, game: Game, states: list[State]) -> np.ndarray:
    """bool[B, A]: the actions whose edge the network marks as (pseudo-)legal."""
    obs = torch.from_numpy(game.encode_batch(states))
    with torch.no_grad():
        per_edge = model.graph.pseudo_legal(model.graph.nodes(obs))
    return model.graph.to_actions(per_edge).numpy() > 0.5


def square(text: str) -> tuple[int, int]:
    """(rank, file) of a square's name ("b3" -> (2, 1)) on a board of any size."""
    return (int(text[1:]) - 1), ord(text[0]) - ord("a")


@pytest.mark.parametrize("name", ["gardner", "chess"])
def test_the_graph_has_the_papers_edges_and_every_node_its_out_edges(name: str) -> None:
    graph = move_graph(BOARDS[name])
    game = games.get(name)
    assert len(graph.src) == EDGES[name] and graph.num_actions == game.num_actions
    assert np.all(np.diff(graph.action) > 0)  # action order, so grouped by from-square
    table = graph.out_edges
    real = table[table < len(graph.src)]
    assert sorted(real.tolist()) == list(range(len(graph.src)))  # each edge once
    assert all(np.all(graph.src[row[row < len(graph.src)]] == node) for node, row in enumerate(table))
    edge_of = graph.action_edge
    assert np.array_equal(edge_of[graph.action], np.arange(len(graph.src)))
    assert np.count_nonzero(edge_of < len(graph.src)) == EDGES[name]


@pytest.mark.parametrize("name", ["gardner", "chess"])
def test_every_edge_is_its_action_and_every_other_action_leaves_the_board(name: str) -> None:
    game = games.get(name)
    graph = move_graph(BOARDS[name])
    n = graph.size
    white = game.initial_state()
    black = white.play(int(np.flatnonzero(white.legal_mask())[0]))
    for state in (white, black):
        for e in range(len(graph.src)):
            text = game.action_to_text(state, int(graph.action[e]))
            (from_rank, from_file), (to_rank, to_file) = square(text[:2]), square(text[2:4])
            if state.to_play == 1:  # the frame is the board flipped vertically for Black
                from_rank, to_rank = n - 1 - from_rank, n - 1 - to_rank
            assert (from_rank * n + from_file, to_rank * n + to_file) == (graph.src[e], graph.dst[e]), text
            under = graph.static[e, PROMOTION][:3]
            if under.any():
                assert text[4:] == UNDER_LETTERS[int(np.argmax(under))]
        for action in np.flatnonzero(graph.action_edge == len(graph.src))[:: 7]:
            with pytest.raises(IllegalMoveError):
                game.action_to_text(state, int(action))
    positions = random_positions(game, 200, seed=1)
    legal = np.stack([s.legal_mask() for s in positions])
    assert np.all(graph.action_edge[np.nonzero(legal)[1]] < len(graph.src))  # legal moves are edges


def test_edge_features_of_a_hand_made_chess_position() -> None:
    game = games.get("chess")
    model = net_for("chess")
    graph = move_graph(BOARDS["chess"])
    # White: pawn b7 (a8 holds a black rook, b8 and c8 are empty), castling both ways with a
    # knight on b1 in the way of the long castle; Black to move after it in the second state.
    state = game.from_fen("r3k3/1P6/8/8/8/8/8/RN2K2R w KQq - 0 1")
    marks = flagged(model, game, [state])[0]

    def edge(uci: str) -> int:
        move = chess.Move.from_uci(uci)
        action = chess_kernels.action_of_move(state.to_play, move)
        return int(graph.action_edge[action])

    def is_flagged(uci: str) -> bool:
        return bool(marks[graph.action[edge(uci)]])

    assert is_flagged("b7b8") and is_flagged("b7b8n") and is_flagged("b7a8r")  # pushes and capture
    assert not is_flagged("b7c8") and not is_flagged("b7c8b")  # nothing to capture on c8
    assert is_flagged("e1g1") and not is_flagged("e1c1")  # b1 blocks the long castle
    assert is_flagged("h1f1") and not is_flagged("a1c1") and not is_flagged("b1d1")  # blocked, not a knight move
    assert is_flagged("b1c3") and not is_flagged("e1e3")
    static = graph.static
    assert static[edge("b7b8"), PROMOTION].tolist() == [0, 0, 0, 1]  # a pawn would become a queen
    assert static[edge("b7b8n"), PROMOTION].tolist() == [1, 0, 0, 0]
    assert static[edge("b7a8b"), PROMOTION].tolist() == [0, 1, 0, 0]
    assert static[edge("b2b4"), OWN_PAWN] == 1 and static[edge("b3b5"), OWN_PAWN] == 0  # double step from home only
    assert static[edge("b7b6"), OPPONENT_PAWN] == 1 and static[edge("b6b7"), OPPONENT_PAWN] == 0
    assert static[edge("e1g1"), OWN_KING] == 1 and static[edge("e2g2"), OWN_KING] == 0
    assert static[edge("b1c3"), PIECE_CAPABLE].tolist() == [1, 0, 0, 0]
    assert static[edge("a1h8"), PIECE_CAPABLE].tolist() == [0, 1, 0, 1]


def test_gardner_edge_features_and_the_flag_at_the_start() -> None:
    game = games.get("gardner")
    model = net_for("gardner")
    start = game.initial_state()
    assert np.array_equal(flagged(model, game, [start])[0], start.legal_mask())
    # A pawn on c4 promotes straight ahead (c5 empty) but has nothing to take on b5 or d5.
    promotion = game.from_fen("k4/2P2/5/5/4K w - - 0 1")
    marks = flagged(model, game, [promotion])[0]
    for uci in ("c4c5q", "c4c5n", "c4c5b", "c4c5r"):
        assert marks[game.text_to_action(promotion, uci)]
    assert marks.sum() == promotion.legal_mask().sum() == 4 + 3  # the promotions and the king's 3
    graph = move_graph(BOARDS["gardner"])
    (double,) = np.flatnonzero((graph.src == 1 * 5 + 1) & (graph.dst == 3 * 5 + 1))  # b2b4
    (single,) = np.flatnonzero((graph.src == 1 * 5 + 1) & (graph.dst == 2 * 5 + 1))  # b2b3
    assert graph.static[double, OWN_PAWN] == 0 and graph.static[single, OWN_PAWN] == 1  # no double step


def test_the_flag_is_python_chess_pseudo_legality_on_random_positions() -> None:
    """Both colours; en passant and castling (which python-chess tests for attacks) aside."""
    game = games.get("chess")
    model = net_for("chess")
    positions = [s for s in random_positions(game, 120, seed=2, max_moves=80) if not s.is_terminal]
    marks = flagged(model, game, positions)
    castle_actions = [chess_kernels.action_of_move(0, chess.Move.from_uci(uci)) for uci in ("e1g1", "e1c1")]
    castled = 0
    for state, row in zip(positions, marks):
        board = state.board
        expected = np.zeros(game.num_actions, dtype=bool)
        for move in board.generate_pseudo_legal_moves():
            if board.is_castling(move):
                castled += 1
                assert row[chess_kernels.action_of_move(state.to_play, move)]  # a castle is flagged
            elif not board.is_en_passant(move):
                expected[chess_kernels.action_of_move(state.to_play, move)] = True
        if board.king(board.turn) == (chess.E1 if board.turn else chess.E8):
            row = row.copy()
            row[castle_actions] = expected[castle_actions] = False  # castles ignore attacks here
        assert np.array_equal(row, expected), board.fen()
    assert castled > 0


def test_onnx_runtime_agrees_with_torch_on_both_boards_with_one_set_of_weights(tmp_path: Path) -> None:
    config = dataclasses.replace(TINY, value_head=True)
    gardner, board8 = games.get("gardner"), games.get("chess")
    small = trained_looking_net(gardner, config, seed=3)
    large = build_net(board8, config)
    large.load_state_dict(small.state_dict())  # the same weights, strictly, on the 8x8 graph
    large.eval()
    for game, model in ((gardner, small), (board8, large)):
        path = tmp_path / f"{game.name}.onnx"
        export_onnx(model, game, path, {"algorithm": "klent"})
        evaluator = OnnxEvaluator(path, game)
        assert evaluator.info.arch == "gateau-1x16" and evaluator.info.has_state_value
        positions = random_positions(game, 48, seed=4)
        onnx_result = evaluator.evaluate(positions)
        torch_result = TorchEvaluator(model, game, device="cpu").evaluate(positions)
        assert_same_evaluation(onnx_result, torch_result)
        legal = np.stack([s.legal_mask() for s in positions])
        spread = [np.ptp(logits[mask]) for logits, mask in zip(onnx_result.policy_logits, legal) if mask.sum() > 1]
        assert np.median(spread) > 1e-3  # moves are told apart, not one constant
        assert np.max(np.abs(onnx_result.state_value - torch_result.state_value)) < TOLERANCE


def test_weights_carry_between_boards_and_through_checkpoints(tmp_path: Path) -> None:
    small, large = net_for("gardner", seed=1), net_for("chess", seed=2)
    assert count_parameters(small) == count_parameters(large)
    state = small.state_dict()
    assert not any(name.startswith("graph.") for name in state)  # the graph is per board, not learnt
    large.load_state_dict(state)
    assert all(torch.equal(state[k], v) for k, v in large.state_dict().items())
    path = tmp_path / "gardner.pt"
    save_checkpoint(path, small, games.get("gardner"), TINY)
    loaded = load_checkpoint(path)
    assert isinstance(loaded.model, GateauNet) and loaded.config.arch == "gateau-1x16"
    obs = torch.from_numpy(games.get("gardner").encode_batch([games.get("gardner").initial_state()]))
    with torch.no_grad():
        assert torch.equal(loaded.model.eval()(obs).policy_logits, small(obs).policy_logits)
    assert (NODE_FEATURES, EDGE_FEATURES) == (119, 15)
    # --init: a chess run starts from the Gardner weights (the paper's fine-tuning); a ResNet cannot
    init = initial_weights(path, games.get("chess"), TINY)
    assert all(torch.equal(init[k], v) for k, v in state.items())
    resnet = NetConfig(blocks=1, channels=8)
    save_checkpoint(tmp_path / "resnet.pt", build_net(games.get("gardner"), resnet), games.get("gardner"), resnet)
    with pytest.raises(ValueError, match="is a gardner network"):
        initial_weights(tmp_path / "resnet.pt", games.get("chess"), resnet)


def test_klent_export_moves_a_gardner_checkpoint_to_the_8x8_board(tmp_path: Path, capsys) -> None:
    """`klent export CKPT --game chess`: the Gardner-trained weights play 8x8 chess (zero-shot),
    the model says where they learnt, and ONNX Runtime agrees with the torch net on that board;
    a ResNet checkpoint is refused in one line."""
    gardner, board8 = games.get("gardner"), games.get("chess")
    small = trained_looking_net(gardner, TINY, seed=5)
    save_checkpoint(tmp_path / "gardner.pt", small, gardner, TINY, training_info={"algorithm": "klent"})
    out = tmp_path / "chess.onnx"
    assert klent_main(["export", str(tmp_path / "gardner.pt"), "--game", "chess", "-o", str(out)]) == 0
    evaluator = OnnxEvaluator(out, board8)
    assert evaluator.info.game == "chess" and evaluator.info.arch == "gateau-1x16"
    assert (evaluator.info.training["algorithm"], evaluator.info.training["trained_on"]) == ("klent", "gardner")
    large = build_net(board8, TINY)
    large.load_state_dict(small.state_dict())
    positions = random_positions(board8, 24, seed=6)
    torch_result = TorchEvaluator(large.eval(), board8, device="cpu").evaluate(positions)
    assert_same_evaluation(evaluator.evaluate(positions), torch_result)
    resnet = NetConfig(blocks=1, channels=8)
    save_checkpoint(tmp_path / "resnet.pt", build_net(gardner, resnet), gardner, resnet)
    capsys.readouterr()
    assert klent_main(["export", str(tmp_path / "resnet.pt"), "--game", "chess", "-o", str(tmp_path / "r.onnx")]) == 2
    err = capsys.readouterr().err
    assert "only an AlphaGateau network moves to another board" in err and err.count("\n") == 1
    assert not (tmp_path / "r.onnx").exists()


def test_the_configs_build_gateau_and_a_resnet_baseline_of_its_size() -> None:
    config = load_config(CONFIGS / "gardner_gateau_cpu.toml")
    assert config.net_config().arch == "gateau-4x40"
    baseline = load_config(CONFIGS / "gardner_resnet_gateau_baseline_cpu.toml")
    sizes = [count_parameters(build_net(c.make_game(), c.net_config())) for c in (config, baseline)]
    assert abs(sizes[0] - sizes[1]) < 0.1 * sizes[1]


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('game = "go9"\n[net]\narchitecture = "gateau"\n', "plays chess variants"),
        ('game = "chess"\n[net]\narchitecture = "gateau"\nheads = "conv"\n', "its own heads"),
        ('game = "chess"\n[net]\narchitecture = "graph"\n', "architecture is one of resnet, gateau"),
    ],
)
def test_a_config_the_architecture_cannot_serve_is_refused(tmp_path: Path, text: str, named: str) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    with pytest.raises(ValueError, match=named):
        load_config(bad)


def test_klent_fitting_lowers_the_loss_and_the_trainer_runs_gateau(tmp_path: Path) -> None:
    game = games.get("gardner")
    torch.manual_seed(0)
    model = build_net(game, TINY)
    samples = klent_rl.collect(GameSlots(game, 16, np.random.default_rng(0), None),
                            TorchEvaluator(model, game, "cpu"), klent_rl.PRESETS["klent"], steps=8)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    device = torch.device("cpu")
    first = fit(model, optimizer, samples, klent_rl.batch_loss, 32, 1, device)
    fit(model, optimizer, samples, klent_rl.batch_loss, 32, 6, device)
    last = fit(model, optimizer, samples, klent_rl.batch_loss, 32, 1, device)
    # The policy loss is a cross-entropy: only its part above the targets' entropy can go.
    target = samples.policy
    entropy = float(-(target * np.log(np.where(target > 0, target, 1.0))).sum(axis=1).mean())
    assert last["policy_loss"] - entropy < 0.7 * (first["policy_loss"] - entropy)
    assert last["value_loss"] < 0.5 * first["value_loss"]

    config = dataclasses.replace(
        load_config(CONFIGS / "gardner_gateau_cpu.toml"), blocks=1, channels=16,
        selfplay=SelfPlayConfig(games=8, steps=4, evaluator="torch"),
        optim=OptimConfig(batch_size=16), eval=EvalConfig(every=0),
    )
    trainer = Trainer(config, tmp_path / "run", threads=1)
    records = [trainer.step() for _ in range(2)]  # `run` would add an export, tested above
    assert all(np.isfinite(r["loss"]) and r["samples"] > 0 for r in records)
    assert isinstance(load_checkpoint(tmp_path / "run" / "checkpoint.pt").model, GateauNet)
