"""`klent uci` playing Gardner chess and Animal Shogi through ``UCI_Variant``, checked against
the real Fairy-Stockfish (the Debian package, which `make test` installs): every move klent
answers must be one Fairy-Stockfish plays in the same position, drops included, and
`klent match` must finish games of both variants against it.

The models are the small untrained networks of the `untrained_model` fixture: these tests
check the protocol, not the engine's strength.
"""

from __future__ import annotations

import io
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fairy_stockfish import FairyStockfish

from klent.engine import games
from klent.matchplay.engine_process import UciProcess
from klent.protocols.uci import UciEngine

KLENT_UCI = [sys.executable, "-m", "klent", "uci"]
GAMES = {"gardner": "gardner", "dobutsu": "animal_shogi"}  # UCI_Variant -> klent's game


@pytest.fixture(scope="module")
def klent() -> Iterator[UciProcess]:
    """One `klent uci` for the protocol tests; each test sets the variant and model it needs."""
    process = UciProcess(KLENT_UCI)
    try:
        yield process
    finally:
        process.close()


@pytest.fixture(scope="module", params=sorted(GAMES))
def variant(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def fairy(fairy_path: str, variant: str) -> Iterator[FairyStockfish]:
    referee = FairyStockfish(fairy_path, variant)
    try:
        yield referee
    finally:
        referee.close()


def switch(klent: UciProcess, variant: str, model: str) -> list[str]:
    """Set ``variant`` and ``model``; the lines up to ``readyok`` (info strings included)."""
    klent.tell(f"setoption name ModelFile value {model}")  # first: no shipped model is looked for
    klent.tell(f"setoption name UCI_Variant value {variant}")
    klent.tell("ucinewgame")
    return klent.ask("isready", "readyok", 60.0)


def test_uci_variant_is_declared_with_fairy_stockfish_names_and_bad_names_are_reported(
    klent: UciProcess, fairy_path: str
) -> None:
    ours = next(line for line in klent.ask("uci", "uciok", 60.0) if line.startswith("option name UCI_Variant "))
    assert ours == "option name UCI_Variant type combo default chess var chess var gardner var dobutsu"
    with UciProcess([fairy_path]) as fairy:
        theirs = next(line for line in fairy.ask("uci", "uciok", 30.0) if "UCI_Variant" in line).split(" var ")
    assert {"chess", "gardner", "dobutsu"} <= set(theirs[1:])
    for bad in ("xiangqi", "", "animal_shogi"):
        klent.tell(f"setoption name UCI_Variant value {bad}".rstrip())
        said = klent.ask("isready", "readyok", 30.0)
        assert any(line.startswith("info string setoption: UCI_Variant") for line in said), said
    klent.tell("position startpos moves e2e4 e7e5")  # still chess: the engine kept its variant
    assert klent.ask("isready", "readyok", 30.0) == ["readyok"]


def test_bestmoves_and_pvs_are_moves_fairy_stockfish_plays(
    klent: UciProcess, fairy: FairyStockfish, variant: str, untrained_model
) -> None:
    said = switch(klent, variant, untrained_model(GAMES[variant]))
    assert not any(line.startswith("info string") for line in said), said
    moves: list[str] = []
    for ply in range(6):
        klent.tell("position startpos" + (" moves " + " ".join(moves) if moves else ""))
        lines = klent.ask("go nodes 24" if ply % 2 else "go movetime 200", "bestmove", 60.0)
        best = lines[-1].split()[1]
        assert best in fairy.perft(1, moves), (moves, lines)
        pv = next(line for line in reversed(lines) if " pv " in line).split(" pv ")[1].split()
        assert fairy.fen(moves + pv) != fairy.fen(moves + pv[:-1])  # the PV's last move was played too
        moves.append(best)
    rules = games.get(GAMES[variant], max_moves=None)
    assert rules.fen(rules.initial_state().after(moves)) == fairy.fen(moves)
    klent.tell(f"position startpos moves {' '.join(moves)}")
    klent.tell("go infinite")  # an analysis, as in chess: info lines until stop
    time.sleep(1.5)
    lines = klent.ask("stop", "bestmove", 30.0)
    assert any(line.startswith("info depth") for line in lines), lines
    assert lines[-1].split()[1] in fairy.perft(1, moves), lines


def test_animal_shogi_drops_and_promotions_round_trip(klent: UciProcess, fairy_path: str, untrained_model) -> None:
    switch(klent, "dobutsu", untrained_model("animal_shogi"))
    with_chicks = ["b2b3", "b4b3"]  # the chicks are taken, one into each hand
    fairy = FairyStockfish(fairy_path, "dobutsu")
    try:
        drops = sorted(move for move in fairy.perft(1, with_chicks) if "@" in move)
        klent.tell(f"position startpos moves {' '.join(with_chicks)}")
        best = klent.ask(f"go nodes 16 searchmoves {' '.join(drops)}", "bestmove", 60.0)[-1].split()[1]
        assert best in drops
        klent.tell(f"position startpos moves {' '.join(with_chicks)} {best}")
        reply = klent.ask("go nodes 16", "bestmove", 60.0)[-1].split()[1]  # gote may drop its chick too
        assert reply in fairy.perft(1, [*with_chicks, best])
        fen = fairy.fen([*with_chicks, best])
        klent.tell(f"position fen {fen}")  # Fairy-Stockfish's FEN, hands and all
        assert klent.ask("go nodes 16", "bestmove", 60.0)[-1].split()[1] in fairy.perft(1, fen=fen)
        promoting = "gl1/2C/3/ELG[Ce] w - - 0 1"  # the chick on c3 may step to c4 as a hen or stay a chick
        for step in ("c3c4+", "c3c4"):
            assert step in fairy.perft(1, fen=promoting)
            klent.tell(f"position fen {promoting}")
            assert klent.ask(f"go nodes 8 searchmoves {step}", "bestmove", 60.0)[-1].split()[1] == step
            klent.tell(f"position fen {promoting} moves {step}")
            reply = klent.ask("go nodes 8", "bestmove", 60.0)[-1].split()[1]
            assert reply in fairy.perft(1, [step], fen=promoting)
    finally:
        fairy.close()


def test_a_variant_without_a_model_is_played_by_the_rules_alone(tmp_path: Path) -> None:
    output = io.StringIO()
    uci = UciEngine(output, weights_dir=tmp_path)  # no model for any game here
    for line in ("setoption name UCI_Variant value gardner", "position startpos moves b2b3", "go nodes 16"):
        assert uci.handle(line)
    deadline = time.monotonic() + 60.0
    while "bestmove" not in output.getvalue() and time.monotonic() < deadline:
        time.sleep(0.05)
    uci.shutdown()
    lines = output.getvalue().splitlines()
    assert any("no model for gardner" in line and "rules alone" in line for line in lines), lines
    state = games.get("gardner").initial_state().after(["b2b3"])
    state.game.text_to_action(state, lines[-1].split()[1])  # legal, or it raises


@pytest.mark.parametrize("game", ["gardner", "animal_shogi"])
def test_match_against_fairy_stockfish_finishes_with_results(
    game: str, tmp_path: Path, fairy_path: str, untrained_model
) -> None:
    import subprocess

    out = tmp_path / game
    command = [
        sys.executable, "-m", "klent", "match", "--engine1", " ".join(KLENT_UCI), "--engine2", fairy_path,
        "--game", game, "--games", "2", "--time-per-move", "0.1", "--grace", "5", "--max-moves", "24",
        "--option1", f"ModelFile={untrained_model(game)}", "--option2", "Skill Level=-20", "--go2", "depth 1",
        "--out", str(out),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads((out / "summary.json").read_text())["config"]["uci_go"] == ["", "depth 1"]
    results = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert [r["game"] for r in results] == [1, 2]
    variant = next(v for v, g in GAMES.items() if g == game)
    fairy = FairyStockfish(fairy_path, variant)
    rules = games.get(game)
    try:
        for r in results:
            assert r["result"] in ("1-0", "0-1", "1/2-1/2")
            assert not r["reason"].startswith(("illegal", "crash", "timeout", "setup")), r
            record = (out / r["record"]).read_text()
            assert f'[Variant "{variant}"]' in record
            moves = [word for word in record.split("\n\n")[1].split() if not word.endswith(".")][:-1]  # no result
            assert len(moves) == r["moves"]
            assert rules.fen(rules.initial_state().after(moves)) == fairy.fen(moves)
    finally:
        fairy.close()


@pytest.mark.parametrize(("flags", "message"), [
    (["--go2", "depht 1"], "--go2: UCI search limit 'depht 1'"),
    (["--go1", "depth 0"], "--go1: UCI search limit 'depth 0'"),
])
def test_match_refuses_a_misspelt_search_limit(flags: list[str], message: str, tmp_path: Path) -> None:
    import subprocess

    command = [sys.executable, "-m", "klent", "match", "--engine1", "e1", "--engine2", "e2", "--game", "gardner",
               "--out", str(tmp_path / "m"), *flags]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and message in result.stderr, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and not (tmp_path / "m").exists()


def test_match_refuses_an_engine_without_the_variant(tmp_path: Path, stockfish_path: str, fairy_path: str) -> None:
    import subprocess

    command = [sys.executable, "-m", "klent", "match", "--engine1", fairy_path, "--engine2", stockfish_path,
               "--game", "gardner", "--out", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "UCI_Variant" in result.stderr, result.stderr[-2000:]
