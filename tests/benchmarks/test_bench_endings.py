"""`klent bench endings` (klent/bench/endings.py): tablebase endings that klent, through `klent uci`
with the Syzygy tables, must hold against Stockfish."""

from __future__ import annotations

import chess
import chess.syzygy
import pytest

from klent.bench import endings
from klent.bench.endings import ENDINGS, Played, Start, reached, start_positions, summary_row


def test_start_positions_are_seeded_legal_and_hold_the_endings_result(syzygy_dir: str) -> None:
    with chess.syzygy.open_tablebase(syzygy_dir) as tables:
        for ending, (ours, theirs, goal) in ENDINGS.items():
            starts = start_positions(ending, 8, tables, seed=3)
            assert starts == start_positions(ending, 8, tables, seed=3) != start_positions(ending, 8, tables, seed=4)
            assert len(set(starts)) == 8
            for start in starts:
                board = chess.Board(start.fen)
                assert board.is_valid() and not any(map(board.is_capture, board.legal_moves))
                klent_colour = start.klent == 0
                sides = {colour: sorted(piece.symbol().upper() for piece in board.piece_map().values()
                                        if piece.color == colour) for colour in chess.COLORS}
                assert (sides[klent_colour], sides[not klent_colour]) == (sorted(ours), sorted(theirs.upper()))
                wdl = tables.probe_wdl(board) * (1 if board.turn == klent_colour else -1)
                assert wdl == (0 if goal == "draw" else 2), (ending, start)
            assert {start.klent for start in starts} == {0, 1}  # klent plays either colour


def test_a_game_reaches_the_goal_only_with_a_kept_draw_or_a_mate() -> None:
    start = Start("8/8/8/3k4/8/8/8/K5Q1 w - - 0 1", klent=0)
    mates = [Played(start, 1.0, 17, "checkmate"), Played(start, 1.0, 21, "checkmate")]
    missed = Played(start, 0.0, 100, "fifty_moves")
    assert all(reached("KQvK", game) for game in mates) and not reached("KQvK", missed)
    assert reached("KRvKR", missed) and not reached("KRvKR", Played(start, -1.0, 30, "checkmate"))
    assert summary_row("KQvK", [*mates, missed]).split() == ["KQvK", "mate", "3", "2", "1", "19.0", "21",
                                                             "checkmate", "2,", "fifty_moves", "1"]
    assert summary_row("KRvKR", [missed]).split() == ["KRvKR", "draw", "1", "1", "0", "-", "-", "fifty_moves", "1"]


def test_two_games_against_stockfish(stockfish_path: str, syzygy_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Two KQvK games through `klent uci` at short times: both are mated."""
    code = endings.main(["--games", "2", "--endings", "KQvK", "--movetime", "50", "--stockfish-movetime", "20",
                         "--stockfish", stockfish_path, "--syzygy", syzygy_dir])
    out = capsys.readouterr().out
    assert code == 0, out
    row = next(line for line in out.splitlines() if line.startswith("KQvK"))
    assert row.split()[:5] == ["KQvK", "mate", "2", "2", "0"]
