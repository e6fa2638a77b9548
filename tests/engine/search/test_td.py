"""TD search and Dyna-2 (klent/engine/search/td.py, td_kernels.py) and offline TD learning
(klent/training/td_learning.py): local shape features, weight sharing, the NTD2(lambda) update, the
search's choices, its memory across moves, its limits, and the permanent-weights file."""

from __future__ import annotations

import io
import json
import threading
import zipfile

import numpy as np
import pytest

from klent.engine.games import go_kernels as gk
from klent.engine.games.go import GoGame
from klent.engine.search import td_features as tf
from klent.engine.search import td_kernels as tk
from klent.engine.search import td_traces as tt
from klent.engine.search.td import Features, ShapeWeights, TdConfig, TdSearch
from klent.training.td_learning import train


def setup(game: GoGame, rows: list[str], to_play: int = 0):
    """A position from rows of "X" (Black), "O" (White) and "." (row 0 at the top)."""
    black = [r * game.size + c for r, row in enumerate(rows) for c, ch in enumerate(row) if ch == "X"]
    white = [r * game.size + c for r, row in enumerate(rows) for c, ch in enumerate(row) if ch == "O"]
    return game.setup_state(black, white, to_play)


def board(size: int, stones: dict[int, int]) -> np.ndarray:
    flat = np.zeros(size * size, dtype=np.int8)
    for point, color in stones.items():
        flat[point] = color
    return flat


# --- features ------------------------------------------------------------------------------


def test_feature_and_weight_counts_are_the_papers_table_1():
    geometry = tf.windows(9, (1, 2, 3))
    assert geometry.count == 81 + 64 + 49
    assert geometry.features == 969894  # Table 1, "Total features"
    unique = {(k, s): tf.square_table(9, k, s)[2] for k in (1, 2, 3) for s in ("LI", "LD")}
    assert unique[1, "LI"] == 1 and unique[1, "LD"] == 15
    assert unique[2, "LI"] == 8 and unique[2, "LD"] == 344
    assert unique[3, "LI"] == 1418
    # Table 1 prints 61876 for 3x3 LD, but its own total of unique weights, 63303, needs 61517.
    assert unique[3, "LD"] == 61517
    assert sum(unique.values()) == 63303


def test_window_codes_of_a_hand_made_position():
    # Black A9 (point 0), White B9 (point 1): digit 1 for black, 2 for white, 3**cell.
    codes = Features(9, ((1, 2, 3), ("none",)), None).codes(board(9, {0: 1, 1: -1}))
    first_2x2, first_3x3 = 81, 81 + 64
    assert codes[0] == 1 and codes[1] == 2 and codes[2] == 0
    assert codes[first_2x2] == 1 + 2 * 3  # square at A9: A9 is cell 0, B9 cell 1
    assert codes[first_2x2 + 1] == 2  # square at B9: B9 is its cell 0
    assert codes[first_2x2 + 8] == 0  # square at A8 (second row of squares): empty
    assert codes[first_3x3] == 1 + 2 * 3
    assert np.count_nonzero(codes) == 2 + 2 + 2  # squares at A9 and B9 of each size
    # A black stone on E5 is cell i of exactly one of the nine 3x3 squares covering it, for each i.
    centre = Features(9, ((3,), ("none",)), None).codes(board(9, {40: 1}))
    assert sorted(centre[centre != 0]) == [3**i for i in range(9)]


def test_location_independent_sharing_of_2x2_shapes():
    index, sign, _ = tf.square_table(9, 2, "LI")
    one_black = [1, 3, 9, 27]  # a black stone on each cell of the square
    one_white = [2, 6, 18, 54]
    for location in (0, 5, 63):
        at = location * 81
        assert len({index[at + c] for c in one_black + one_white}) == 1
        assert all(sign[at + c] == 1 for c in one_black) and all(sign[at + c] == -1 for c in one_white)
        assert index[at + 1] == index[1]  # the same weight at every location
    adjacent = [1 + 3, 1 + 9, 3 + 27, 9 + 27]  # two black stones side by side, 4 ways
    diagonal = [1 + 27, 3 + 9]
    assert len({index[c] for c in adjacent}) == 1 and len({index[c] for c in diagonal}) == 1
    assert index[adjacent[0]] != index[diagonal[0]] != index[1]
    # Neutral shapes have no feature: the empty square, and black/white on the diagonals,
    # whose colour inversion is a quarter turn of itself.
    assert sign[0] == 0 and sign[1 + 2 * 3 + 2 * 9 + 27] == 0


def test_location_dependent_sharing_of_1x1_and_2x2_shapes():
    index, sign, _ = tf.square_table(9, 1, "LD")
    corners = [0, 8, 72, 80]  # A9, J9, A1, J1
    black = [p * 3 + 1 for p in corners]
    white = [p * 3 + 2 for p in corners]
    assert len({index[f] for f in black + white}) == 1
    assert all(sign[f] == 1 for f in black) and all(sign[f] == -1 for f in white)
    assert index[1 * 3 + 1] != index[0 * 3 + 1]  # B9 is not a corner...
    assert index[1 * 3 + 1] == index[9 * 3 + 1]  # ...but the diagonal mirror of A8
    index2, sign2, _ = tf.square_table(9, 2, "LD")
    # A black stone on the board's corner point: cell 0 of the A9 square, cell 1 of the H9
    # square (top right); on cell 3 of the A9 square (B8) it is another shape there.
    assert index2[0 * 81 + 1] == index2[7 * 81 + 3] and sign2[7 * 81 + 3] == 1
    assert index2[0 * 81 + 1] != index2[0 * 81 + 27]


def test_unshared_features_have_a_weight_per_location_and_no_empty_shape():
    index, sign, count = tf.square_table(9, 2, "none")
    assert count == 64 * 81 and np.array_equal(index, np.arange(count))
    assert not sign.reshape(64, 81)[:, 0].any() and sign.reshape(64, 81)[:, 1:].all()


def test_afterstate_values_match_the_positions_after_each_move_captures_included():
    rng = np.random.default_rng(1)
    count = ShapeWeights.weight_count(9, (1, 2, 3), ("LI", "LD"))
    features = Features(9, ((1, 2, 3), ("none",)), ShapeWeights(9, (1, 2, 3), ("LI", "LD"), rng.normal(0, 0.1, count)))
    features.theta[:] = rng.normal(0, 0.1, features.theta.shape[0])
    # White's B9-C9 and E6 have one liberty each: Black captures at A9 and at E5.
    rows = [".OOX.....", "XXX......", "....X....", "...XOX...", ".........",
            ".........", ".........", ".........", "........."]
    state = setup(GoGame(9), rows)
    legal = state.legal_mask()
    after = features.afterstate_logits(np.asarray(state.board()).ravel(), 1, legal)
    for point in np.flatnonzero(legal[:81]):
        played = np.asarray(state.play(int(point)).board()).ravel()
        assert after[point] == pytest.approx(features.logit(played)), point
    stones = np.count_nonzero(np.asarray(state.board()))
    assert np.count_nonzero(state.play(0).board()) == stones - 1 and np.count_nonzero(state.play(40).board()) == stones


# --- the update --------------------------------------------------------------------------


def test_ntd2_update_matches_a_hand_computation():
    # Three states: s0 (features 0, 1), s1 (the other colour: feature 4), s2 (features 1, -2,
    # 3 and a read-only logit part of 0.25).  The update of s2 towards a target of 1 with
    # alpha 0.5 and lambda 0.4:
    #   logit(s2) = 0.25 - 0.2 - 0.1 + 0.0 = -0.05, delta = 1 - sigmoid(-0.05) = 0.5124974
    #   theta += alpha * delta * (phi(s2) / 3 + lambda * phi(s0) / 2), s1 untouched.
    traces = tt.new_traces(5)
    states = [([0, 1], [1, 1]), ([4], [1]), ([1, 2, 3], [1, -1, 1])]
    arrays = [(np.array(i, dtype=np.int32), np.array(s, dtype=np.int8)) for i, s in states]
    for t, (index, sign) in enumerate(arrays):
        tt.trace_add(t % 2, t, index, sign, len(index), 0.4, traces)
    theta = np.array([0.5, -0.2, 0.1, 0.0, 0.3])
    index, sign = arrays[2]
    delta = tt.ntd2_update(2, 1.0, index, sign, 3, 0.25, theta, 0.5, 2, traces)
    assert delta == pytest.approx(0.5124973965)
    assert theta == pytest.approx([0.5512497396, -0.0633340276, 0.0145837673, 0.0854162327, 0.3])
    # With a horizon of no earlier ply, weight 0 (only in s0) leaves the trace; weight 1,
    # refreshed by s2, keeps its whole trace 1/3 + 0.4/2.  Zero weights: delta = 1 - 0.5.
    again = np.zeros(5)
    assert tt.ntd2_update(2, 1.0, index, sign, 3, 0.0, again, 0.5, 0, traces) == 0.5
    assert again == pytest.approx([0.0, 0.25 * (1 / 3 + 0.2), -0.25 / 3, 0.25 / 3, 0.0])
    tt.trace_clear(0, traces)
    tt.trace_clear(1, traces)
    assert not (traces[0].any() or traces[1].any() or traces[3].any())


def test_alpha_one_moves_the_logit_by_the_td_error():
    features = Features(9, ((1, 2), ("none",)), None)
    flat = board(9, {40: 1, 41: -1, 30: 1})
    codes = features.codes(flat)
    index = np.zeros(features.geometry.count, dtype=np.int32)
    sign = np.zeros(features.geometry.count, dtype=np.int8)
    count = tk._record(codes, features.geometry.base, features.index, features.sign, index, sign)
    traces = tt.new_traces(features.theta.shape[0])
    tt.trace_add(0, 0, index, sign, count, 0.0, traces)
    before = features.logit(flat)
    delta = tt.ntd2_update(0, 0.8, index, sign, count, 0.0, features.theta, 1.0, 0, traces)
    assert delta == pytest.approx(0.3)
    assert features.logit(flat) - before == pytest.approx(delta)


# --- the search --------------------------------------------------------------------------

# Black's three stones D6 E6 F6 have one liberty, E7; Black E7 joins them to the wall on row 8
# and nothing else saves them (every white stone around them belongs to the big white group).
# A komi of -41 makes the game turn on them: Black wins by 4 with them, loses by 4 without.
ATARI = [
    ".........",
    "XXXXXXXXX",
    "OOOO.OOOO",
    "OOOXXXOOO",
    "OOOOOOOOO",
    ".........",
    ".........",
    ".........",
    ".........",
]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_search_finds_the_only_saving_move_of_a_group_in_atari(seed):
    game = GoGame(9, komi=-41)
    state = setup(game, ATARI)
    result = TdSearch(game, TdConfig(seed=seed)).choose(state, simulations=300)
    assert game.action_to_text(state, result.action) == "E7"
    assert result.simulations == 300
    assert result.value == pytest.approx(float(result.q.max()))
    legal = state.legal_mask()
    assert np.array_equal(result.legal, legal) and not result.q[~legal].any()


def test_candidates_limit_the_choice_but_not_the_values():
    """The greedy choice among given candidates (a network's most probable moves): the best of
    them even when another move is better; the values still cover every legal move; candidates
    none of which is playable (a pass only) leave the choice to every move."""
    game = GoGame(9, komi=-41)
    state = setup(game, ATARI)
    saving = game.parse_vertex("E7")
    others = [game.parse_vertex(v) for v in ("A1", "J9", "B2")]
    limited = TdSearch(game, TdConfig(seed=0)).choose(state, simulations=300, candidates=others)
    assert limited.action in others and limited.action != saving
    assert limited.value == pytest.approx(float(max(limited.q[a] for a in others)))
    assert limited.q[saving] > limited.value
    free = TdSearch(game, TdConfig(seed=0)).choose(state, simulations=300, candidates=[game.pass_action])
    assert free.action == saving


WALLS = [  # Black's area: columns A-C, White's: D-E; the simulations below play one move
    "..XO.",
    "..XO.",
    "..XO.",
    "..XO.",
    "..XO.",
]


def test_first_moves_draw_each_simulations_first_move():
    """``first_moves`` (a network's policy) plays the simulated games' first move: one-move
    games show it in the ownership.  A black stone on E5 (point 4) is Black's and leaves the
    rest of column E to no one; a stone in Black's own area changes nothing."""
    game = GoGame(5, komi=0.0, max_moves=1)
    state = setup(game, WALLS)
    e5, e4 = game.parse_vertex("E5"), game.parse_vertex("E4")
    one_hot = np.zeros(game.num_actions)
    one_hot[e5] = 1.0
    forced = TdSearch(game, TdConfig(seed=0)).choose(state, simulations=20, first_moves=one_hot)
    assert forced.ownership is not None and forced.simulations == 20
    assert forced.ownership[0, 4] == 1.0 and (forced.ownership[1:, 4] == 0.0).all()
    halves = np.zeros(game.num_actions)
    halves[[e5, e4]] = 0.5
    split = TdSearch(game, TdConfig(seed=0)).choose(state, simulations=400, first_moves=halves)
    assert split.ownership is not None
    assert split.ownership[0, 4] + split.ownership[1, 4] == pytest.approx(1.0)  # one of the two, every game
    assert 0.4 < split.ownership[0, 4] < 0.6
    # Without it the first move is epsilon-greedy on the values the simulations learn, which
    # keep Black mostly out of column E here.
    free = TdSearch(game, TdConfig(seed=0)).choose(state, simulations=400)
    assert free.ownership is not None and free.ownership[0, 4] < 0.3
    # A draw the player may not play (an occupied point) falls back to the usual choice.
    occupied = np.zeros(game.num_actions)
    occupied[game.parse_vertex("C5")] = 1.0
    fallback = TdSearch(game, TdConfig(seed=0)).choose(state, simulations=400, first_moves=occupied)
    assert fallback.ownership is not None and fallback.ownership[0, 4] < 0.3


def test_white_captures_the_group_in_atari():
    game = GoGame(9, komi=-41)
    state = setup(game, ATARI, to_play=1)
    result = TdSearch(game, TdConfig(seed=0)).choose(state, simulations=300)
    assert game.action_to_text(state, result.action) == "E7"
    # Ownership from White's view: the wall on row 8 stays Black's, White's big group White's.
    assert result.ownership is not None and result.ownership.shape == (9, 9)
    assert (result.ownership[1] < -0.8).all() and (result.ownership[4] > 0.8).all()


def test_weights_are_carried_between_moves_and_cleared_for_a_new_game():
    game = GoGame(9)
    search = TdSearch(game, TdConfig(seed=3))
    state = game.initial_state()
    first = search.choose(state, simulations=50)
    learnt = search.transient.copy()
    assert learnt.any()
    reply = 20 if first.action != 20 else 21
    state = state.play(first.action).play(reply)
    search.choose(state, simulations=0, seconds=1.0, stop=lambda: True)  # no simulation: no learning
    assert np.array_equal(search.transient, learnt)
    search.choose(state, simulations=20)
    assert not np.array_equal(search.transient, learnt)
    undone = state.previous
    assert undone is not None
    search.choose(undone, simulations=0)  # an undo stays in the same game
    assert search.transient.any()
    search.choose(game.with_komi(6.5).initial_state(), simulations=0)  # another game
    assert not search.transient.any()
    search.choose(state, simulations=20)
    search.new_game()
    assert not search.transient.any()


def test_budgets_and_stop_flag_are_honoured():
    game = GoGame(9)
    search = TdSearch(game, TdConfig(seed=0))
    state = game.initial_state()
    event = threading.Event()
    event.set()
    stopped = search.choose(state, simulations=100, stop=event)
    assert stopped.simulations == 0 and stopped.ownership is None
    calls = []

    def stop_after_three() -> bool:
        calls.append(1)
        return len(calls) > 3

    assert search.choose(state, simulations=100, stop=stop_after_three).simulations == 3
    timed = search.choose(state, seconds=0.2)
    assert timed.simulations > 0 and 0.2 <= timed.elapsed < 1.0
    with pytest.raises(ValueError):
        search.choose(state)


def test_no_pass_while_a_move_is_playable_and_the_game_goes_on():
    # At the empty board V(s) is exactly 1/2 (no stone, no feature) whatever was learnt,
    # while komi pulls Black's learnt afterstate values below it: a pass valued V(s) would
    # often win, so it does not compete.  With weights that say every stone loses:
    game = GoGame(9)
    search = TdSearch(game, TdConfig(seed=0))
    state = game.initial_state()
    search.choose(state, simulations=0)
    search.features.theta[:] = -1.0
    result = search.choose(state, simulations=0)
    assert result.action != game.pass_action and result.q[game.pass_action] == 0.0 > result.value


def test_pass_after_a_pass_is_valued_by_the_result():
    # Black owns the whole board: after White's pass, Black's pass ends the game won (its
    # value is the final result, 1), better than any estimated afterstate value below 1.
    game = GoGame(5, komi=0.5)
    rows = ["XXXXX", "X.X.X", "XXXXX", ".....", "....."]
    state = setup(game, rows, to_play=1).play(game.pass_action)
    result = TdSearch(game, TdConfig(seed=0)).choose(state, simulations=20)
    assert result.action == game.pass_action and result.value == 1.0


def _random_moves(state, seen: list[int], draws: int) -> tuple[list[int], list[tuple[np.ndarray, int]]]:
    """``draws`` default-policy moves of ``state``'s mover (`tk.random_move`), each from the
    same position, with the board and hash each left behind."""
    game = state.game
    n = game.size**2
    hist = state.board().ravel().astype(np.int8)[None, :].copy()
    h = gk.board_hash(hist[0], game._zob)
    keys = np.array(sorted({h, *seen}), dtype=np.int64)
    diag = gk.diagonal_table(game.size)
    rng = tk.seed_state(7)
    points, after = [], []
    for _ in range(draws):
        new_hist = np.empty_like(hist)
        new_seen = np.empty(keys.shape[0] + 1, np.int64)
        color = 1 if state.to_play == 0 else -1
        p, h2 = tk.random_move(hist, keys, h, color, game._nbr, game._zob, diag, new_hist, new_seen,
                               np.empty(n, np.int32), rng)
        points.append(int(p))
        after.append((new_hist[0].copy(), int(h2)))
    return points, after


def test_default_policy_draws_uniformly_among_legal_moves_that_fill_no_own_eye():
    # Black to move: (1, 1) is Black's own eye, (4, 4) is suicide inside White's corner, and
    # (0, 4) is forbidden by superko (the position after it is marked as seen).  The draw must
    # never give those, give every other empty point, and each about equally often.
    game = GoGame(5)
    rows = ["XXX..", "X.X.O", "XXX..", "...OO", "...O."]
    state = setup(game, rows)
    n = game.size**2
    forbidden = state.play(4)  # Black at (0, 4), the position whose hash counts as seen
    seen = [gk.board_hash(forbidden.board().ravel().astype(np.int8), game._zob)]
    expected = sorted(int(p) for p in np.flatnonzero(state.board().ravel() == 0) if p not in (6, 24, 4))
    draws = 4000
    points, after = _random_moves(state, seen, draws)
    assert sorted(set(points)) == expected
    counts = np.bincount(points, minlength=n)[expected]
    mean = draws / len(expected)
    assert np.all(np.abs(counts - mean) < 5 * np.sqrt(mean)), counts
    # what is left behind is the position after the drawn move, with its hash
    for p, (board, h) in zip(points[:20], after[:20]):
        played = state.play(p)
        assert np.array_equal(board, played.board().ravel()) and h == gk.board_hash(board, game._zob)


def test_default_policy_passes_when_only_own_eyes_are_left():
    game = GoGame(5)
    rows = ["X.XXX", "XXXXX", "XX.XX", "XXXXX", "XXXX."]
    state = setup(game, rows)
    points, after = _random_moves(state, [], 50)
    assert set(points) == {game.size**2}


# --- Dyna-2 and the permanent weights ----------------------------------------------------


def test_dyna2_value_is_the_sum_of_both_memories_and_learns_only_the_transient():
    rng = np.random.default_rng(0)
    count = ShapeWeights.weight_count(9, (1, 2), ("LI", "LD"))
    permanent = ShapeWeights(9, (1, 2), ("LI", "LD"), rng.normal(0, 0.1, count))
    search = TdSearch(GoGame(9), TdConfig(shapes=(1, 2, 3), seed=0), permanent)
    state = GoGame(9).initial_state().play(40).play(41).play(31)
    fixed = search.features.fixed.copy()
    search.choose(state, simulations=30)
    assert np.array_equal(search.features.fixed, fixed)
    transient_only = Features(9, ((1, 2, 3), ("none",)), None)
    transient_only.theta[:] = search.transient
    permanent_only = Features(9, None, permanent)
    flat = np.asarray(state.board()).ravel()
    assert search.features.logit(flat) == pytest.approx(transient_only.logit(flat) + permanent_only.logit(flat))
    assert permanent_only.logit(flat) != 0.0 and transient_only.logit(flat) != 0.0


def test_permanent_weights_file_round_trip(tmp_path):
    weights = ShapeWeights(9, (1, 2), ("LI",), np.arange(9.0), {"games": 12})
    path = tmp_path / "go9-td.npz"
    weights.save(path)
    loaded = ShapeWeights.load(path)
    assert (loaded.size, loaded.shapes, loaded.sharing, loaded.info) == (9, (1, 2), ("LI",), {"games": 12})
    assert np.array_equal(loaded.theta, weights.theta)
    assert [p.name for p in tmp_path.iterdir()] == ["go9-td.npz"]  # no temporary file left
    assert loaded.header()["weights"] == 9
    with np.load(path) as data:
        header = json.loads(str(data["header"]))
    assert header["game"] == "go9" and header["format"] == "klent-td-weights"
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a TD weights file"):
        ShapeWeights.load(tmp_path / "bad.npz")
    np.savez(tmp_path / "other.npz", header=np.array(json.dumps({"format": "other"})), theta=np.zeros(9))
    with pytest.raises(ValueError, match="format"):
        ShapeWeights.load(tmp_path / "other.npz")
    header = {**weights.header(), "shapes": [4]}
    np.savez(tmp_path / "odd.npz", header=np.array(json.dumps(header)), theta=np.zeros(9))
    with pytest.raises(ValueError, match="bad TD weights header"):
        ShapeWeights.load(tmp_path / "odd.npz")
    with pytest.raises(ValueError, match="need 9 values"):
        ShapeWeights(9, (1, 2), ("LI",), np.zeros(8))
    with pytest.raises(ValueError, match="for 9x9"):
        TdSearch(GoGame(7), permanent=weights)


def npy_bytes(array: np.ndarray, header: dict | None = None) -> bytes:
    """``array`` as an .npy file; ``header`` replaces the header it declares (shape, dtype)."""
    buffer = io.BytesIO()
    np.save(buffer, array)
    if header is None:
        return buffer.getvalue()
    body = buffer.getvalue()[len(npy_header(array)):]
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, header)
    return out.getvalue() + body


def npy_header(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, np.lib.format.header_data_from_array_1_0(array))
    return out.getvalue()


def weights_file(path, header: str, theta: bytes, compression: int = zipfile.ZIP_STORED) -> None:
    with zipfile.ZipFile(path, "w", compression) as archive:
        archive.writestr("header.npy", npy_bytes(np.array(header)))
        archive.writestr("theta.npy", theta)


def test_a_hostile_weights_file_is_refused_in_bounded_time_and_memory(tmp_path):
    """A header nested 60,000 deep was a RecursionError; a theta declared as 8 TiB a
    MemoryError; a 2 MB zip inflating to gigabytes of zeros was read whole (4.2 GB) before its
    size was checked.  Each is now a ValueError, the last without inflating it (here 1 GiB)."""
    import resource

    good = ShapeWeights(9, (1, 2), ("LI",), np.arange(9.0))
    header = json.dumps(good.header())
    weights_file(tmp_path / "nested.npz", "[" * 60_000, npy_bytes(np.zeros(9)))
    with pytest.raises(ValueError, match="nested too deeply"):
        ShapeWeights.load(tmp_path / "nested.npz")
    weights_file(tmp_path / "long.npz", "[" * 100_000, npy_bytes(np.zeros(9)))
    with pytest.raises(ValueError, match=r"header: a <U100000 array of shape \(\) is not what"):
        ShapeWeights.load(tmp_path / "long.npz")
    huge = {"descr": "<f8", "fortran_order": False, "shape": (2**40,)}
    weights_file(tmp_path / "huge.npz", header, npy_bytes(np.zeros(9), huge))
    with pytest.raises(ValueError, match=r"shape \(1099511627776,\) is not what a TD weights file holds"):
        ShapeWeights.load(tmp_path / "huge.npz")
    weights_file(tmp_path / "short.npz", header, npy_bytes(np.zeros(9))[:-8])
    with pytest.raises(ValueError, match="64 bytes of data where its header declares 72"):
        ShapeWeights.load(tmp_path / "short.npz")
    # 1 GiB of zeros, deflated to about a MB, declared as what it is.
    bomb = {"descr": "<f8", "fortran_order": False, "shape": (2**27,)}
    with zipfile.ZipFile(tmp_path / "bomb.npz", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.npy", npy_bytes(np.array(header)))
        with archive.open("theta.npy", "w", force_zip64=True) as member:
            member.write(npy_bytes(np.zeros(0), bomb))
            chunk = bytes(1 << 24)
            for _ in range(2**30 // len(chunk)):
                member.write(chunk)
    assert (tmp_path / "bomb.npz").stat().st_size < 2 << 20
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ValueError, match=r"shape \(134217728,\) is not what"):
        ShapeWeights.load(tmp_path / "bomb.npz")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before < 200_000  # KB: far below 1 GiB
    for text in ('{"format": "klent-td-weights", "version": 1, "size": 10000000, "shapes": [1], "sharing": ["none"]}',
                 header.replace('"info": {}', '"info": [1, 2]')):
        weights_file(tmp_path / "odd.npz", text, npy_bytes(np.zeros(9)))
        with pytest.raises(ValueError, match="not a TD weights file|bad TD weights header"):
            ShapeWeights.load(tmp_path / "odd.npz")
    weights_file(tmp_path / "fine.npz", header, npy_bytes(np.arange(9.0)))
    assert np.array_equal(ShapeWeights.load(tmp_path / "fine.npz").theta, np.arange(9.0))


def test_td_learning_saves_weights_that_dyna2_loads(tmp_path):
    out, log = tmp_path / "go5-td.npz", tmp_path / "metrics.jsonl"
    weights = train("go5", games=40, out_path=out, save_every=20, metrics_path=log, progress=False, seed=1)
    assert weights.theta.any() and weights.info["games"] == 40
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["games"] for line in lines] == [20, 40]
    loaded = ShapeWeights.load(out)
    assert np.array_equal(loaded.theta, weights.theta) and loaded.sharing == ("LI", "LD")
    more = train("go5", games=20, out_path=out, init=out, progress=False)
    assert more.info["games"] == 60
    game = GoGame(5)
    result = TdSearch(game, TdConfig(seed=0), loaded).choose(game.initial_state(), simulations=10)
    assert result.legal[result.action]
