"""klent/engine/tablebase.py: the Syzygy tables python-chess ships (3 and 4 pieces, unpacked by
`make setup`) in the player's search and at its root, on real endings, with the small untrained
network of the `untrained_model` fixture, so that whatever is right comes from the tables: a
drawn KRvKR keeps its rook, and KQvK, KRvK and KPvK wins are converted to mate against
Stockfish."""

from __future__ import annotations

import chess
import chess.engine
import chess.syzygy
import pytest

from klent.engine.games.chess import ChessGame
from klent.engine.network import state_values
from klent.engine.player import Player, PlayOptions
from klent.engine.tablebase import TABLEBASE_WIN, Tablebase, TablebaseEvaluator, probe_root

GAME = ChessGame(max_moves=None, claim_draws=False)  # as UCI plays: the arbiter ends games
OPTIONS = PlayOptions(simulations=16)


@pytest.fixture(scope="module")
def tables(syzygy_dir: str) -> Tablebase:
    return Tablebase([syzygy_dir])


@pytest.fixture(scope="module")
def player(untrained_model, tables: Tablebase) -> Player:
    player = Player.load(GAME, model=untrained_model("chess"), options=OPTIONS, seed=0)
    player.tablebase = tables
    return player


def test_the_bundled_tables_answer_wdl_and_dtz(tables: Tablebase, syzygy_dir: str) -> None:
    assert tables.tables >= 35 and tables.pieces == 4
    win = GAME.from_fen("8/8/8/3k4/8/8/8/K5Q1 w - - 0 1")
    assert (tables.wdl(win), tables.value(win)) == (2, TABLEBASE_WIN)
    with chess.syzygy.open_tablebase(syzygy_dir) as reference:
        assert tables.dtz(win) == reference.probe_dtz(chess.Board(win.fen()))
    assert tables.value(GAME.from_fen("8/8/8/8/3k4/8/r7/4K2R w - - 0 1")) == 0.0
    assert tables.value(GAME.initial_state()) is None  # 32 pieces
    assert tables.value(GAME.from_fen("4k3/8/8/8/8/8/8/R3K3 w Q - 0 1")) is None  # castling rights
    assert Tablebase([syzygy_dir], probe_limit=3).value(GAME.from_fen("8/8/8/8/3k4/8/r7/4K2R w - - 0 1")) is None


def test_leaves_take_the_tables_values_over_the_network(untrained_model, tables: Tablebase) -> None:
    network = Player.load(GAME, model=untrained_model("chess")).evaluator
    assert network is not None
    states = [GAME.from_fen(fen) for fen in ("8/8/8/3k4/8/8/8/K5Q1 b - - 0 1", "8/8/8/8/3k4/8/r7/4K2R w - - 0 1")]
    states.append(GAME.initial_state())
    values = state_values(TablebaseEvaluator(network, tables).evaluate(states))
    assert list(values[:2]) == pytest.approx([-TABLEBASE_WIN, 0.0])
    assert values[2] == pytest.approx(state_values(network.evaluate(states[2:]))[0], abs=1e-6)


def test_a_drawn_krkr_keeps_its_rook_and_reads_as_a_draw(player: Player, tables: Tablebase) -> None:
    """#51: in a dead-level KRvKR klent played Rh2, losing the rook at once.  Every move the
    player chooses keeps the draw, and its value and every listed move's are the tables'."""
    for fen in ("4k3/8/8/8/8/8/r7/4K2R w - - 0 1", "8/8/8/8/3k4/8/r7/4K2R w - - 0 1",
                "8/8/4k3/8/8/8/1r6/R3K3 b - - 0 1"):
        assert tables.wdl(GAME.from_fen(fen)) == 0
        state = GAME.from_fen(fen)
        player.set_position(state)
        decision = player.decide()
        assert tables.wdl(state.play(decision.action)) == 0, (fen, decision.move)
        assert decision.value == 0.0 and decision.top_moves[0].q == 0.0
        table = probe_root(tables, state)
        assert table is not None and all(table.values[stat.action] == stat.q for stat in decision.top_moves)


def test_a_lost_ending_takes_a_draw_it_may_claim(player: Player, tables: Tablebase) -> None:
    """The tables rank a move that repeats the position for the third time (a draw the player
    may claim, which the game leaves to the arbiter) as the draw it is: in a lost KQvK it is the
    one move that saves the game."""
    state = GAME.from_fen("7k/8/8/8/8/Q7/8/6K1 w - - 0 1", ["g1h1", "h8g8", "h1g1", "g8h8", "g1h1", "h8g8", "h1g1"])
    assert tables.wdl(state) == -2 and not state.is_claimable_draw
    repeat = GAME.text_to_action(state, "g8h8")
    table = probe_root(tables, state)
    assert table is not None and table.best == (repeat,) and table.value == 0.0
    assert all(value == -TABLEBASE_WIN for action, value in table.values.items() if action != repeat)
    player.set_position(state)
    assert player.decide().move == "g8h8"


@pytest.mark.parametrize("fen", [
    "8/8/8/3k4/8/8/8/K5Q1 w - - 0 1",  # KQvK
    "8/8/8/3k4/8/8/8/K6R w - - 0 1",  # KRvK
    "8/8/8/8/8/2k5/4P3/4K3 w - - 0 1",  # KPvK, a win
])
def test_won_endings_are_converted_to_mate_against_stockfish(player: Player, tables: Tablebase,
                                                             stockfish_path: str, fen: str) -> None:
    state = GAME.from_fen(fen)
    assert tables.wdl(state) == 2
    with chess.engine.SimpleEngine.popen_uci(stockfish_path) as stockfish:
        while not state.is_terminal and state.move_number < 200:
            if state.to_play == 0:
                player.set_position(state)
                action = player.decide().action
            else:
                reply = stockfish.play(chess.Board(state.fen()), chess.engine.Limit(depth=10)).move
                assert reply is not None
                action = GAME.move_to_action(state, reply)
            state = state.play(action)
    assert state.termination == "checkmate" and state.outcome() == 1.0, (fen, state.fen(), state.move_number)
