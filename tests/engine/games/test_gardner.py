"""Gardner chess rules, encoder and notation, checked against Fairy-Stockfish's ``gardner``.

The real engine (the Debian package ``fairy-stockfish``, installed by `make test`) is the
referee: perft counts, the legal moves and the FEN move by move along random games, and its
verdict on the games that end by the rules.  `FairyStockfish`, `texts` and `divide` are
shared with the Animal Shogi tests.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from conftest import find_engine
from fairy_stockfish import FairyStockfish, divide, refereed_random_game, texts

import klent.engine.games as games
from klent.engine.games.base import GameFormatError, IllegalMoveError
from klent.engine.games.gardner import GardnerGame

START = "rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1"
KNIGHT_SHUFFLE = ["b1a3", "b5c3", "a3b1", "c3b5"]  # back to the start position every 4 plies
# Gardner chess without the draws Fairy-Stockfish leaves to the arbiter, as its perft counts.
RULES_ONLY = GardnerGame(max_moves=None, claim_draws=False)


@pytest.fixture(scope="module")
def fairy() -> Iterator[FairyStockfish]:
    referee = FairyStockfish(find_engine("fairy-stockfish"), "gardner")
    yield referee
    referee.close()


def test_registry_and_layout() -> None:
    game = games.get("gardner")
    assert isinstance(game, GardnerGame) and "gardner" in games.GAME_IDS
    assert (game.name, game.num_actions, game.action_planes) == ("gardner", 1225, 49)
    assert game.observation_shape == (115, 5, 5) and game.encoder_version == 1
    assert game.max_moves == 256
    assert (game.symmetries() == np.arange(1225)[None]).all()  # see the module docstring


def test_documented_action_layout() -> None:
    """Spot checks of ``from_square_in_frame * 49 + plane`` for each kind of plane."""
    game = GardnerGame()
    s = game.initial_state()
    assert game.text_to_action(s, "a2a3") == 5 * 49 + 0  # a2 = 5, N distance 1
    assert game.text_to_action(s, "b1c3") == 1 * 49 + 32 + 0  # knight step (+2, +1)
    assert game.text_to_action(s, "b1a3") == 1 * 49 + 32 + 7  # knight step (+2, -1)
    black = s.play(game.text_to_action(s, "c2c3"))
    assert game.text_to_action(black, "a4a3") == 5 * 49 + 0  # a4 is a2 in Black's frame
    assert game.text_to_action(black, "b5c3") == 1 * 49 + 32 + 0  # b5 is b1 in Black's frame
    promo = game.from_fen("1r2k/P4/5/5/4K w - - 0 1")
    assert game.text_to_action(promo, "a4a5q") == 15 * 49 + 0  # queen: N, distance 1
    assert game.text_to_action(promo, "a4b5q") == 15 * 49 + 4 * 1  # NE, distance 1
    assert game.text_to_action(promo, "a4a5n") == 15 * 49 + 40 + 0 * 3 + 1
    assert game.text_to_action(promo, "a4b5b") == 15 * 49 + 40 + 1 * 3 + 2
    assert game.text_to_action(promo, "a4b5r") == 15 * 49 + 40 + 2 * 3 + 2
    rook = game.from_fen("4k/5/5/5/R3K w - - 0 1")
    assert game.text_to_action(rook, "a1a5") == 0 * 49 + 0 * 4 + 3  # N, distance 4


def test_perft_from_the_start(fairy: FairyStockfish) -> None:
    start = RULES_ONLY.initial_state()
    assert start.fen() == fairy.fen() == START
    for depth in (1, 2, 3):
        assert divide(start, depth) == fairy.perft(depth)
    assert sum(divide(start, 4).values()) == sum(fairy.perft(4).values()) == 4775


def test_random_games_move_by_move(fairy: FairyStockfish) -> None:
    """Along random games: the legal moves and the FEN at every ply, perft to depth 3 every
    20 plies, and the end of the game as Fairy-Stockfish judges it."""
    game = GardnerGame()
    rng = np.random.default_rng(5)
    endings: set[str] = set()
    for _ in range(12):
        state, moves = refereed_random_game(game, RULES_ONLY, fairy, rng, every=20, depths=(2, 3))
        endings.add(state.termination)
        if state.termination in ("checkmate", "stalemate"):
            assert fairy.perft(1, moves) == {}
            assert fairy.score(moves) == ("mate 0" if state.termination == "checkmate" else "cp 0")
            assert state.outcome() == (0.0 if state.termination == "stalemate" else (-1.0, 1.0)[state.to_play])
        else:
            # Fairy-Stockfish leaves repetition and the fifty-move rule to the arbiter and would
            # play on, but its search scores the last move as the draw it makes.
            assert state.outcome() == 0.0 and fairy.perft(1, moves)
            if state.termination != "move_cap":
                assert fairy.score(moves[:-1], move=moves[-1]) == "cp 0"
    assert {"checkmate", "stalemate", "threefold_repetition", "fifty_moves"} <= endings


@pytest.mark.parametrize(
    ("fen", "termination", "result"),
    [
        ("k4/1Q3/1K3/5/5 b - - 0 1", "checkmate", 1.0),
        ("k4/2Q2/1K3/5/5 b - - 0 1", "stalemate", 0.0),
        ("1r2k/5/5/5/Kq3 w - - 0 1", "checkmate", -1.0),
        ("4k/5/5/2q2/K4 w - - 0 1", "stalemate", 0.0),
    ],
)
def test_mate_and_stalemate(fairy: FairyStockfish, fen: str, termination: str, result: float) -> None:
    state = GardnerGame().from_fen(fen)
    assert fairy.perft(1, fen=fen) == {} and not state.legal_mask().any()
    assert state.termination == termination and state.outcome() == result
    assert fairy.score(fen=fen) == ("mate 0" if result else "cp 0")


def test_promotions(fairy: FairyStockfish) -> None:
    game = GardnerGame()
    fen = "1r2k/P4/5/5/4K w - - 0 1"
    state = game.from_fen(fen)
    assert texts(state) == set(fairy.perft(1, fen=fen))
    assert {"a4a5q", "a4a5r", "a4a5b", "a4a5n", "a4b5q", "a4b5n"} <= texts(state)
    for move in ("a4a5q", "a4b5n", "a4a5r"):
        after = state.play(game.text_to_action(state, move))
        assert after.fen() == fairy.fen([move], fen=fen)
    with pytest.raises(IllegalMoveError):
        game.text_to_action(state, "a4a5")  # a promotion must name its piece
    black = game.from_fen("4k/5/5/p4/4K b - - 0 1")
    assert black.play(game.text_to_action(black, "a2a1q")).fen() == "4k/5/5/5/q3K w - - 0 2"
    assert fairy.fen(["a2a1q"], fen="4k/5/5/p4/4K b - - 0 1") == "4k/5/5/5/q3K w - - 0 2"


def test_no_castling_or_double_step() -> None:
    game = GardnerGame()
    start = game.initial_state()
    assert texts(start) == {"a2a3", "b2b3", "c2c3", "d2d3", "e2e3", "b1a3", "b1c3"}
    bare = game.from_fen("r3k/5/5/5/R3K w - - 0 1")  # king and rook on their squares, nothing between
    for state, move in ((start, "a2a4"), (bare, "e1c1")):
        with pytest.raises(IllegalMoveError):
            game.text_to_action(state, move)


def test_fifty_move_rule(fairy: FairyStockfish) -> None:
    game = GardnerGame()
    fen = "4k/5/5/5/R3K w - - 99 60"
    quiet = game.from_fen(fen, ["a1a2"])
    assert quiet.termination == "fifty_moves" and quiet.outcome() == 0.0
    assert quiet.fen() == fairy.fen(["a1a2"], fen=fen) == "4k/5/5/R4/4K b - - 100 60"
    assert fairy.score(fen=fen, move="a1a2") == "cp 0"
    mate = game.from_fen("k4/2K2/5/5/4R w - - 99 60", ["e1a1"])
    assert mate.termination == "checkmate" and mate.outcome() == 1.0  # a mate on the 100th ply counts
    assert fairy.score(fen="k4/2K2/5/5/4R w - - 99 60", move="e1a1") == "mate 1"
    assert not RULES_ONLY.from_fen(fen, ["a1a2"]).is_terminal
    reset = game.from_fen("4k/p4/5/5/R3K b - - 99 60", ["a4a3"])
    assert not reset.is_terminal and reset.fen() == "4k/5/p4/5/R3K w - - 0 61"


def test_threefold_repetition(fairy: FairyStockfish) -> None:
    game = GardnerGame()
    state = game.initial_state()
    for ply, move in enumerate(KNIGHT_SHUFFLE * 2, start=1):
        assert not state.is_terminal
        state = state.play(game.text_to_action(state, move))
        assert state.repetitions == ply // 4
    assert state.termination == "threefold_repetition" and state.outcome() == 0.0
    assert not state.legal_mask().any()
    assert fairy.score((KNIGHT_SHUFFLE * 2)[:-1], move=KNIGHT_SHUFFLE[-1]) == "cp 0"
    unclaimed = RULES_ONLY.from_fen(START, KNIGHT_SHUFFLE * 2)
    assert unclaimed.repetitions == 2 and not unclaimed.is_terminal


def test_move_cap_truncates() -> None:
    game = GardnerGame(max_moves=4)
    state = game.from_fen(START, KNIGHT_SHUFFLE)
    assert state.termination == "move_cap" and state.is_truncated and state.outcome() == 0.0
    assert not state.legal_mask().any()
    assert not GardnerGame(max_moves=None).from_fen(state.fen()).is_terminal
    with pytest.raises(ValueError):
        GardnerGame(max_moves=0)


def test_encoder_planes() -> None:
    game = GardnerGame()
    start = game.initial_state()
    obs = game.encode(start)
    assert obs.shape == (115, 5, 5) and obs.dtype == np.float32
    assert (obs[0, 1] == 1).all() and obs[0].sum() == 5  # own pawns on rank 2
    assert obs[5, 0, 4] == 1 and obs[4, 0, 3] == 1  # own king e1, queen d1
    assert (obs[6, 3] == 1).all() and obs[11, 4, 4] == 1  # opponent's pawns on rank 4, king e5
    assert obs[14:112].sum() == 0 and obs[112:].sum() == 0  # no history, White, ply 0, clock 0
    black = start.play(game.text_to_action(start, "b1c3"))
    seen = game.encode(black)
    assert (seen[0, 1] == 1).all() and seen[5, 0, 4] == 1  # own pawns on rank 4 -> row 1, king e5 -> (0, 4)
    assert seen[7, 2, 2] == 1 and seen[7, 4, 1] == 0  # the opponent's knight went b1 -> c3 (row 4 - 2)
    # The start position, one ply back, looks to Black as it looked to White: the ranks flip.
    assert (seen[14:28] == obs[:14]).all()
    assert (seen[112] == 1).all() and seen[113, 0, 0] == 1 / 256 and seen[114, 0, 0] == 1 / 100
    state = game.from_fen(START, KNIGHT_SHUFFLE)
    again = game.encode(state)
    assert (again[12] == 1).all() and again[13].sum() == 0  # the start position, seen once before
    assert (again[4 * 14 : 4 * 14 + 12] == again[:12]).all() and again[4 * 14 + 12].sum() == 0
    batch = game.encode_batch([start, black, state])
    assert (batch[1] == seen).all() and (batch[2] == again).all()


def test_actions_start_on_the_movers_pieces() -> None:
    """The point of every legal action is a square where the observation shows an own piece,
    and its plane's step lands in the frame where the text says: actions and observation
    share one frame, as ``action_planes`` promises."""
    game = GardnerGame()
    rng = np.random.default_rng(2)
    state = game.initial_state()
    directions = ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1))
    steps = [(dr * n, df * n) for dr, df in directions for n in range(1, 5)]
    steps += [(2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2), (1, -2), (2, -1)]
    steps += [(1, df) for _piece in "nbr" for df in (-1, 0, 1)]
    for _ in range(60):
        if state.is_terminal:
            state = game.initial_state()
        obs = game.encode(state)
        for action in state.legal_actions():
            point, plane = divmod(int(action), 49)
            row, col = divmod(point, 5)
            assert obs[:6, row, col].sum() == 1
            text = game.action_to_text(state, int(action))
            to_row, to_col = row + steps[plane][0], col + steps[plane][1]
            to_rank = to_row if state.to_play == 0 else 4 - to_row
            assert text[2:4] == "abcde"[to_col] + str(to_rank + 1)
        state = state.play(int(rng.choice(state.legal_actions())))


def test_bad_input_is_refused_and_changes_nothing() -> None:
    game = GardnerGame()
    start = game.initial_state()
    for text in ("", "b1", "b1c6", "f1f2", "b1c3x", "O-O", "Nc3"):
        with pytest.raises(GameFormatError):
            game.text_to_action(start, text)
    for text in ("a2a4", "b1d2", "e1e2", "a3a4", "c2c3q"):
        with pytest.raises(IllegalMoveError, match="illegal move"):
            game.text_to_action(start, text)
    for action in (-1, 1225, game.text_to_action(start, "a2a3") + 1):
        with pytest.raises(IllegalMoveError):
            start.play(action)
    with pytest.raises(IllegalMoveError, match="off the board"):
        game.action_to_text(start, 0 * 49 + 4 * 4)  # a1 south
    assert start.fen() == START
    with pytest.raises(ValueError):
        start.legal_mask()[0] = True  # shared and read-only
    after = start.play(game.text_to_action(start, "c2c3"))
    assert after.fen() == "rnbqk/ppppp/2P2/PP1PP/RNBQK b - - 0 1"
    assert start.fen() == START  # play made a new state
    with pytest.raises(ValueError, match="not over"):
        start.outcome()


@pytest.mark.parametrize(
    "fen",
    [
        "rnbqk/ppppp/5/PPPPP/RNBQK",  # no side to move
        "rnbqk/ppppp/5/PPPPP/RNBQK x - - 0 1",
        "rnbqk/ppppp/5/PPPPP/RNBQK w KQ - 0 1",  # castling
        "rnbqk/ppppp/5/PPPPP/RNBQK w - c3 0 1",  # en passant
        "rnbqk/ppppp/5/PPPPP w - - 0 1",  # four ranks
        "rnbqk/pppppp/4/PPPPP/RNBQK w - - 0 1",
        "rnbqk/ppppp/5/PPPPP/RNBQQ w - - 0 1",  # no White king
        "rnbqk/ppppp/5/PPPPP/RNBKK w - - 0 1",  # two
        "Pnbqk/1pppp/5/1PPPP/RNBQK w - - 0 1",  # a pawn on the last rank
        "4k/4R/5/5/4K w - - 0 1",  # Black, not to move, is in check
        "rnbqk/ppppp/5/PPPPP/RNBQK w - - x 1",
        "rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 0",
        "rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 9223372036854775808",  # past 64 bits: the encoder's floats overflowed
    ],
)
def test_bad_fens(fen: str) -> None:
    with pytest.raises(GameFormatError, match="bad FEN"):
        GardnerGame().from_fen(fen)


def test_move_lists_name_the_bad_move() -> None:
    game = GardnerGame()
    with pytest.raises(IllegalMoveError, match="move 2 of the list"):
        game.from_fen(START, ["a2a3", "a2a3"])
    with pytest.raises(GameFormatError, match="move 1 of the list"):
        game.from_fen(START, ["zz"])
