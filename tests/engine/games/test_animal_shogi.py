"""Animal Shogi rules, encoder and notation, checked against Fairy-Stockfish's ``dobutsu``.

The Debian package ``fairy-stockfish`` (installed by `make test`) is the referee: perft
counts, the legal moves and the FEN (board and hands) move by move along random games, and
its score of the positions where the game ends.  It leaves repetitions to the arbiter, but
its search scores a move that completes one by its rules (draw, or a loss for the side that
gave perpetual check), so those are asked of it move by move too.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from conftest import find_engine
from fairy_stockfish import FairyStockfish, divide, refereed_random_game, texts

import klent.engine.games as games
from klent.engine.games.animal_shogi import AnimalShogiGame
from klent.engine.games.base import GameFormatError, IllegalMoveError
from klent.engine.games.symmetry import dihedral

START = "gle/1c1/1C1/ELG[] w - - 0 1"
LION_SHUFFLE = ["b1a2", "b4c3", "a2b1", "c3b4"]  # back to the start position every 4 plies
# Animal Shogi without the repetition rule Fairy-Stockfish leaves to the arbiter, as its perft counts.
RULES_ONLY = AnimalShogiGame(max_moves=None, repetition_rule=False)
MIRROR = 4  # symmetry.dihedral index of the left-right mirror


@pytest.fixture(scope="module")
def fairy() -> Iterator[FairyStockfish]:
    referee = FairyStockfish(find_engine("fairy-stockfish"), "dobutsu")
    yield referee
    referee.close()


def mirror_actions() -> np.ndarray:
    """``int64[144]``: each action's image under the left-right mirror (files a and c swap,
    so do the E and W sides of every step; drops and the no-promotion step keep their plane)."""
    planes = [0, 7, 6, 5, 4, 3, 2, 1, 8, 9, 10, 11]  # N NE E SE S SW W NW -> N NW W SW S SE E NE
    table = np.empty(144, dtype=np.int64)
    for action in range(144):
        point, plane = divmod(action, 12)
        row, col = divmod(point, 3)
        table[action] = (row * 3 + 2 - col) * 12 + planes[plane]
    return table


def test_registry_and_layout() -> None:
    game = games.get("animal_shogi")
    assert isinstance(game, AnimalShogiGame) and "animal_shogi" in games.GAME_IDS
    assert (game.name, game.num_actions, game.action_planes) == ("animal_shogi", 144, 12)
    assert game.observation_shape == (194, 4, 3) and game.encoder_version == 1
    assert (game.max_moves, game.repetition_rule) == (256, True)
    assert game.from_fen("gle/1c1/1C1/ELG[-] w 0 1").fen() == START  # Fairy-Stockfish's own form
    assert (game.symmetries() == np.arange(144)[None]).all()  # see the module docstring


def test_documented_action_layout() -> None:
    game = AnimalShogiGame()
    s = game.initial_state()
    assert game.text_to_action(s, "b2b3") == 4 * 12 + 0  # b2 = point 4, N
    assert game.text_to_action(s, "b1a2") == 1 * 12 + 7  # NW
    assert game.text_to_action(s, "c1c2") == 2 * 12 + 0
    gote = s.play(game.text_to_action(s, "b1c2"))
    # Gote sees the board turned half a turn: its lion on b4 is point 1, towards sente is its
    # north and file a its east, so b4a3 is a step NE.
    assert game.text_to_action(gote, "b4a3") == 1 * 12 + 1
    drops = game.from_fen("1l1/3/3/1L1[CEGceg] w - - 0 1")
    assert game.text_to_action(drops, "C@a2") == 3 * 12 + 8
    assert game.text_to_action(drops, "E@c4") == 11 * 12 + 9
    assert game.text_to_action(drops, "G@a1") == 0 * 12 + 10
    promo = game.from_fen("l2/1C1/3/1L1[] w - - 0 1")
    assert game.text_to_action(promo, "b3b4+") == 7 * 12 + 0
    assert game.text_to_action(promo, "b3b4") == 7 * 12 + 11


def test_perft_from_the_start(fairy: FairyStockfish) -> None:
    start = RULES_ONLY.initial_state()
    assert start.fen() == fairy.fen() == START
    for depth in (1, 2, 3, 4):
        assert divide(start, depth) == fairy.perft(depth)
    assert sum(divide(start, 5).values()) == sum(fairy.perft(5).values()) == 2334


def test_random_games_move_by_move(fairy: FairyStockfish) -> None:
    """Along random games: the legal moves and the FEN at every ply, perft to depth 3 every
    10 plies, and the end of the game as Fairy-Stockfish judges it."""
    game = AnimalShogiGame()
    rng = np.random.default_rng(7)
    endings: set[str] = set()
    for _ in range(30):
        state, moves = refereed_random_game(game, RULES_ONLY, fairy, rng, every=10, depths=(3,))
        endings.add(state.termination)
        if state.termination in ("try", "checkmate", "stalemate"):
            # The side to move has lost: by the opponent's try, mate, or having no move.
            assert fairy.perft(1, moves) == {} and fairy.score(moves) == "mate 0"
            assert state.outcome() == (-1.0, 1.0)[state.to_play]
        else:
            assert fairy.perft(1, moves)  # Fairy-Stockfish leaves repetition and the cap to the arbiter
    assert {"try", "checkmate", "stalemate"} <= endings


def test_promotion_is_optional_and_an_unpromoted_chick_is_stuck(fairy: FairyStockfish) -> None:
    game = AnimalShogiGame()
    fen = "l2/1C1/3/1L1[] w - - 0 1"
    state = game.from_fen(fen)
    assert texts(state) == set(fairy.perft(1, fen=fen)) >= {"b3b4+", "b3b4"}
    hen = state.play(game.text_to_action(state, "b3b4+"))
    chick = state.play(game.text_to_action(state, "b3b4"))
    assert hen.fen() == fairy.fen(["b3b4+"], fen=fen) == "l+C1/3/3/1L1[] b - - 1 1"
    assert chick.fen() == fairy.fen(["b3b4"], fen=fen) == "lC1/3/3/1L1[] b - - 1 1"
    assert not hen.is_terminal and not chick.is_terminal
    stuck = chick.play(game.text_to_action(chick, "a4a3"))
    assert not any(text.startswith("b4") for text in texts(stuck))  # the chick can never move again
    with pytest.raises(IllegalMoveError):
        game.text_to_action(state, "b1b2+")  # only a chick reaching the last rank promotes


def test_captures_go_to_the_hand_and_drops(fairy: FairyStockfish) -> None:
    game = AnimalShogiGame()
    fen = "1l1/3/1+c1/1L1[] w - - 0 1"  # sente's lion takes a hen: a chick in hand
    state = game.from_fen(fen, ["b1b2"])
    assert state.fen() == fairy.fen(["b1b2"], fen=fen) == "1l1/3/1L1/3[C] b - - 0 1"
    assert texts(state) == set(fairy.perft(1, ["b1b2"], fen=fen))
    state = state.play(game.text_to_action(state, "b4a4"))
    assert {f"C@{square}" for square in ("a1", "b1", "c1", "a2", "c2", "a3", "b3", "c3", "b4", "c4")} <= texts(state)
    dropped = state.play(game.text_to_action(state, "c@c4"))  # either case of the letter
    assert dropped.fen() == fairy.fen(["b1b2", "b4a4", "C@c4"], fen=fen) == "l1C/3/1L1/3[] b - - 2 2"


def test_lion_may_not_move_into_check(fairy: FairyStockfish) -> None:
    fen = "1l1/3/1L1/3[] w - - 0 1"  # lions two ranks apart: rank 3 is no-man's-land
    state = AnimalShogiGame().from_fen(fen)
    assert texts(state) == set(fairy.perft(1, fen=fen)) == {"b2a1", "b2b1", "b2c1", "b2a2", "b2c2"}


@pytest.mark.parametrize(
    ("fen", "moves", "termination", "result"),
    [
        ("3/L2/2l/3[] w - - 0 1", ["a3a4"], "try", 1.0),  # sente's lion reaches rank 4
        ("3/L2/2l/3[] w - - 0 1", ["a3b4"], "try", 1.0),
        ("3/L2/2l/3[] b - - 0 1", ["c2c1"], "try", -1.0),  # gote's reaches rank 1
        ("3/2l/1g1/L2[] w - - 0 1", [], "stalemate", -1.0),  # no move and no check: a loss
        ("2l/3/1g1/L1+c[] b - - 0 1", ["c1b1"], "checkmate", -1.0),  # the hen checks, the giraffe guards
    ],
)
def test_game_ends(fairy: FairyStockfish, fen: str, moves: list[str], termination: str, result: float) -> None:
    state = AnimalShogiGame().from_fen(fen, moves)
    assert state.fen() == fairy.fen(moves, fen=fen)
    assert (state.termination, state.outcome()) == (termination, result)
    assert not state.legal_mask().any() and fairy.perft(1, moves, fen=fen) == {}
    assert fairy.score(moves, fen=fen) == "mate 0"  # a loss for the side to move


def test_a_lion_already_on_its_goal_counts_only_for_the_side_that_just_moved(fairy: FairyStockfish) -> None:
    fen = "1L1/3/1l1/3[] w - - 0 1"  # sente to move with its lion on rank 4: no win yet
    state = AnimalShogiGame().from_fen(fen)
    assert not state.is_terminal and texts(state) == set(fairy.perft(1, fen=fen))
    assert state.play(state.game.text_to_action(state, "b4a4")).termination == "try"


def test_fourfold_repetition_is_a_draw(fairy: FairyStockfish) -> None:
    game = AnimalShogiGame()
    state = game.initial_state()
    for ply, move in enumerate(LION_SHUFFLE * 3, start=1):
        assert not state.is_terminal
        state = state.play(game.text_to_action(state, move))
        assert state.repetitions == ply // 4
    assert (state.termination, state.outcome()) == ("repetition", 0.0) and not state.legal_mask().any()
    assert fairy.score((LION_SHUFFLE * 3)[:-1], move=LION_SHUFFLE[-1]) == "cp 0"
    unclaimed = RULES_ONLY.from_fen(START, LION_SHUFFLE * 3)
    assert unclaimed.repetitions == 3 and not unclaimed.is_terminal


def test_perpetual_check_loses(fairy: FairyStockfish) -> None:
    """Sente's giraffe checks on every move (b3a3, a3b3) while gote's lion steps a4-b4-a4:
    at the fourth occurrence sente, the checking side, loses.  The same game turned half a
    turn, gote checking, is a loss for gote."""
    game = AnimalShogiGame()
    fen = "l1g/1G1/3/2L[] w - - 0 1"
    cycle = ["b3a3", "a4b4", "a3b3", "b4a4"]
    quiet = ["c1c2", "c4b4", "c2c1", "b4c4"]  # the lion and gote's giraffe step out and back
    for moves in (cycle * 3, quiet + cycle * 2):
        assert game.from_fen(fen, moves).fen() == fairy.fen(moves, fen=fen)  # all legal
    state = game.from_fen(fen, cycle * 3)
    assert (state.termination, state.outcome()) == ("perpetual_check", -1.0)
    assert fairy.score((cycle * 3)[:-1], fen=fen, move=cycle[-1]) == "mate 1"  # gote's b4a4 wins
    turned = game.from_fen("l2/3/1g1/G1L[] b - - 0 1", ["b2c2", "c1b1", "c2b2", "b1c1"] * 3)
    assert (turned.termination, turned.outcome()) == ("perpetual_check", 1.0)
    # The checks must cover every move since the first of the earlier occurrences: quiet
    # moves in the first cycle make it a plain repetition.
    plain = game.from_fen(fen, quiet + cycle * 2)
    assert (plain.termination, plain.outcome()) == ("repetition", 0.0)
    assert fairy.score((quiet + cycle * 2)[:-1], fen=fen, move=cycle[-1]) == "cp 0"


def test_repetitions_count_across_captures(fairy: FairyStockfish) -> None:
    """Captured pieces can come back, and with them a position seen before the capture: it
    counts.  The fourth occurrence ends the game even though only three came after the last
    capture, as Fairy-Stockfish's search scores it (the held elephant keeps its evaluation of
    the position off zero, so "cp 0" is its draw)."""
    game = AnimalShogiGame()
    fen = "1l1/1c1/1C1/1L1[E] w - - 0 1"
    trade = ["b2b3", "b4b3", "C@b2", "b3b4", "b1a1", "C@b3", "a1a2", "b4c4", "a2b1", "c4b4"]
    shuffle = ["b1a1", "b4a4", "a1b1", "a4b4"]
    back = game.from_fen(fen, trade)
    assert back.fen() == fairy.fen(trade, fen=fen) == "1l1/1c1/1C1/1L1[E] w - - 8 6"
    assert back.repetitions == 1  # the start position, two captures ago
    third = [*trade, *shuffle]
    assert game.from_fen(fen, third).repetitions == 2 and fairy.score(third[:-1], fen=fen, move=third[-1]) != "cp 0"
    fourth = [*third, *shuffle]
    state = game.from_fen(fen, fourth)
    assert (state.termination, state.outcome()) == ("repetition", 0.0)
    assert fairy.score(fourth[:-1], fen=fen, move=fourth[-1]) == "cp 0"


def test_encoder_planes() -> None:
    game = AnimalShogiGame()
    start = game.initial_state()
    obs = game.encode(start)
    assert obs.shape == (194, 4, 3) and obs.dtype == np.float32
    # Own pieces (chick, elephant, giraffe, lion, hen) and the opponent's, sente's view.
    assert obs[0, 1, 1] == obs[1, 0, 0] == obs[2, 0, 2] == obs[3, 0, 1] == 1 and obs[4].sum() == 0
    assert obs[5, 2, 1] == obs[6, 3, 2] == obs[7, 3, 0] == obs[8, 3, 1] == 1
    assert obs[:10].sum() == 8 and obs[10:].sum() == 0  # no hands, no history, sente, ply 0
    gote = start.play(game.text_to_action(start, "b2b3"))  # sente takes the chick
    seen = game.encode(gote)
    # Gote sees the board turned half a turn: its pieces where sente saw its own.
    assert seen[1, 0, 0] == seen[2, 0, 2] == seen[3, 0, 1] == 1 and seen[0].sum() == 0
    assert seen[5, 1, 1] == 1  # sente's chick on b3, row 3 - 2, column 2 - 1
    assert (seen[16] == 1).all() and seen[17].sum() == 0 and seen[10:16].sum() == 0  # sente holds a chick
    # The start, one ply back, looks to gote as it looked to sente: it is its own half turn.
    assert (seen[24:48] == obs[:24]).all()
    assert (seen[192] == 1).all() and seen[193, 0, 0] == 1 / 256
    state = game.from_fen(START, LION_SHUFFLE * 2)
    again = game.encode(state)
    assert (again[22] == 1).all() and (again[23] == 1).all()  # seen twice before
    assert (again[4 * 24 + 22] == 1).all() and again[4 * 24 + 23].sum() == 0
    assert (game.encode_batch([start, gote, state]) == np.stack([obs, seen, again])).all()


def test_actions_and_observation_share_one_frame() -> None:
    """Every legal step starts on a square where the observation shows an own piece, every
    drop lands on an empty one: ``action_planes`` points are observation squares."""
    game = AnimalShogiGame()
    rng = np.random.default_rng(3)
    state = game.initial_state()
    for _ in range(300):
        if state.is_terminal:
            state = game.initial_state()
        obs = game.encode(state)
        for action in state.legal_actions():
            point, plane = divmod(int(action), 12)
            row, col = divmod(point, 3)
            if 8 <= plane <= 10:
                assert obs[:10, row, col].sum() == 0  # a drop: the square is empty
            else:
                assert obs[:5, row, col].sum() == 1  # a step: an own piece stands there
        state = state.play(int(rng.choice(state.legal_actions())))


def test_the_mirror_commutes_with_the_rules_but_not_the_start() -> None:
    """A game replayed through the left-right mirror (`dihedral` index 4) is the mirror image
    of the original at every move and ends the same way -- but it starts from the mirrored
    start position, with the elephants and giraffes swapped, which no game reaches."""
    game = AnimalShogiGame()
    table = mirror_actions()
    assert sorted(table) == list(range(144)) and (table[table] == np.arange(144)).all()
    mirrored_start = "elg/1c1/1C1/GLE[] w - - 0 1"
    assert mirrored_start != START
    rng = np.random.default_rng(4)
    for _ in range(20):
        state, image = game.initial_state(), game.from_fen(mirrored_start)
        while not state.is_terminal:
            assert (image.legal_mask()[table] == state.legal_mask()).all()
            assert (game.encode(image) == dihedral(game.encode(state), MIRROR)).all()
            action = int(rng.choice(state.legal_actions()))
            state, image = state.play(action), image.play(int(table[action]))
        assert image.termination == state.termination and image.outcome() == state.outcome()


def test_move_cap_truncates() -> None:
    game = AnimalShogiGame(max_moves=4)
    state = game.from_fen(START, LION_SHUFFLE)
    assert state.termination == "move_cap" and state.is_truncated and state.outcome() == 0.0
    assert not AnimalShogiGame(max_moves=None).from_fen(START, LION_SHUFFLE * 2).is_terminal
    with pytest.raises(ValueError):
        AnimalShogiGame(max_moves=0)


def test_bad_input_is_refused_and_changes_nothing() -> None:
    game = AnimalShogiGame()
    start = game.initial_state()
    for text in ("", "b2", "b2b5", "d1d2", "b2b3++", "X@b2", "L@b2", "C@d2", "Cb2"):
        with pytest.raises(GameFormatError):
            game.text_to_action(start, text)
    for text in ("C@a2", "b2b4", "b1b2", "a1a2", "b2b3+", "c1b2"):
        with pytest.raises(IllegalMoveError, match="illegal move"):
            game.text_to_action(start, text)
    for action in (-1, 144, 4 * 12 + 8):
        with pytest.raises(IllegalMoveError):
            start.play(action)
    with pytest.raises(IllegalMoveError, match="off the board"):
        game.action_to_text(start, 0 * 12 + 4)  # a1 south
    with pytest.raises(ValueError):
        start.legal_mask()[0] = True  # shared and read-only
    after = start.play(game.text_to_action(start, "b2b3"))
    assert after.fen() == "gle/1C1/3/ELG[C] b - - 0 1" and start.fen() == START
    with pytest.raises(ValueError, match="not over"):
        start.outcome()


@pytest.mark.parametrize(
    "fen",
    [
        "gle/1c1/1C1/ELG w - - 0 1",  # no hands
        "gle/1c1/1C1/ELG[]",  # no side to move
        "gle/1c1/1C1/ELG[] x",
        "gle/1c1/1C1[] w",  # three ranks
        "gle/1c1/1C1/ELGG[] w",
        "gle/1c1/1C1/ELE[] w",  # no sente lion
        "gle/1c1/1C1/LLG[] w",  # two
        "gle/1c1/1C1/EL1[GG] w",  # three giraffes
        "gle/1c1/1C1/ELG[C] w",  # three chicks
        "1l1/3/3/1L1[" + "C" * 128 + "] w",  # 128 chicks: the count wrapped round to -128 in an int8
        "1l1/3/3/1L1[" + "c" * 130 + "] w",
        "gle/1c1/1C1/ELG[L] w",  # a lion in hand
        "g+e1/1c1/1C1/ELG[] w",  # only a chick promotes
        "1l1/1C1/3/1L1[] w",  # gote, not to move, is in check
        "gle/1c1/1C1/ELG[] w - - 0",
        "gle/1c1/1C1/ELG[] w - - 0 0",
        "gle/1c1/1C1/ELG[] w - - 0 " + "1" * 4301,  # int()'s own ValueError, not a GameFormatError
    ],
)
def test_bad_fens(fen: str) -> None:
    with pytest.raises(GameFormatError, match="bad FEN"):
        AnimalShogiGame().from_fen(fen)
