"""Chess rules and encoders, checked against python-chess's own move generator and rules."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

import klent.engine.games as games
import klent.engine.games.chess as chess_module
from klent.engine.games.base import GameFormatError, IllegalMoveError
from klent.engine.games.chess import ChessGame, ChessState

START = chess.STARTING_FEN
KNIGHT_SHUFFLE = ["g1f3", "g8f6", "f3g1", "f6g8"]  # back to the start position every 4 plies


def planes(state: ChessState) -> np.ndarray:
    return state.game.encode(state)


def test_registry_and_layout() -> None:
    game = games.get("chess")
    assert isinstance(game, ChessGame)
    assert game.name == "chess"
    assert game.num_actions == 4672 == 8 * 8 * 73
    assert game.observation_shape == (119, 8, 8)
    assert game.encoder_version == 1
    assert (game.max_moves, game.claim_draws) == (512, True)
    assert chess_module.chess is chess  # klent/engine/games/chess.py imports python-chess, not itself


def test_documented_action_layout() -> None:
    """Spot checks of ``from_square_in_frame * 73 + plane`` for each kind of plane."""
    game = ChessGame()
    s = game.initial_state()
    assert game.text_to_action(s, "e2e4") == chess.E2 * 73 + 0 * 7 + 1  # N, distance 2
    assert game.text_to_action(s, "g1f3") == chess.G1 * 73 + 56 + 7  # knight step (+2, -1)
    black = s.play(game.text_to_action(s, "e2e4"))
    # Black's e7e5 is White's e2e4 seen from the other side of the board.
    assert game.text_to_action(black, "e7e5") == chess.E2 * 73 + 1
    castle = game.from_fen("4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1")
    assert game.text_to_action(castle, "e1g1") == chess.E1 * 73 + 2 * 7 + 1  # E, distance 2
    assert game.text_to_action(castle, "e1c1") == chess.E1 * 73 + 6 * 7 + 1  # W, distance 2
    promo = game.from_fen("3r3k/4P3/8/8/8/8/8/K7 w - - 0 1")
    assert game.text_to_action(promo, "e7e8q") == chess.E7 * 73 + 0  # queen: N, distance 1
    assert game.text_to_action(promo, "e7d8q") == chess.E7 * 73 + 7 * 7  # NW, distance 1
    assert game.text_to_action(promo, "e7e8n") == chess.E7 * 73 + 64 + 0 * 3 + 1
    assert game.text_to_action(promo, "e7d8b") == chess.E7 * 73 + 64 + 1 * 3 + 0
    assert game.text_to_action(promo, "e7d8r") == chess.E7 * 73 + 64 + 2 * 3 + 0


def _expected_termination(board: chess.Board, game: ChessGame, plies: int) -> str | None:
    """The termination python-chess's own rule methods imply (checkmate takes precedence)."""
    if board.is_checkmate():
        return "checkmate"
    if board.is_stalemate():
        return "stalemate"
    if board.is_seventyfive_moves():
        return "seventyfive_moves"
    if board.is_fivefold_repetition():
        return "fivefold_repetition"
    if board.is_insufficient_material():
        return "insufficient_material"
    if game.claim_draws and board.is_repetition(3):
        return "threefold_repetition"
    if game.claim_draws and board.halfmove_clock >= 100:
        return "fifty_moves"
    if game.max_moves is not None and plies >= game.max_moves:
        return "move_cap"
    return None


def test_random_positions_match_python_chess() -> None:
    """>= 10,000 random positions: legal moves <-> actions is a bijection onto the mask.

    The random player prefers special moves when it has them, so that promotions,
    underpromotions, castling on both sides and en passant all occur (asserted below).  A
    reference `chess.Board` with a full move stack follows the same moves and decides legality
    and game end independently.
    """
    rng = random.Random(20240613)
    game = ChessGame(max_moves=400)
    seen: dict[str, int] = dict.fromkeys(
        ["queen promotion", "underpromotion", "O-O white", "O-O-O white", "O-O black",
         "O-O-O black", "en passant white", "en passant black", "check", "repeated position",
         "checkmate", "insufficient_material", "move_cap"],
        0,
    )
    positions = 0
    while positions < 10_000:
        state = game.initial_state()
        reference = chess.Board()
        while True:
            positions += 1
            assert state.fen() == reference.fen()
            assert state.to_play == (0 if reference.turn else 1)
            expected = _expected_termination(reference, game, state.move_number)
            assert state.termination == expected, reference.fen()
            assert (state.repetitions >= 1) == reference.is_repetition(2)
            seen["repeated position"] += state.repetitions >= 1
            mask = state.legal_mask()
            if expected is not None:
                assert not mask.any()
                seen[expected] = seen.get(expected, 0) + 1  # hand-made tests cover the rest
                break
            legal = list(reference.legal_moves)
            actions = [game.move_to_action(state, move) for move in legal]
            assert len(set(actions)) == len(legal)
            assert set(actions) == set(np.flatnonzero(mask).tolist())
            for move, action in zip(legal, actions):
                assert game.action_to_move(state, action) == move
                assert game.action_to_text(state, action) == move.uci()
            assert game.text_to_action(state, legal[0].uci()) == actions[0]
            seen["check"] += reference.is_check()

            special = [
                m for m in legal if m.promotion or reference.is_castling(m) or reference.is_en_passant(m)
            ]
            move = rng.choice(special) if special and rng.random() < 0.7 else rng.choice(legal)
            side = "white" if reference.turn else "black"
            if move.promotion == chess.QUEEN:
                seen["queen promotion"] += 1
            elif move.promotion:
                seen["underpromotion"] += 1
            elif reference.is_kingside_castling(move):
                seen[f"O-O {side}"] += 1
            elif reference.is_queenside_castling(move):
                seen[f"O-O-O {side}"] += 1
            elif reference.is_en_passant(move):
                seen[f"en passant {side}"] += 1
            state = state.play(actions[legal.index(move)])
            reference.push(move)
    missing = [name for name, count in seen.items() if count == 0]
    assert not missing, f"never seen: {missing}; seen: {seen}"


def test_black_encoding_mirrors_white() -> None:
    """The same game played with colours swapped and the board flipped looks the same."""
    rng = random.Random(7)
    game = ChessGame()
    original = game.from_fen("r3k2r/pppq1ppp/2np1n2/2b1p1B1/2B1P1b1/2NP1N2/PPPQ1PPP/R3K2R w KQkq - 4 8")
    mirrored = game.from_fen(original.board.mirror().fen())
    assert (original.to_play, mirrored.to_play) == (0, 1)
    for _ in range(60):
        obs, obs_mirrored = planes(original), planes(mirrored)
        assert obs[112].min() == obs[112].max() == original.to_play
        assert obs_mirrored[112].min() == obs_mirrored[112].max() == 1 - original.to_play
        same = [p for p in range(119) if p not in (112, 117)]  # colour and move count differ
        np.testing.assert_array_equal(obs[same], obs_mirrored[same])
        np.testing.assert_array_equal(original.legal_mask(), mirrored.legal_mask())
        assert original.termination == mirrored.termination
        if original.is_terminal:
            break
        action = int(rng.choice(np.flatnonzero(original.legal_mask())))
        move = game.action_to_move(original, action)
        flipped = chess.Move(chess.square_mirror(move.from_square), chess.square_mirror(move.to_square), move.promotion)
        assert game.move_to_action(mirrored, flipped) == action
        original, mirrored = original.play(action), mirrored.play(action)


TRICKY_FENS = [
    # Perft suite positions (chessprogramming.org): pins, checks, castling through attacks,
    # promotions with captures, en passant that would expose the king along the rank.
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
    "8/8/8/KPp4r/8/8/8/4k3 w - c6 0 2",  # b5xc6 e.p. would uncover the rook's check
    "8/8/8/8/k2Pp2Q/8/8/4K3 b - d3 0 1",  # e4xd3 e.p. would uncover the queen's check
    "8/8/8/2k5/3Pp3/8/8/4K3 b - d3 0 1",  # e4xd3 e.p. takes the checking pawn
]


@pytest.mark.parametrize("fen", TRICKY_FENS)
def test_tricky_positions_match_python_chess(fen: str) -> None:
    """Every position up to two plies deep from a hard case has exactly the legal mask."""
    game = ChessGame(claim_draws=False)
    frontier = [(game.from_fen(fen), chess.Board(fen))]
    for depth in range(3):
        children = []
        for state, board in frontier:
            legal = list(board.legal_moves)
            actions = [game.move_to_action(state, move) for move in legal]
            assert sorted(actions) == np.flatnonzero(state.legal_mask()).tolist(), board.fen()
            if depth == 2:
                continue
            for move, action in zip(legal, actions):
                child = board.copy(stack=False)
                child.push(move)
                children.append((state.play(action), child))
        frontier = children


def test_encoder_pieces_colour_castling_and_counters() -> None:
    game = ChessGame()
    s = game.initial_state()
    obs = planes(s)
    assert obs.dtype == np.float32 and obs.shape == (119, 8, 8)
    np.testing.assert_array_equal(obs[0][1], np.ones(8))  # own pawns on rank 2
    assert obs[0].sum() == 8 and obs[6].sum() == 8 and obs[6][6].sum() == 8  # theirs on 7
    assert obs[5][0, 4] == 1 and obs[5].sum() == 1  # own king e1
    assert obs[11][7, 4] == 1 and obs[11].sum() == 1  # their king e8
    assert obs[3][0, 0] == obs[3][0, 7] == 1  # own rooks a1, h1
    assert not obs[14:112].any()  # no history before the first position
    assert obs[112].max() == 0  # White to move
    assert obs[113:117].min() == 1  # all four castling rights
    assert obs[117].max() == 0 and obs[118].max() == 0

    s = s.play(game.text_to_action(s, "e2e4"))
    obs = planes(s)
    assert obs[112].min() == 1  # Black to move
    # From Black's side: own pawns on its second rank (row 1), White's e-pawn on e4 = row 4.
    np.testing.assert_array_equal(obs[0][1], np.ones(8))
    assert obs[6][4, 4] == 1 and obs[6][6, 4] == 0 and obs[6].sum() == 8
    assert obs[5][0, 4] == 1 and obs[11][7, 4] == 1  # kings stay on the e-file
    # One ply ago, still from Black's view: White's pawn was on e2 (row 6).
    assert obs[14 + 6][6, 4] == 1 and obs[14 + 6][4, 4] == 0
    np.testing.assert_allclose(obs[117], 1 / 512)
    assert obs[118].max() == 0  # a pawn move resets the clock

    s = game.from_fen("r3k2r/8/8/8/8/8/8/R3K2R b Qk - 17 30")
    obs = planes(s)
    # Black to move: own = Black (kingside only), opponent = White (queenside only).
    assert [obs[p].max() for p in (113, 114, 115, 116)] == [1, 0, 0, 1]
    np.testing.assert_allclose(obs[118], 0.17)
    np.testing.assert_allclose(obs[117], (2 * 29 + 1) / 512)
    assert obs[3][0, 0] == obs[3][0, 7] == 1 and obs[9][7, 0] == obs[9][7, 7] == 1


def test_repetition_planes() -> None:
    game = ChessGame(claim_draws=False)
    s = game.from_fen(START, KNIGHT_SHUFFLE)
    assert s.repetitions == 1
    obs = planes(s)
    assert obs[12].min() == 1 and obs[13].max() == 0  # seen once before
    assert not obs[14 * 4 + 12].any()  # the same position 4 plies ago was its first time
    for move in KNIGHT_SHUFFLE:
        s = s.play(game.text_to_action(s, move))
    obs = planes(s)
    assert s.repetitions == 2
    assert obs[12].min() == 1 and obs[13].min() == 1
    assert obs[14 * 4 + 12].min() == 1 and obs[14 * 4 + 13].max() == 0


BOTH = (True, False)


@pytest.mark.parametrize(
    ("fen", "moves", "claim_options", "termination", "outcome"),
    [
        (START, ["f2f3", "e7e5", "g2g4", "d8h4"], BOTH, "checkmate", -1.0),
        (START, ["e2e4", "e7e5", "d1h5", "b8c6", "f1c4", "g8f6", "h5f7"], BOTH, "checkmate", 1.0),
        ("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", [], BOTH, "stalemate", 0.0),
        ("8/8/8/4k3/8/8/8/4K3 w - - 0 1", [], BOTH, "insufficient_material", 0.0),
        ("8/8/8/4k3/8/8/8/2B1K3 w - - 0 1", [], BOTH, "insufficient_material", 0.0),
        ("8/8/8/4k3/8/8/8/R3K3 w - - 0 1", ["a1a2", "e5d5", "a2a1", "d5e5"], BOTH, None, None),
        # Past the fifty-move mark only an unclaimed game reaches the seventy-five-move one.
        ("4k3/8/8/8/8/8/8/R3K3 w - - 148 80", ["a1a2", "e8d8"], (False,), "seventyfive_moves", 0.0),
        # Checkmate on the move that reaches the 75-move mark still counts as mate.
        ("k7/8/1K6/8/8/8/8/7R w - - 149 100", ["h1h8"], (False,), "checkmate", 1.0),
        (START, KNIGHT_SHUFFLE * 4, (False,), "fivefold_repetition", 0.0),
    ],
)
def test_endings(
    fen: str,
    moves: list[str],
    claim_options: tuple[bool, ...],
    termination: str | None,
    outcome: float | None,
) -> None:
    for claim_draws in claim_options:
        game = ChessGame(claim_draws=claim_draws)
        s = game.from_fen(fen, moves)
        assert s.termination == termination
        assert s.is_terminal == (termination is not None)
        assert not s.is_truncated
        if termination is None:
            assert s.legal_mask().any()
            with pytest.raises(ValueError):
                s.outcome()
        else:
            assert s.outcome() == outcome and s.reward_for(1) == -outcome
            assert not s.legal_mask().any()
            assert s.board.outcome(claim_draw=claim_draws) is not None  # python-chess agrees


def test_claimed_draws_only_with_claim_draws() -> None:
    threefold = (START, KNIGHT_SHUFFLE * 2)
    fifty = ("4k3/8/8/8/8/8/8/R3K3 w - - 99 80", ["a1a2"])
    for (fen, moves), termination in ((threefold, "threefold_repetition"), (fifty, "fifty_moves")):
        claimed = ChessGame(claim_draws=True).from_fen(fen, moves)
        assert claimed.termination == termination and claimed.outcome() == 0.0
        assert not claimed.legal_mask().any() and not claimed.is_claimable_draw
        unclaimed = ChessGame(claim_draws=False).from_fen(fen, moves)
        assert unclaimed.termination is None and unclaimed.legal_mask().any()
        assert unclaimed.is_claimable_draw  # what the search values as a draw
    # One ply before each mark the game goes on even with claims.
    for claim_draws in BOTH:
        game = ChessGame(claim_draws=claim_draws)
        before = (game.from_fen(START, KNIGHT_SHUFFLE + KNIGHT_SHUFFLE[:3]),
                  game.from_fen("4k3/8/8/8/8/8/8/R3K3 w - - 98 80", ["a1a2"]))
        assert all(state.termination is None and not state.is_claimable_draw for state in before)
    # A mate that reaches the fifty-move mark is a mate.
    mate = ChessGame(claim_draws=False).from_fen("7k/8/6K1/8/8/8/8/R7 w - - 99 80", ["a1a8"])
    assert mate.termination == "checkmate" and not mate.is_claimable_draw


def test_move_cap_truncates() -> None:
    game = ChessGame(max_moves=4)
    s = game.from_fen(START, ["e2e4", "e7e5", "g1f3"])
    assert not s.is_terminal
    s = s.play(game.text_to_action(s, "b8c6"))
    assert s.termination == "move_cap" and s.is_terminal and s.is_truncated
    assert s.outcome() == 0.0 and not s.legal_mask().any()
    with pytest.raises(IllegalMoveError, match="move_cap"):
        s.play(chess.G1 * 73)
    assert not ChessGame(max_moves=None).from_fen(START, ["e2e4", "e7e5", "g1f3", "b8c6"]).is_terminal


def test_bad_input_is_refused_and_changes_nothing() -> None:
    game = ChessGame()
    with pytest.raises(GameFormatError, match="bad FEN"):
        game.from_fen("rnbqkbnr/pppppppp/8/8 w KQkq - 0 1")
    with pytest.raises(GameFormatError, match="no white king"):
        game.from_fen("4k3/8/8/8/8/8/8/8 w - - 0 1")
    game.encode_batch([game.from_fen("4k3/8/8/8/8/8/8/4K3 w - - 0 9223372036854775807")])
    with pytest.raises(GameFormatError, match="a move counter above"):  # the encoder's floats overflowed
        game.from_fen("4k3/8/8/8/8/8/8/4K3 w - - 0 1" + "0" * 400)
    with pytest.raises(GameFormatError):
        game.from_fen(None)  # type: ignore[arg-type]
    with pytest.raises(IllegalMoveError, match="'e2e5'"):
        game.from_fen(START, ["e2e4", "e7e5", "e2e5"])
    with pytest.raises(GameFormatError, match="'zz'"):
        game.from_fen(START, ["e2e4", "zz"])

    s = game.from_fen(START, ["e2e4"])
    before = (s.fen(), s.legal_mask().copy(), planes(s), s.moves)
    refused = [("e7e6x", GameFormatError), ("hello", GameFormatError), ("e9e4", GameFormatError)]
    refused += [("e2e4", IllegalMoveError), ("e7e4", IllegalMoveError), ("Ke7", IllegalMoveError)]
    refused += [("0000", IllegalMoveError), ("e7e5q", IllegalMoveError)]
    for text, error in refused:
        with pytest.raises(error, match=repr(text)):
            game.text_to_action(s, text)
    illegal = int(np.flatnonzero(~s.legal_mask())[0])
    with pytest.raises(IllegalMoveError, match="illegal move"):
        s.play(illegal)
    for action in (-1, 4672):
        with pytest.raises(IllegalMoveError):
            s.play(action)
    with pytest.raises(IllegalMoveError, match="'e7e5q'"):
        game.move_to_action(s, chess.Move(chess.E7, chess.E5, chess.QUEEN))
    after = (s.fen(), s.legal_mask(), planes(s), s.moves)
    assert after[0] == before[0] and after[3] == before[3]
    np.testing.assert_array_equal(after[1], before[1])
    np.testing.assert_array_equal(after[2], before[2])


def test_san_text_and_move_conversions() -> None:
    game = ChessGame()
    s = game.initial_state()
    assert game.text_to_action(s, "Nf3") == game.text_to_action(s, " g1f3 ")
    s = game.from_fen("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    assert game.action_to_text(s, game.text_to_action(s, "O-O")) == "e1g1"
    assert game.action_to_text(s, game.text_to_action(s, "O-O-O")) == "e1c1"
    with pytest.raises(IllegalMoveError):
        game.action_to_move(s, 4672)
    with pytest.raises(IllegalMoveError, match="off the board"):
        game.action_to_move(s, chess.A1 * 73 + 6 * 7)  # west from a1


def test_states_are_immutable() -> None:
    game = ChessGame()
    s0 = game.initial_state()
    fen, obs, mask = s0.fen(), planes(s0), s0.legal_mask().copy()
    s1 = s0.play(game.text_to_action(s0, "e2e4"))
    s2 = s1.play(game.text_to_action(s1, "c7c5"))
    s1b = s1.play(game.text_to_action(s1, "e7e5"))  # a second branch from the same state
    assert s0.fen() == fen and s0.move_number == 0 and s1.move_number == 1
    np.testing.assert_array_equal(planes(s0), obs)
    np.testing.assert_array_equal(s0.legal_mask(), mask)
    assert s2.fen() != s1b.fen() and s2.moves[-1].uci() == "c7c5" and s1b.moves[-1].uci() == "e7e5"
    with pytest.raises(ValueError):
        s0.legal_mask()[0] = True  # the shared mask is read-only
    board = s2.board
    assert board.move_stack == list(s2.moves) and board.fen() == s2.fen()
    board.push(board.parse_san("Nf3"))
    assert s2.fen() != board.fen() and len(s2.moves) == 2
    encoded = game.encode_batch([s0, s1, s2])
    np.testing.assert_array_equal(encoded[0], obs)
