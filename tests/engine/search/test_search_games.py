"""The search on real games with an untrained network: what it must find by search alone.

An untrained network knows nothing, so these moves can only come from the tree: the terminal
positions the search reaches and the halving that keeps the best-valued actions.
"""

from __future__ import annotations

from pathlib import Path

import chess
import numpy as np
import pytest
import torch
from search_fakes import ScriptedEvaluator

import klent.engine.games
from klent.engine.games.base import Game, State
from klent.engine.games.chess import ChessGame, ChessState
from klent.engine.network import OnnxEvaluator
from klent.engine.search import GumbelConfig, SearchLimits, search


def untrained_evaluator(game: Game, folder: Path) -> OnnxEvaluator:
    """A random 2 x 16 KLENT network (policy + action values) for ``game``, through ONNX."""
    from klent.training.export import export_onnx
    from klent.training.nets import NetConfig, build_net

    torch.manual_seed(0)
    path = folder / f"untrained-{game.name}.onnx"
    export_onnx(build_net(game, NetConfig(blocks=2, channels=16)), game, path)
    return OnnxEvaluator(path, game=game, threads=1)


# Mate in one, at most 16 legal moves; the mating move is unique.
MATES_IN_ONE = [
    ("6rk/6pp/8/6N1/8/8/6PP/6K1 w - - 0 1", "g5f7"),  # smothered mate
    ("8/5p2/p7/5K1k/P4P2/5R2/1p6/8 w - - 0 1", "f3h3"),
    ("k7/3p4/K7/8/4R3/4p3/8/8 w - - 0 1", "e4e8"),
    ("8/8/1PP1P3/8/2rp4/6pk/8/7K b - - 0 1", "c4c1"),
    ("6K1/7P/6k1/3r4/2PPP3/8/8/8 b - - 0 1", "d5d8"),
    ("8/2p5/8/7p/P5P1/r2k4/8/3K4 b - - 0 1", "a3a1"),
]


@pytest.fixture(scope="module")
def chess_evaluator(tmp_path_factory: pytest.TempPathFactory) -> OnnxEvaluator:
    return untrained_evaluator(klent.engine.games.get("chess"), tmp_path_factory.mktemp("chess"))


@pytest.mark.parametrize(("fen", "mate"), MATES_IN_ONE)
@pytest.mark.parametrize("scale", [0.0, 1.0])
def test_untrained_chess_net_finds_mate_in_one(
    chess_evaluator: OnnxEvaluator, fen: str, mate: str, scale: float
) -> None:
    game = chess_evaluator.game
    state = game.from_fen(fen)
    assert len(state.legal_actions()) <= 16
    result = search(state, chess_evaluator, SearchLimits(simulations=64), config=GumbelConfig(gumbel_scale=scale),
                    rng=np.random.default_rng(0))
    assert game.action_to_text(state, result.action) == mate
    assert result.q[result.action] == pytest.approx(1.0)
    assert state.play(result.action).is_terminal


def big_group_in_atari(game: Game):
    """Black to move.  White's 44 stones fill the top five rows but for the corner A9, their
    last liberty; Black's 34 stones fill the bottom four rows with two eyes (B2, H2).  As the
    board stands White wins (45 points and komi against 36); capturing at A9 wins the game.

    With a move cap of two plies the game ends after White's reply, so the search can see
    every outcome: 64 simulations, no knowledge in the network."""
    size = game.size
    corner = 0
    eyes = {7 * size + 1, 7 * size + 7}
    white = [p for p in range(5 * size) if p != corner]
    black = [p for p in range(5 * size, size * size) if p not in eyes]
    return game.setup_state(black=black, white=white, to_play=0)


@pytest.fixture(scope="module")
def go_evaluator(tmp_path_factory: pytest.TempPathFactory) -> OnnxEvaluator:
    return untrained_evaluator(klent.engine.games.get("go9", max_moves=2), tmp_path_factory.mktemp("go"))


@pytest.mark.parametrize("scale", [0.0, 1.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_untrained_go_net_captures_the_big_group(go_evaluator: OnnxEvaluator, scale: float, seed: int) -> None:
    game = go_evaluator.game
    state = big_group_in_atari(game)
    assert sorted(game.action_to_text(state, a) for a in state.legal_actions()) == ["A9", "B2", "H2", "pass"]
    assert state.play(game.text_to_action(state, "pass")).play(game.pass_action).outcome() < 0
    result = search(state, go_evaluator, SearchLimits(simulations=64), config=GumbelConfig(gumbel_scale=scale),
                    rng=np.random.default_rng(seed))
    assert game.action_to_text(state, result.action) == "A9"
    assert result.q[result.action] > 0.5 > result.q[game.pass_action]


PIECE_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}


def material(state: State) -> float:
    """The material balance for the side to move, squashed into a value: a queen up nearly wins."""
    assert isinstance(state, ChessState)
    board = state.bare_board
    balance = sum(value * (len(board.pieces(piece, board.turn)) - len(board.pieces(piece, not board.turn)))
                  for piece, value in PIECE_VALUES.items())
    return float(np.tanh(balance / 5))


# Black, a queen down (lost by the material count), has one drawing move: Kh8, the third time the
# position after it occurs (the kings have shuffled Kg1-h1 and Kh8-g8 twice), or with the
# half-move clock at 99 any king move (a pawn move resets the clock and stays lost).
CLAIMABLE_DRAWS = [
    ("7k/8/8/8/8/Q7/8/6K1 w - - 0 1", ["g1h1", "h8g8", "h1g1", "g8h8", "g1h1", "h8g8", "h1g1"], {"g8h8"}),
    ("6k1/p7/8/8/8/Q7/8/6K1 b - - 99 80", [], {"g8f7", "g8g7", "g8h7", "g8h8"}),
]


@pytest.mark.parametrize(("fen", "moves", "draws"), CLAIMABLE_DRAWS)
def test_the_search_values_a_draw_it_could_claim_as_a_draw(fen: str, moves: list[str], draws: set[str]) -> None:
    """#51: UCI's chess leaves draw claims to the arbiter, so threefold repetition and the fifty-move
    rule never ended a line of the search, which valued them by the network.  A position the search
    reaches that a player may claim as a draw is now a draw (0), while the game itself goes on."""
    game = ChessGame(max_moves=None, claim_draws=False)
    state = game.from_fen(fen, moves)
    assert not state.is_claimable_draw  # the root: searched as usual
    texts = {game.action_to_text(state, a): a for a in state.legal_actions().tolist()}
    assert draws < set(texts)
    assert all(state.play(texts[move]).is_claimable_draw and not state.play(texts[move]).is_terminal for move in draws)
    evaluator = ScriptedEvaluator(game, value=material)
    result = search(state, evaluator, SearchLimits(simulations=32), config=GumbelConfig(gumbel_scale=0.0),
                    rng=np.random.default_rng(0))
    assert all(result.visits[texts[move]] > 0 and result.q[texts[move]] == 0.0 for move in draws)
    assert all(result.q[a] < -0.5 for move, a in texts.items() if move not in draws)
    assert game.action_to_text(state, result.action) in draws
