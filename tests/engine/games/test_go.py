"""Go rules, encoder, notation and SGF on hand-made positions (GNU Go checks: test_go_gnugo.py)."""

from __future__ import annotations

import numpy as np
import pytest

import klent.engine.games as games
from klent.engine.games.base import GameFormatError, IllegalMoveError
from klent.engine.games.go import GoGame, GoState
from klent.engine.games.sgf import read_sgf, write_sgf


def position(game: GoGame, diagram: str, to_play: int = 0) -> GoState:
    """A set-up state from rows drawn top to bottom: X Black, O White, . empty."""
    rows = diagram.split()
    assert len(rows) == game.size and all(len(row) == game.size for row in rows)
    cells = "".join(rows)
    black = [p for p, c in enumerate(cells) if c == "X"]
    white = [p for p, c in enumerate(cells) if c == "O"]
    return game.setup_state(black, white, to_play)


def drawn(state: GoState) -> str:
    return "\n".join("".join(".XO"[v] for v in row) for row in state.board())


def play_text(state: GoState, *moves: str) -> GoState:
    for move in moves:
        state = state.play(state.game.text_to_action(state, move))
    return state


def test_registry_and_layout() -> None:
    game = games.get("go9")
    assert isinstance(game, GoGame)
    assert (game.name, game.num_actions, game.pass_action, game.observation_shape) == ("go9", 82, 81, (17, 9, 9))
    assert game.komi == 7.5 and game.max_moves == 2 * 81 and game.encoder_version == 1
    other = games.get("go13", komi=6.5)
    assert (other.name, other.komi, other.num_actions) == ("go13", 6.5, 170)
    assert games.get("go5").size == 5 and games.get("go19").num_actions == 362
    for size in (4, 20):
        with pytest.raises(ValueError, match="5..19"):
            GoGame(size)


# --- captures, suicide, ko --------------------------------------------------------------


def test_multi_stone_capture() -> None:
    game = GoGame(5)
    state = position(
        game,
        """
        .XXX.
        XOOOX
        .XX..
        .....
        .....
        """,
    )
    after = play_text(state, "D3")  # fills the last liberty of the three white stones
    assert drawn(after) == "\n".join([".XXX.", "X...X", ".XXX.", ".....", "....."])
    assert after.to_play == 1 and after.move_number == 1


def test_single_and_multi_stone_suicide_are_illegal() -> None:
    game = GoGame(5)
    single = position(
        game,
        """
        .O...
        O....
        .....
        .....
        .....
        """,
    )
    corner = game.parse_vertex("A5")
    assert not single.legal_mask()[corner]
    with pytest.raises(IllegalMoveError, match="A5: suicide"):
        single.play(corner)
    multi = position(
        game,
        """
        XX.O.
        OOO..
        .....
        .....
        .....
        """,
    )
    filling = game.parse_vertex("C5")
    assert not multi.legal_mask()[filling]
    with pytest.raises(IllegalMoveError, match="C5: suicide"):
        multi.play(filling)
    assert multi.legal_mask()[game.parse_vertex("E5")]


def test_capture_that_would_otherwise_be_suicide_is_legal() -> None:
    game = GoGame(5)
    state = position(
        game,
        """
        .OX..
        OX...
        X....
        .....
        .....
        """,
        to_play=0,
    )
    # A5 has no empty neighbour, but it takes the last liberties of B5 and A4.
    after = play_text(state, "A5")
    assert drawn(after).splitlines()[:3] == ["X.X..", ".X...", "X...."]


KO = """
    .XO..
    XO.O.
    .XO..
    .....
    .....
    """


def test_simple_ko_recapture_is_illegal_until_a_move_elsewhere() -> None:
    game = GoGame(5)
    state = play_text(position(game, KO), "C4")  # Black takes the ko
    assert state.board()[1, 1] == 0 and state.board()[1, 2] == 1
    retake = game.parse_vertex("B4")
    assert not state.legal_mask()[retake]
    with pytest.raises(IllegalMoveError, match="B4: .*superko"):
        state.play(retake)
    later = play_text(state, "E1", "D1")  # a ko threat and an answer
    assert later.legal_mask()[retake]
    assert play_text(later, "B4").board()[1, 2] == 0


TRIPLE_KO = """
    .XO...XO.
    XO.O.X.XO
    .XO...XO.
    .........
    .XO......
    XO.O.....
    .XO......
    .........
    .........
    """


def test_positional_superko_forbids_a_long_cycle_that_simple_ko_allows() -> None:
    """Triple ko: six captures in turn would recreate the start position."""
    game = GoGame(9)
    start = position(game, TRIPLE_KO)
    # Kos: the first (top left) and third (left) have a white stone inside, the second
    # (top right) a black one.  Black takes ko 1, White ko 2, Black ko 3, White ko 1, Black ko 2.
    state = play_text(start, "C8", "G8", "C4", "B8", "H8")
    assert state.move_number == 5 and state.to_play == 1
    # White taking ko 3 back is not an immediate recapture (Black's last move was elsewhere),
    # so simple ko would allow it, but it recreates the start position.
    retake = game.parse_vertex("B4")
    start_board = start.board().copy()
    assert not state.legal_mask()[retake]
    with pytest.raises(IllegalMoveError, match="B4: .*superko"):
        state.play(retake)
    # The same capture is legal once the position has changed elsewhere.
    elsewhere = play_text(state, "E1", "E2")
    assert elsewhere.legal_mask()[retake]
    np.testing.assert_array_equal(start.board(), start_board)


def test_occupied_points_and_pass_in_the_mask() -> None:
    game = GoGame(9)
    state = play_text(game.initial_state(), "E5")
    mask = state.legal_mask()
    assert mask.dtype == np.bool_ and mask.shape == (82,)
    assert not mask[game.parse_vertex("E5")] and mask[game.pass_action]
    assert mask.sum() == 81  # 80 empty points + pass
    with pytest.raises(IllegalMoveError, match="E5: the point is occupied"):
        state.play(game.parse_vertex("E5"))


def test_legal_mask_agrees_with_play_in_random_games() -> None:
    game = GoGame(7)
    rng = np.random.default_rng(7)
    for _ in range(6):
        state = game.initial_state()
        while not state.is_terminal:
            mask = state.legal_mask()
            for action in range(game.num_actions):
                if mask[action]:
                    state.play(action)
                else:
                    with pytest.raises(IllegalMoveError):
                        state.play(action)
            stones = np.flatnonzero(mask[:-1])
            action = int(rng.choice(stones)) if len(stones) and rng.random() < 0.97 else game.pass_action
            state = state.play(action)


# --- end of game and scoring ---------------------------------------------------------------


WALLS = """
    ..XO.
    ..XO.
    ..XO.
    ..XO.
    ..XO.
    """


def test_area_score_with_komi_and_integer_komi_draw() -> None:
    start = position(GoGame(5, komi=7.5), WALLS)
    # Black: 5 stones + 10 points; White: 5 stones + 5 points.
    assert start.score() == 15 - 10 - 7.5
    ownership = start.ownership()
    assert (ownership[:, :3] == 1).all() and (ownership[:, 3:] == -1).all()
    final = start.play(start.game.pass_action).play(start.game.pass_action)
    assert final.is_terminal and not final.is_truncated and final.outcome() == -1.0
    draw = position(GoGame(5, komi=5), WALLS)
    final = draw.play(25).play(25)
    assert final.score() == 0.0 and final.outcome() == 0.0
    black_wins = position(GoGame(5, komi=4.5), WALLS).play(25).play(25)
    assert black_wins.outcome() == 1.0 and black_wins.reward_for(1) == -1.0


def test_neutral_points_count_for_nobody() -> None:
    state = position(
        GoGame(5, komi=0),
        """
        .X.O.
        .X.O.
        .X.O.
        .X.O.
        .X.O.
        """,
    )
    assert state.score() == 0.0
    assert (state.ownership()[:, 2] == 0).all() and (state.ownership()[:, 0] == 1).all()


def test_two_consecutive_passes_end_the_game() -> None:
    game = GoGame(9)
    state = game.initial_state()
    passed = state.play(game.pass_action)
    assert not passed.is_terminal and passed.consecutive_passes == 1
    resumed = play_text(passed, "C3", "pass")
    assert not resumed.is_terminal and resumed.consecutive_passes == 1
    over = resumed.play(game.pass_action)
    assert over.is_terminal and not over.legal_mask().any()
    with pytest.raises(IllegalMoveError, match="game is over"):
        over.play(game.pass_action)
    with pytest.raises(IllegalMoveError, match="game is over"):
        game.text_to_action(over, "D4")
    with pytest.raises(ValueError):
        resumed.outcome()
    assert over.outcome() == -1.0  # White's lone stone at C3 owns the whole board


def test_move_cap_ends_and_scores_the_game() -> None:
    game = GoGame(5, komi=0.5, max_moves=4)
    state = play_text(game.initial_state(), "C3", "D4", "B2")
    assert not state.is_terminal
    capped = play_text(state, "pass")
    assert capped.is_terminal and capped.is_truncated and capped.outcome() == 1.0
    assert not capped.legal_mask().any()
    both_passed = play_text(GoGame(5, max_moves=2).initial_state(), "pass", "pass")
    assert both_passed.is_terminal and not both_passed.is_truncated


# --- set-up positions and handicap -----------------------------------------------------------


def test_fixed_handicap() -> None:
    game = GoGame(19)
    state = game.handicap_state(9)
    assert state.to_play == 1 and state.move_number == 0
    stones = {game.vertex(p) for p in np.flatnonzero(state.board().ravel() == 1)}
    assert stones == {"D4", "K4", "Q4", "D10", "K10", "Q10", "D16", "K16", "Q16"}
    nine = GoGame(9)
    assert {nine.vertex(p) for p in nine.fixed_handicap_points(2)} == {"C3", "G7"}
    assert {game.vertex(p) for p in GoGame(19).fixed_handicap_points(5)} == {"D4", "Q16", "D16", "Q4", "K10"}
    for size, stones_count in ((9, 1), (9, 10), (8, 5), (5, 2)):
        with pytest.raises(ValueError):
            GoGame(size).fixed_handicap_points(stones_count)


def test_free_handicap_spreads_distinct_stones() -> None:
    nine = GoGame(9)
    assert nine.free_handicap_points(4) == nine.fixed_handicap_points(4)
    for size, stones in ((9, 12), (5, 3), (19, 20), (9, 80)):
        game = GoGame(size)
        points = game.free_handicap_points(stones)
        assert len(set(points)) == stones
        state = game.setup_state(points, to_play=1)
        assert (state.board() == 1).sum() == stones
    edge = {p for p in range(81) if p < 9 or p >= 72 or p % 9 in (0, 8)}
    assert not edge & set(nine.free_handicap_points(12))  # room enough: off the first line
    for stones in (1, 81):
        with pytest.raises(ValueError):
            nine.free_handicap_points(stones)


def test_setup_state_validates_and_starts_the_history() -> None:
    game = GoGame(9)
    state = game.setup_state(black=[0, 10], white=[1], to_play=1)
    assert state.to_play == 1 and state.previous is None and state.start() is state
    assert state.board()[0, 0] == 1 and state.board()[0, 1] == -1
    with pytest.raises(GameFormatError, match="twice"):
        game.setup_state(black=[3], white=[3])
    with pytest.raises(GameFormatError, match="off the"):
        game.setup_state(black=[81])
    with pytest.raises(GameFormatError, match="no liberty"):
        game.setup_state(black=[0], white=[1, 9])


def test_board_position_forgets_the_game_line() -> None:
    game = GoGame(9)
    state = play_text(game.initial_state(), "E5", "D4")
    again = game.board_position(state, to_play=0)
    assert drawn(again) == drawn(state) and again.to_play == 0 and again.start() is again


@pytest.mark.parametrize("komi", [150.5, -1e308, float("nan"), float("inf")])
def test_komi_beyond_150_or_not_finite_is_refused(komi: float) -> None:
    with pytest.raises(ValueError, match="komi"):
        GoGame(9, komi=komi)
    assert GoGame(9, komi=-150).komi == -150


def test_replay_under_another_komi() -> None:
    game = GoGame(9)
    state = play_text(game.handicap_state(2), "E5", "D4", "pass")
    moved = game.with_komi(0.5).replay(state)
    assert moved.game.komi == 0.5 and moved.game.name == "go9"
    assert moved.moves() == state.moves() and drawn(moved) == drawn(state)
    assert moved.score() - state.score() == 7.0


# --- encoder ----------------------------------------------------------------------------------


def test_encoder_planes_history_and_colour() -> None:
    game = GoGame(9)
    states = [game.initial_state()]
    for move in ("E5", "C3", "G7", "pass", "D4", "C4", "E4", "C5", "F5", "C6"):
        states.append(play_text(states[-1], move))
    first = game.encode(states[1])  # White to move after Black's E5
    assert first.shape == (17, 9, 9) and first.dtype == np.float32
    e5 = np.unravel_index(game.parse_vertex("E5"), (9, 9))
    assert first[8][e5] == 1.0 and first[8].sum() == 1.0  # the opponent's stone, now
    assert first[:8].sum() == 0.0 and first[9:16].sum() == 0.0  # nothing before the start
    assert (first[16] == 0.0).all()
    last = states[-1]
    obs = game.encode(last)
    mover = 1 if last.to_play == 0 else -1
    assert (obs[16] == (1.0 if mover == 1 else 0.0)).all()
    for t in range(8):
        board = states[-1 - t].board()
        np.testing.assert_array_equal(obs[t], board == mover)
        np.testing.assert_array_equal(obs[8 + t], board == -mover)
    batch = game.encode_batch(states[-3:])
    for i, state in enumerate(states[-3:]):
        np.testing.assert_array_equal(batch[i], game.encode(state))


# --- notation, bad input, immutability --------------------------------------------------------


def test_vertex_text_round_trip() -> None:
    for size in (5, 9, 19):
        game = GoGame(size)
        state = game.initial_state()
        for action in range(game.num_actions):
            text = game.action_to_text(state, action)
            assert game.text_to_action(state, text) == action
            assert game.text_to_action(state, f" {text.lower()} ") == action
    game = GoGame(9)
    assert game.parse_vertex("A1") == 8 * 9  # bottom-left corner: last row, first column
    assert game.parse_vertex("J9") == 8  # top-right corner (no letter I)
    assert game.vertex(game.pass_action) == "pass" and game.parse_vertex("PASS") == 81
    assert GoGame(19).vertex(0) == "A19"


@pytest.mark.parametrize("text", ["", "I5", "Z1", "A0", "A10", "K1", "resign", "D", "4D", "D4x"])
def test_malformed_vertices(text: str) -> None:
    game = GoGame(9)
    with pytest.raises(GameFormatError):
        game.text_to_action(game.initial_state(), text)


def test_illegal_input_names_the_move_and_changes_nothing() -> None:
    game = GoGame(9)
    state = play_text(game.initial_state(), "D4", "E5")
    before = (drawn(state), state.to_play, state.move_number, state.legal_mask().copy(), game.encode(state))
    with pytest.raises(IllegalMoveError, match="D4"):
        game.text_to_action(state, "d4")
    with pytest.raises(IllegalMoveError, match="D4"):
        state.play(game.parse_vertex("D4"))
    with pytest.raises(IllegalMoveError):
        state.play(82)
    with pytest.raises(IllegalMoveError):
        state.play(-1)
    after = (drawn(state), state.to_play, state.move_number, state.legal_mask(), game.encode(state))
    assert before[:3] == after[:3]
    np.testing.assert_array_equal(before[3], after[3])
    np.testing.assert_array_equal(before[4], after[4])
    assert play_text(state, "C3").move_number == 3


def test_states_are_immutable() -> None:
    game = GoGame(9)
    state = play_text(game.initial_state(), "D4")
    with pytest.raises(ValueError):
        state.board()[0, 0] = 1
    child = play_text(state, "E5")
    assert state.board()[4, 4] == 0 and child.board()[4, 4] == -1 and child.previous is state
    mask = state.legal_mask()
    mask[:] = False
    assert state.legal_mask().sum() == 81
    assert child.moves() == [game.parse_vertex("D4"), game.parse_vertex("E5")]
    assert child.last_action == game.parse_vertex("E5") and child.start() is state.start()


# --- SGF ----------------------------------------------------------------------------------------


def test_sgf_round_trip_of_a_handicap_game() -> None:
    game = GoGame(9, komi=0.5)
    rng = np.random.default_rng(3)
    state = game.handicap_state(3)
    while not state.is_terminal:
        legal = state.legal_actions()
        state = state.play(int(rng.choice(legal)) if rng.random() < 0.95 else game.pass_action)
    text = write_sgf(state, black="klent", white="gnugo")
    record = read_sgf(text)
    assert record.game.size == 9 and record.game.komi == 0.5 and record.handicap == 3
    assert (record.black, record.white) == ("klent", "gnugo")
    assert record.moves == state.moves() and len(record.states) == len(state.moves()) + 1
    assert drawn(record.states[0]) == drawn(game.handicap_state(3)) and record.states[0].to_play == 1
    assert drawn(record.final) == drawn(state) and record.final.is_terminal
    expected = "0" if state.score() == 0 else f"{'B' if state.score() > 0 else 'W'}+{abs(state.score()):g}"
    assert record.result == expected
    assert read_sgf(text.encode()).moves == record.moves


def test_sgf_reads_a_hand_written_record() -> None:
    record = read_sgf("(;GM[1]FF[4]SZ[9]KM[6.5]AB[cc][gg]AW[ee]PL[W]RE[W+R];W[dc];B[];W[ab];B[tt])")
    game = record.game
    assert game.komi == 6.5 and record.result == "W+R" and record.handicap == 0
    assert [game.vertex(a) for a in record.moves] == ["D7", "pass", "A8", "pass"]
    assert record.states[0].to_play == 1 and not record.final.is_terminal
    board = record.final.board()
    assert board[2, 2] == board[6, 6] == 1 and board[4, 4] == board[2, 3] == board[1, 0] == -1


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("garbage", "malformed SGF"),
        ("(;SZ[9]", "malformed SGF"),
        ("(;GM[2]SZ[9])", "not a Go record"),
        ("(;SZ[4])", "board size"),
        ("(;SZ[9]KM[lots])", "malformed SGF"),
        ("(;SZ[9]AB[zz])", "malformed SGF"),
        ("(;SZ[9];B[zz])", "malformed move"),
        ("(;SZ[9];B[aa];B[bb])", "B moves when W is to play"),
        ("(;SZ[9];B[aa];W[aa])", "occupied"),
        ("(;SZ[9];B[aa];AB[cc])", "only the first node"),
        ("(;SZ[9]AB[aa]AW[ab][ba])", "no liberty"),
        ("(;SZ[9]KM[1e308])", "outside klent's"),  # #24: beyond the komi any other input may give
        ("(;SZ[9]KM[-150.5])", "outside klent's"),
    ],
)
def test_malformed_sgf(text: str, reason: str) -> None:
    with pytest.raises(GameFormatError, match=reason):
        read_sgf(text)


def test_early_pass_off_allows_a_pass_only_when_no_stone_can_be_played() -> None:
    """The training rule `GoGame(early_pass=False)`: no pass while a stone can be played; with
    `fill_own_eyes=False` too, a player left with nothing but its own eyes passes, so random
    self-play runs to a board where every dead stone is captured."""
    strict = GoGame(5, early_pass=False)
    start = strict.initial_state()
    assert not start.legal_mask()[strict.pass_action] and GoGame(5).initial_state().legal_mask()[strict.pass_action]
    with pytest.raises(IllegalMoveError, match="a stone can still be played"):
        start.play(strict.pass_action)
    # Black's two eyes, every other point Black's: Black can only pass (own eyes, eye filling
    # off); White can only play into an eye, which is suicide, so White passes too.
    diagram = """
        X.XXX
        XXXXX
        XXXXX
        XXXXX
        XXX.X
    """
    played_out = GoGame(5, early_pass=False, fill_own_eyes=False)
    black = position(played_out, diagram)
    assert np.flatnonzero(black.legal_mask()).tolist() == [played_out.pass_action]
    white = black.play(played_out.pass_action)
    assert np.flatnonzero(white.legal_mask()).tolist() == [played_out.pass_action]
    assert white.play(played_out.pass_action).is_terminal
    assert not played_out.with_komi(6.5).early_pass and not played_out.with_encoder(2).early_pass
    # Random self-play under both rules runs to a board whose every empty point is an eye of one
    # colour: no dead stone is left for a referee to remove, so Tromp-Taylor's count is final.
    rng = np.random.default_rng(1)
    for _ in range(5):
        state = GoGame(9, early_pass=False, fill_own_eyes=False, max_moves=500).initial_state()
        while not state.is_terminal:
            legal = np.flatnonzero(state.legal_mask())
            state = state.play(int(rng.choice(legal)))
        assert not state.is_truncated  # two passes, not the cap
        board = state.board()
        empty = np.argwhere(board == 0)
        for r, c in empty:  # every empty point is an eye: all its neighbours one colour
            colours = {int(board[rr, cc]) for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1))
                       if 0 <= rr < 9 and 0 <= cc < 9}
            assert len(colours) == 1 and 0 not in colours


def test_fill_own_eyes_off_masks_and_refuses_only_true_own_eyes() -> None:
    """The training rule `GoGame(fill_own_eyes=False)`: Black may not fill its corner eye (A1)
    nor its eye at B3, but may fill B3 once it is a false eye (two White stones on its
    diagonals); White's moves are untouched, and the default game keeps Go's rules."""
    diagram = """
        .....
        .X...
        X.X..
        XXX..
        .X...
    """
    strict = GoGame(5, fill_own_eyes=False)
    state = position(strict, diagram)
    a1, b3, d1 = strict.parse_vertex("A1"), strict.parse_vertex("B3"), strict.parse_vertex("D1")
    mask = state.legal_mask()
    assert not mask[a1] and not mask[b3]  # Black's corner eye and its eye at B3
    assert mask[d1] and mask[strict.pass_action]
    with pytest.raises(IllegalMoveError, match="fills its own eye"):
        state.play(a1)
    solid = position(strict, """
        .....
        .....
        .X...
        XXX..
        .X...
    """)
    with pytest.raises(IllegalMoveError, match="occupied"):  # a stone ringed by its own: no eye
        solid.play(strict.parse_vertex("B2"))
    assert position(GoGame(5), diagram).legal_mask()[a1]  # Go's own rules allow it
    # A false eye (White on A4 and C4, two of B3's diagonals) may be filled.
    false = position(strict, """
        .....
        OXO..
        X.X..
        XXX..
        .X...
    """)
    assert false.legal_mask()[b3]
    white_to_play = position(strict, diagram, to_play=1)
    assert white_to_play.legal_mask()[a1] == position(GoGame(5), diagram, to_play=1).legal_mask()[a1]
    # The option survives the game's other variants.
    assert not strict.with_komi(6.5).fill_own_eyes and not strict.with_encoder(2).fill_own_eyes
