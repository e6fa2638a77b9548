"""Positions over HTTP: every game set up and described through the `Game` contract alone.

`klent.server.positions` has no per-game code, so these tests run the same checks over every game
of the registry, then the notations each game reads (Go: SGF and komi; the FEN games: FEN).
"""

from __future__ import annotations

import shutil
import warnings

import pytest

import klent.engine.games as games
from klent.engine.games.base import FenGame
from klent.server.positions import PositionError, describe, parse_position
from klent.server.schemas import PositionRequest

with warnings.catch_warnings():  # starlette's note about httpx2 is not ours to act on
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


@pytest.mark.parametrize("name", games.GAME_IDS)
def test_every_game_is_set_up_and_described_by_the_contract(name: str) -> None:
    game = games.get(name)
    first_move = game.action_to_text(game.initial_state(), int(game.initial_state().legal_actions()[0]))
    position = parse_position(game, PositionRequest(moves=[first_move]))
    out = describe(position.state, last_move=position.last_move)
    assert out.game == name and out.move_number == 1 and out.last_move == first_move
    assert out.to_play == game.player_names[1] and not out.terminal and out.result is None
    assert out.legal_moves == [game.action_to_text(position.state, int(a)) for a in position.state.legal_actions()]
    assert (out.fen is not None) == isinstance(game, FenGame)


@pytest.mark.parametrize(
    ("name", "fields", "field"),
    [
        ("go9", {"fen": "8/8/8/8/8/8/8/8 w - - 0 1"}, "fen"),
        ("chess", {"komi": 7.5}, "komi"),
        ("chess", {"sgf": "(;SZ[9])"}, "sgf"),
        ("gardner", {"komi": 0.5}, "komi"),
        ("countup", {"fen": "x"}, "fen"),
        ("othello", {"sgf": "(;SZ[8])"}, "sgf"),
        ("hex11", {"komi": 0.5}, "komi"),
    ],
)
def test_a_notation_the_game_does_not_read_is_refused_by_name(name: str, fields: dict, field: str) -> None:
    with pytest.raises(PositionError, match=rf"^{field}: {name} positions take .* only, not {field}$"):
        parse_position(games.get(name), PositionRequest(**fields))


def test_go_from_an_sgf_record_with_its_komi_or_the_requests() -> None:
    game = games.get("go9")
    sgf = "(;GM[1]FF[4]SZ[9]KM[6.5];B[ee];W[cc])"
    from_sgf = parse_position(game, PositionRequest(sgf=sgf, moves=["D4"])).state
    from_moves = parse_position(game, PositionRequest(komi=6.5, moves=["E5", "C7", "D4"])).state
    assert (from_sgf.board() == from_moves.board()).all() and from_sgf.game.komi == from_moves.game.komi == 6.5
    overridden = parse_position(game, PositionRequest(sgf=sgf, komi=0.5)).state
    assert overridden.game.komi == 0.5 and overridden.move_number == 2
    assert parse_position(game, PositionRequest()).state.game.komi == game.komi


@pytest.mark.parametrize(
    ("sgf", "reason"),
    [
        ("(;GM[1]SZ[19];B[pd])", "the record is for 19x19, not 9x9"),
        ("(;GM[1]SZ[9]KM[1e308];B[ee])", "KM[1e+308] is outside klent's +-150"),  # #24: JSON komi is within +-150
        ("(;GM[1]SZ[9]KM[-150.5])", "outside klent's +-150"),
        ("(;GM[1]SZ[9];B[ee];W[ee])", "occupied"),
    ],
)
def test_bad_sgf_records_are_refused(sgf: str, reason: str) -> None:
    with pytest.raises(PositionError, match=r"^sgf: .*" + reason.replace("[", r"\[").replace("+", r"\+")):
        parse_position(games.get("go9"), PositionRequest(sgf=sgf))


@pytest.mark.parametrize(
    ("name", "fen", "move"),
    [
        ("chess", "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3", "f1c4"),
        ("gardner", "rnbqk/ppppp/5/PPPPP/RNBQK b - - 0 1", "b5c3"),
        ("animal_shogi", "gle/1c1/1C1/ELG[] w - - 0 1", "b2b3"),
    ],
)
def test_fen_games_start_from_a_fen(name: str, fen: str, move: str) -> None:
    game = games.get(name)
    start = parse_position(game, PositionRequest(fen=fen)).state
    assert describe(start).fen == fen
    after = describe(parse_position(game, PositionRequest(fen=fen, moves=[move])).state)
    assert after.fen != fen and after.to_play != describe(start).to_play
    with pytest.raises(PositionError, match="^fen: "):
        parse_position(game, PositionRequest(fen="not a fen"))


def test_results_and_boards_in_each_games_notation() -> None:
    mate = describe(parse_position(games.get("chess"), PositionRequest(moves=["f2f3", "e7e5", "g2g4", "d8h4"])).state)
    assert mate.terminal and mate.result == "0-1" and mate.board[4] == "......Pq" and mate.legal_moves == []
    passes = describe(parse_position(games.get("go9"), PositionRequest(moves=["E5", "pass", "pass"])).state)
    assert passes.result == "B+73.5" and passes.board[4] == "....X...."
    counted = describe(parse_position(games.get("countup"), PositionRequest(moves=["+2", "+2", "+2", "+1"])).state)
    assert counted.result == "second player wins" and counted.board == []


def test_http_refuses_an_sgf_komi_beyond_the_json_limit(untrained_model, tmp_path) -> None:
    """#24: KM[1e308] was accepted over HTTP although a JSON komi is limited to +-150."""
    from klent.server.app import ServerConfig, create_app

    shutil.copy(untrained_model("go9"), tmp_path / "go9.onnx")
    with TestClient(create_app(ServerConfig(models_dir=tmp_path))) as client:
        for path, extra in (("/v1/go9/position", {}), ("/v1/go9/move", {"mode": "reactive"})):
            response = client.post(path, json={"sgf": "(;GM[1]SZ[9]KM[1e308];B[ee])", **extra})
            assert response.status_code == 422 and response.json()["detail"].startswith("sgf: SGF komi KM[1e+308]")
        assert client.post("/v1/go9/position", json={"sgf": "(;GM[1]SZ[9]KM[150];B[ee])"}).status_code == 200
