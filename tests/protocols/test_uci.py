"""`klent uci` driven as GUIs and lichess-bot drive it: python-chess's `chess.engine` client,
raw protocol lines (malformed input, ponderhit, hostile numbers), and full games against
Stockfish; `test_fuzz_uci.py` fuzzes the command grammar.

The model is the small untrained network of the `untrained_model` fixture: these tests check
the protocol and the engine's behaviour, not its strength.
"""

from __future__ import annotations

import json
import logging
import math
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import pytest
from uci_driver import RawEngine

from klent.matchplay.results import game_digest
from klent.protocols.uci_info import centipawns, wdl

START = chess.Board()


@pytest.fixture(scope="module")
def model(untrained_model) -> str:
    return untrained_model("chess")


@pytest.fixture(scope="module")
def command(model: str) -> list[str]:
    return [sys.executable, "-m", "klent", "uci", "--model", model]


@pytest.fixture(scope="module")
def engine(command: list[str]) -> Iterator[chess.engine.SimpleEngine]:
    """One engine for the python-chess tests; each test leaves its options as it found them."""
    uci = chess.engine.SimpleEngine.popen_uci(command, timeout=60)
    try:
        yield uci
    finally:
        uci.quit()


@pytest.fixture
def raw(command: list[str]) -> Iterator[RawEngine]:
    process = RawEngine(command)
    try:
        yield process
    finally:
        process.close()


def is_bestmove(line: str) -> bool:
    return line.startswith("bestmove")


def bestmove(lines: list[str]) -> str:
    return lines[-1].split()[1]


def test_klent_uci_starts_without_torch_or_fastapi(model: str) -> None:
    script = (
        "import sys; from klent.cli import main; main(['uci', '--model', sys.argv[1]]); "
        "print(sorted(m for m in ('torch', 'fastapi', 'training') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", script, model], input="isready\nquit\n",
                            capture_output=True, text=True, timeout=60)
    assert result.stdout.splitlines()[-2:] == ["readyok", "[]"], result.stdout + result.stderr


def test_missing_model_argument_is_one_line_error(tmp_path) -> None:
    result = subprocess.run([sys.executable, "-m", "klent", "uci", "--model", str(tmp_path / "none.onnx")],
                            input="quit\n", capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "none.onnx" in result.stderr


# --- scores -------------------------------------------------------------------------------------


def test_centipawns_is_monotone_odd_and_capped() -> None:
    values = [i / 100 for i in range(-100, 101)]
    cps = [centipawns(v) for v in values]
    assert cps == sorted(cps) and len(set(cps)) > 150
    assert centipawns(0.0) == 0 and centipawns(0.5) == -centipawns(-0.5) > 0
    assert 95 <= centipawns(0.47) <= 105  # a pawn
    assert centipawns(1.0) == centipawns(2.0) == 12_800


def test_a_centipawn_trained_models_values_read_back_as_its_centipawns() -> None:
    for cp in (-900, -35, 0, 120, 500):
        assert centipawns(2 / (1 + math.exp(-0.00368208 * cp)) - 1, "centipawns") == cp
    assert centipawns(1.0, "centipawns") == centipawns(2.0, "centipawns") == 12_800
    assert centipawns(0.18, "centipawns") > 3 * centipawns(0.18)  # Leela's map reads 0.18 as ~34 cp


def test_uci_reports_centipawns_on_the_models_own_scale(tmp_path) -> None:
    """The same network exported twice, once saying it learnt centipawns: the scores of one
    search, read back to values through each model's own map, agree."""
    import torch

    import klent.engine.games
    from klent.training.export import export_onnx
    from klent.training.nets import NetConfig, build_net

    torch.manual_seed(0)
    game = klent.engine.games.get("chess")
    net = build_net(game, NetConfig(blocks=1, channels=8)).eval()
    reads = {}
    for scale in ("outcome", "centipawns"):
        path = tmp_path / f"{scale}.onnx"
        export_onnx(net, game, path, training_info={"algorithm": "untrained", "value_scale": scale})
        uci = chess.engine.SimpleEngine.popen_uci([sys.executable, "-m", "klent", "uci", "--model", str(path)])
        try:
            uci.configure({"SearchMode": "reactive"})
            infos = uci.analyse(START, chess.engine.Limit(nodes=1), multipv=5)
        finally:
            uci.quit()
        reads[scale] = {info["pv"][0]: info["score"].relative.score() for info in infos}
    assert reads["outcome"].keys() == reads["centipawns"].keys() and len(reads["outcome"]) == 5
    assert len(set(reads["centipawns"].values())) > 1
    for move, leela_cp in reads["outcome"].items():
        value = math.atan(leela_cp / 111.714640912) / 1.5620688421
        assert reads["centipawns"][move] == pytest.approx(2 / 0.00368208 * math.atanh(value), abs=3), move


def test_search_tuning_reaches_every_search(model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`klent uci --rescale-floor F --wave-size W` searches with floor F and waves of W; without
    them, with the game's defaults."""
    import io

    from klent.engine.player import Player, PlayOptions
    from klent.protocols.uci import UciEngine

    seen = []
    decide = Player.decide
    monkeypatch.setattr(Player, "decide", lambda self, options=None, stop=None: (
        seen.append(None if options is None else (options.rescale_floor, options.wave_size)),
        decide(self, options, stop))[1])
    for floor, wave in ((None, None), (0.5, 3)):
        out = io.StringIO()
        uci = UciEngine(out, model=model, tuning=PlayOptions(rescale_floor=floor, wave_size=wave))
        try:
            for command in ("position startpos", "go nodes 8"):
                uci.handle(command)
            deadline = time.monotonic() + 30
            while "bestmove" not in out.getvalue() and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            uci.shutdown()
        assert "bestmove" in out.getvalue() and seen and set(seen) == {(floor, wave)}, seen
        seen.clear()


def test_the_device_reaches_the_player(model: str, devices_asked: list[str]) -> None:
    """`klent uci --device cpu` loads its network on the CPU."""
    import io

    from klent.protocols.uci import UciEngine

    player = UciEngine(io.StringIO(), model=model, device="cpu")._load_player()
    assert player is not None and devices_asked == ["cpu"]
    assert player.evaluator.providers == ["CPUExecutionProvider"]


def test_wdl_sums_to_1000_and_follows_the_value() -> None:
    for v in (-1.0, -0.3, 0.0, 0.01, 0.7, 1.0):
        wins, draws, losses = wdl(v)
        assert min(wins, draws, losses) >= 0 and wins + draws + losses == 1000
        assert abs((wins - losses) / 1000 - v) < 0.002
    assert wdl(1.0) == (1000, 0, 0) and wdl(-1.0) == (0, 0, 1000)
    # The endgame tables' values are certain (a tablebase win is 0.99, below a mate's 1).
    assert [wdl(v, proven=True) for v in (0.99, 0.0, -0.99)] == [(1000, 0, 0), (0, 1000, 0), (0, 0, 1000)]


# --- python-chess as the client ------------------------------------------------------------


def test_handshake_declares_every_option(engine: chess.engine.SimpleEngine) -> None:
    assert engine.id["name"].startswith("klent")
    options = engine.options
    expected = {
        "ModelFile": "string", "Threads": "spin", "MultiPV": "spin", "Ponder": "check",
        "UCI_ShowWDL": "check", "Move Overhead": "spin", "SearchMode": "combo", "Simulations": "spin",
        "Hash": "spin",
    }
    for name, kind in expected.items():
        assert options[name].type == kind, name
    assert options["SearchMode"].var == ["gumbel", "reactive"]
    assert options["MultiPV"].min == 1 and options["Move Overhead"].default == 100
    assert options["Simulations"].min == 0 and options["Hash"].min == 1


def test_analysis_multipv_3(engine: chess.engine.SimpleEngine) -> None:
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    infos = engine.analyse(board, chess.engine.Limit(nodes=200), multipv=3)
    assert len(infos) == 3
    assert [info["multipv"] for info in infos] == [1, 2, 3]
    first_moves = [info["pv"][0] for info in infos]
    assert len(set(first_moves)) == 3
    for info in infos:
        check = board.copy()
        for move in info["pv"]:
            assert move in check.legal_moves
            check.push(move)
        assert info["depth"] == len(info["pv"]) and info["seldepth"] >= info["depth"]
        assert info["nodes"] == 200 and "score" in info and info["time"] >= 0


def test_searchmoves_restricts_the_choice(engine: chess.engine.SimpleEngine) -> None:
    allowed = [chess.Move.from_uci("a2a3"), chess.Move.from_uci("h2h4")]
    for _ in range(2):
        result = engine.play(START, chess.engine.Limit(nodes=64), root_moves=allowed)
        assert result.move in allowed


@pytest.mark.parametrize(
    "limit",
    [
        chess.engine.Limit(nodes=48),
        chess.engine.Limit(time=0.4),
        chess.engine.Limit(depth=3),
        chess.engine.Limit(white_clock=3.0, black_clock=3.0, white_inc=0.1, black_inc=0.1),
        chess.engine.Limit(white_clock=2.0, black_clock=5.0, remaining_moves=2),
    ],
    ids=["nodes", "movetime", "depth", "clock-increment", "clock-movestogo"],
)
def test_go_with_each_limit_kind(engine: chess.engine.SimpleEngine, limit: chess.engine.Limit) -> None:
    board = chess.Board("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2")
    began = time.perf_counter()
    result = engine.play(board, limit, info=chess.engine.INFO_ALL)
    took = time.perf_counter() - began
    assert result.move in board.legal_moves
    assert result.ponder is None or result.ponder in _after(board, result.move).legal_moves
    info = result.info
    if limit.nodes is not None:
        assert info["nodes"] == limit.nodes
    if limit.time is not None:
        assert 0.15 <= took <= limit.time + 0.35  # uses the budget (movetime - overhead)
    if limit.depth is not None:
        assert info["depth"] >= limit.depth
    if limit.white_clock is not None:
        # Never more than the clock allows (half of it in sudden death), yet it did search.
        cap = limit.white_clock / 2 if limit.remaining_moves is None else limit.white_clock
        assert took < cap and info["nodes"] > 0


def test_go_infinite_until_stop_and_stop_is_prompt(engine: chess.engine.SimpleEngine) -> None:
    with engine.analysis(START) as analysis:
        deadline = time.monotonic() + 10
        seen = 0
        for info in analysis:  # several reports while it searches
            if "pv" in info:
                seen += 1
            if seen >= 3 or time.monotonic() > deadline:
                break
        assert seen >= 3
        began = time.perf_counter()
        analysis.stop()
        best = analysis.wait()
        stopped_in = time.perf_counter() - began
    assert best.move in START.legal_moves
    assert stopped_in < 0.5, f"bestmove came {stopped_in:.2f} s after stop"


def test_ponder_then_ponderhit(engine: chess.engine.SimpleEngine, caplog: pytest.LogCaptureFixture) -> None:
    # python-chess sends `go ponder` after a move played with ponder=True, and `ponderhit` when
    # the next move is asked for in the position it pondered.
    caplog.set_level(logging.DEBUG, logger="chess.engine")
    game = object()
    board = chess.Board()
    limit = chess.engine.Limit(white_clock=4.0, black_clock=4.0)
    first = engine.play(board, limit, ponder=True, game=game)
    assert first.move in board.legal_moves and first.ponder is not None
    board.push(first.move)
    board.push(first.ponder)
    second = engine.play(board, limit, ponder=True, game=game)
    assert second.move in board.legal_moves
    sent = [record.getMessage() for record in caplog.records]
    assert any("<< go ponder" in text for text in sent)
    assert any(text.endswith("<< ponderhit") for text in sent)
    board.push(second.move)
    board.push(next(iter(board.legal_moves)))  # a different reply: python-chess sends stop
    third = engine.play(board, limit, game=game)
    assert third.move in board.legal_moves


def test_options_set_and_read_back(engine: chess.engine.SimpleEngine, model: str) -> None:
    board = chess.Board()
    try:
        engine.configure({"Hash": 1})  # 1 MB of tree: the simulations stop there
        capped = engine.play(board, chess.engine.Limit(nodes=1000), info=chess.engine.INFO_ALL)
        assert 0 < capped.info["nodes"] < 1000 and capped.move in board.legal_moves
        engine.configure({"Hash": engine.options["Hash"].default, "Simulations": 24})
        # A `go` without limits runs Simulations.
        assert engine.play(board, chess.engine.Limit(), info=chess.engine.INFO_ALL).info["nodes"] == 24
        engine.configure({"UCI_ShowWDL": True})
        info = engine.analyse(board, chess.engine.Limit(nodes=16))
        assert sum(info["wdl"].pov(chess.WHITE)) == 1000
        engine.configure({"SearchMode": "reactive", "Threads": 1, "Move Overhead": 30})
        reactive = engine.play(board, chess.engine.Limit(nodes=500), info=chess.engine.INFO_ALL)
        assert reactive.info["nodes"] == 0 and reactive.move in board.legal_moves
        engine.configure({"ModelFile": model + ".missing"})
        assert engine.play(board, chess.engine.Limit(nodes=8)).move is None  # bestmove (none): no model
        engine.configure({"ModelFile": model})
        assert engine.play(board, chess.engine.Limit(nodes=8)).move in board.legal_moves
    finally:
        engine.configure({"Simulations": 0, "Hash": engine.options["Hash"].default,
                          "UCI_ShowWDL": False, "SearchMode": "gumbel",
                          "Threads": engine.options["Threads"].default, "Move Overhead": 100,
                          "ModelFile": model})


def _after(board: chess.Board, move: chess.Move) -> chess.Board:
    board = board.copy()
    board.push(move)
    return board


# --- raw protocol ------------------------------------------------------------------------------


def test_malformed_input_is_answered_and_survived(raw: RawEngine) -> None:
    raw.send("uci")
    raw.until(lambda line: line == "uciok", 60)
    raw.ready()
    bad = [
        "xyzzy",
        "position",
        "position sideways",
        "position fen not/a/fen w - - 0 1",
        "position fen 8/8/8/8/8/8/8/8 w - - 0 1",  # no kings
        "position startpos garbage",
        "setoption",
        "setoption name NoSuchOption value 3",
        "setoption name MultiPV value many",
        "setoption name MultiPV value 0",
        "setoption name Ponder value maybe",
        "setoption name SearchMode value brute",
        "ponderhit",
    ]
    for line in bad:
        raw.send(line)
        answer = raw.until(lambda text: text.startswith("info string"), 10)
        assert len(answer) == 1, (line, answer)
    raw.send("position startpos moves e2e4")
    raw.send("position startpos moves e2e4 e7e5 e2e4")  # illegal third move
    answer = raw.until(lambda text: text.startswith("info string"), 10)[0]
    assert "move 3" in answer and "unchanged" in answer
    raw.send("go nodes 8 wtime soon")
    lines = raw.until(is_bestmove, 30)
    assert any("wtime" in line for line in lines if line.startswith("info string"))
    black_moves = _after(START, chess.Move.from_uci("e2e4")).legal_moves
    assert chess.Move.from_uci(bestmove(lines)) in black_moves  # the previous position was kept
    raw.send("position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", "go nodes 8")  # stalemate
    lines = raw.until(is_bestmove, 10)
    assert lines[-1] == "bestmove (none)" and "score cp 0" in lines[-2]
    raw.send("position fen 7k/6Q1/6K1/8/8/8/8/8 b - - 0 1", "go")  # checkmated
    assert raw.until(is_bestmove, 10)[-2].endswith("score mate 0")
    raw.send("joho debug on")  # unknown leading tokens are skipped, the command runs
    assert raw.until(lambda text: text.startswith("info string"), 10)[0].endswith("ignored")
    raw.ready()
    assert raw.close() == 0


def test_mate_is_reported_as_mate(raw: RawEngine) -> None:
    # Ra8# among 13 legal moves: the search considers all of them and finds the terminal child.
    raw.send("position fen 2R5/8/k1K5/8/8/8/8/8 w - - 0 1", "go nodes 200")
    lines = raw.until(is_bestmove, 30)
    assert bestmove(lines) == "c8a8"
    assert "score mate 1 " in lines[-2] and lines[-2].endswith("pv c8a8")
    # Black's only move Ka6 runs into Ra8#: mated after one move of its own.
    raw.send("position fen 2R5/k7/2K5/8/8/8/8/8 b - - 0 1", "go nodes 200")
    lines = raw.until(is_bestmove, 30)
    assert lines[-1] == "bestmove a7a6 ponder c8a8"
    assert "score mate -1 " in lines[-2] and lines[-2].endswith("pv a7a6 c8a8")


def test_a_line_into_a_claimable_draw_reads_as_a_draw_and_ends_a_depth_search(raw: RawEngine) -> None:
    """Kh8 repeats the position for the third time: the search counts it a draw (cp 0), and its
    line, being over, ends a `go depth` search that could never make it longer (before, the
    search went on until the tree was full).  The game itself goes on past the claimable draw."""
    start = "position fen 7k/p7/8/8/8/Q7/P7/6K1 w - - 0 1 moves g1h1 h8g8 h1g1 g8h8 g1h1 h8g8 h1g1"
    raw.send(start, "go depth 4 searchmoves g8h8")
    lines = raw.until(is_bestmove, 30)
    assert bestmove(lines) == "g8h8"
    assert " score cp 0 " in lines[-2] and lines[-2].endswith("pv g8h8")
    raw.send(start + " g8h8 g1h1", "go nodes 16")
    lines = raw.until(is_bestmove, 30)
    board = chess.Board("7k/p7/8/8/8/Q7/P7/7K b - - 10 6")
    assert not any(line.startswith("info string") for line in lines)
    assert chess.Move.from_uci(bestmove(lines)) in board.legal_moves


def _last_nodes(lines: list[str]) -> int:
    """The ``nodes`` figure of the last ``info`` line that has one (0 if none does)."""
    counts = [line.split()[line.split().index("nodes") + 1] for line in lines if " nodes " in line]
    return int(counts[-1]) if counts else 0


def test_go_infinite_and_ponder_wait_for_stop_and_ponderhit(raw: RawEngine) -> None:
    raw.ready()
    raw.send("position startpos", "go infinite")
    assert not any(is_bestmove(line) for line in raw.quiet_for(1.0))
    raw.send("isready")  # answered during the search
    raw.until(lambda line: line == "readyok", 1.0)
    raw.send("stop")
    raw.until(is_bestmove, 1.0)

    # On a 60 s clock the move budget is about 1.9 s, counted from `go ponder`.  After 0.5 s of
    # pondering about 1.4 s are left; a time-only search plans its simulations from a measured
    # rate, so on a busy machine it may end well before its deadline, never after it.  That it
    # is the rest of the budget rather than a new one is shown below, where pondering past the
    # budget makes the answer immediate.
    after_e4_e5 = chess.Board("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2")
    raw.send("position startpos moves e2e4 e7e5", "go ponder wtime 60000 btime 60000")
    pondering = raw.quiet_for(0.5)
    assert not any(is_bestmove(line) for line in pondering)
    began = time.perf_counter()
    raw.send("ponderhit")
    lines = raw.until(is_bestmove, 5.0)
    assert time.perf_counter() - began < 2.5
    assert _last_nodes(lines) > _last_nodes(pondering)  # it searched on after the ponderhit
    assert chess.Move.from_uci(bestmove(lines)) in after_e4_e5.legal_moves

    raw.send("go ponder wtime 60000 btime 60000")
    assert not any(is_bestmove(line) for line in raw.quiet_for(2.5))  # pondered past the budget
    began = time.perf_counter()
    raw.send("ponderhit")
    lines = raw.until(is_bestmove, 2.0)
    assert time.perf_counter() - began < 0.5  # answers at once
    assert chess.Move.from_uci(bestmove(lines)) in after_e4_e5.legal_moves


def test_every_go_gets_its_bestmove_even_before_the_previous_one(raw: RawEngine) -> None:
    """A `go` that arrives while a search ends (a GUI's stop / position / go after a ponder
    miss, sent in one write) waits for it, as in Stockfish, instead of being dropped."""
    raw.ready()
    raw.send("\n".join(["go infinite", "stop"] * 50))  # one write: 50 back-to-back pairs
    answered = 0

    def fiftieth(line: str) -> bool:
        nonlocal answered
        answered += is_bestmove(line)
        return answered == 50

    lines = raw.until(fiftieth, 60)
    assert not any("already searching" in line for line in lines)
    assert not any(is_bestmove(line) for line in raw.quiet_for(0.5))

    raw.send("position startpos", "go infinite")
    raw.quiet_for(0.3)
    raw.send("\n".join(["stop", "position startpos moves e2e4", "go nodes 8"]))
    first = raw.until(is_bestmove, 5)
    assert chess.Move.from_uci(bestmove(first)) in START.legal_moves  # the position of its go
    second = raw.until(is_bestmove, 30)
    black_moves = _after(START, chess.Move.from_uci("e2e4")).legal_moves
    assert chess.Move.from_uci(bestmove(second)) in black_moves

    # A GUI that forgets `stop` cannot hang the engine: the open-ended search is ended first.
    raw.send("position startpos", "go infinite")
    raw.quiet_for(0.3)
    raw.send("go nodes 8")
    lines = raw.until(is_bestmove, 5) + raw.until(is_bestmove, 30)
    assert sum(is_bestmove(line) for line in lines) == 2
    assert any(line.startswith("info string go: ") for line in lines)
    raw.ready()


def test_long_timed_search_reports_progress_and_obeys_stop(raw: RawEngine) -> None:
    raw.ready()
    raw.send("position startpos", "go movetime 60000")
    reports = [line for line in raw.quiet_for(2.0) if line.startswith("info depth")]
    assert len(reports) >= 2 and not any(is_bestmove(line) for line in reports)
    nodes = [int(line.split(" nodes ")[1].split()[0]) for line in reports]
    assert nodes == sorted(nodes) and nodes[-1] > nodes[0]
    raw.send("stop")
    raw.until(is_bestmove, 1.0)


def test_quit_mid_search_exits_cleanly(raw: RawEngine) -> None:
    raw.ready()
    raw.send("go infinite")
    raw.quiet_for(0.3)
    began = time.perf_counter()
    assert raw.close() == 0
    # Below the engine's QUIT_JOIN_SECONDS (5 s): the search stopped rather than being abandoned
    # (the process's own exit took up to 3.1 s on a machine with twice as many jobs as cores).
    assert time.perf_counter() - began < 4.5


def test_a_go_queued_behind_a_long_search_leaves_the_reader_listening(raw: RawEngine) -> None:
    """#53: `go depth 1000` then `go nodes 8` made the reader wait for the first search (55 s
    deaf to isready, stop and quit).  The second go is queued; isready is answered at once and
    stop ends the running search and the queued one, each with its own bestmove."""
    raw.ready()
    raw.send("position startpos", "go depth 1000", "go nodes 8")
    raw.quiet_for(0.3)
    began = time.perf_counter()
    raw.ready(timeout=5)
    assert time.perf_counter() - began < 0.5
    raw.send("stop")
    lines = raw.until(is_bestmove, 2) + raw.until(is_bestmove, 5)
    assert sum(is_bestmove(line) for line in lines) == 2
    assert all(chess.Move.from_uci(bestmove([line])) in START.legal_moves for line in lines if is_bestmove(line))
    assert time.perf_counter() - began < 2.0
    assert not any(is_bestmove(line) for line in raw.quiet_for(0.5))

    raw.send("go depth 1000", "go nodes 8")  # and quit ends both
    raw.quiet_for(0.3)
    began = time.perf_counter()
    assert raw.close() == 0
    assert time.perf_counter() - began < 4.5


MATED = "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3"  # fool's mate: White is mated


@pytest.mark.parametrize("release", ["stop", "ponderhit"])
def test_ponder_in_a_finished_game_answers_once_after_stop_or_ponderhit(raw: RawEngine, release: str) -> None:
    """#51: `go ponder` where the game is over answered `bestmove (none)` at once; UCI wants
    exactly one bestmove, only after stop or ponderhit, and at once then."""
    raw.ready()
    raw.send(f"position fen {MATED}", "go ponder wtime 60000 btime 60000")
    assert not any(is_bestmove(line) for line in raw.quiet_for(1.0))
    began = time.perf_counter()
    raw.send(release)
    lines = raw.until(is_bestmove, 2)
    assert time.perf_counter() - began < 0.1
    assert lines[-1] == "bestmove (none)" and "score mate 0" in lines[-2]
    assert not any(is_bestmove(line) for line in raw.quiet_for(0.5))
    raw.send("go infinite")  # the same for an infinite analysis
    assert not any(is_bestmove(line) for line in raw.quiet_for(0.5))
    raw.send("stop")
    assert raw.until(is_bestmove, 2)[-1] == "bestmove (none)"


def test_an_overlong_line_is_dropped_and_reported(raw: RawEngine) -> None:
    """#53: UCI had no line cap (a 20 MB line added 380 MB); a line over MAX_LINE is read
    in pieces, dropped and reported, and the engine goes on."""
    from klent.protocols.uci import MAX_LINE

    raw.ready()
    raw.send("position startpos moves " + "e2e4 e7e5 " * (MAX_LINE // 10 + 1))
    lines = raw.ready()
    assert any(line.startswith("info string command line longer than") for line in lines)
    raw.send("position startpos moves e2e4", "go nodes 8")
    lines = raw.until(is_bestmove, 30)
    assert chess.Move.from_uci(bestmove(lines)) in _after(START, chess.Move.from_uci("e2e4")).legal_moves


def test_go_numbers_past_64_bits_are_refused_in_one_short_line_and_the_go_gets_its_bestmove(raw: RawEngine) -> None:
    """A clock, increment, movetime or movestogo of 401 digits (int() reads it, no float holds
    it) left its `go` without a bestmove ("go failed: OverflowError"), and 4,301 digits (past
    int()'s limit) were quoted whole in the info string.  Every number is a UCI integer, at most
    2^63 - 1: a bigger one is refused in one short line, and the `go` searches with the limits
    it has left."""
    huge, endless = "1" + "0" * 400, "1" * 4301
    for line in [f"go nodes 8 wtime {huge} btime {huge}", f"go nodes 8 movetime {huge}",
                 f"go nodes 8 wtime 1000 btime 1000 winc {huge} binc {huge}",
                 f"go nodes 8 wtime 1000 btime 1000 movestogo {huge}", f"go nodes 8 wtime {endless}"]:
        raw.send(line)
        lines = raw.until(is_bestmove, 30)
        said = [text for text in lines if text.startswith("info string")]
        assert len(said) == 1 and "needs an integer" in said[0] and len(said[0]) < 500, (line[:40], said)
        assert bestmove(lines) != "(none)"
    raw.send(f"setoption name Hash value {endless}")
    said = raw.until(lambda text: text.startswith("info string"), 10)
    assert len(said) == 1 and len(said[0]) < 500


def test_a_fen_move_number_past_64_bits_is_refused_and_the_position_kept(raw: RawEngine) -> None:
    """A FEN whose move number had 401 digits was taken, and every search of it failed (the
    encoder's move count overflowed a float): `bestmove (none)` until the next position.  The
    counters are UCI integers, and the position before stays."""
    raw.send("position startpos moves e2e4")
    fields = START.fen().split()
    raw.send(f"position fen {' '.join([*fields[:5], '1' + '0' * 400])}")
    said = raw.until(lambda text: text.startswith("info string"), 10)
    assert "unchanged" in said[-1] and len(said[-1]) < 500
    raw.send("go nodes 8")
    lines = raw.until(is_bestmove, 30)
    assert chess.Move.from_uci(bestmove(lines)) in _after(START, chess.Move.from_uci("e2e4")).legal_moves


def test_a_long_message_keeps_its_end_within_the_cap() -> None:
    """A malformed FEN of 2,000 characters is quoted in its error: the info line was cut to 400
    characters from the front, losing "; position unchanged", which tells the GUI what happened."""
    import io

    from klent.protocols.uci_search import MAX_INFO, Output

    stream = io.StringIO()
    Output(stream).info(f"position: bad FEN {'x' * 2000!r}; position unchanged")
    line = stream.getvalue().strip()
    assert line.startswith("info string position: bad FEN 'xxx") and line.endswith("; position unchanged")
    assert " ... " in line and len(line) <= len("info string ") + MAX_INFO + len(" ... ")


def test_go_nodes_past_the_largest_simulations_setting_is_searched_in_steps(raw: RawEngine) -> None:
    """`go nodes 9223372036854775807` was one Sequential Halving search planning every
    simulation up front: a MemoryError and `bestmove (none)` (10^9 nodes: 9.7 GB, and 20 s before
    `stop` was heard).  Beyond the largest Simulations setting, `nodes` is searched in steps as a
    long search is, which `stop` ends."""
    raw.ready()
    raw.send(f"go nodes {2**63 - 1}")
    assert not any(is_bestmove(line) for line in raw.quiet_for(1.0))
    raw.ready(timeout=5)
    raw.send("stop")
    lines = raw.until(is_bestmove, 5)
    assert bestmove(lines) != "(none)" and not any(" failed: " in line for line in lines), lines[-3:]


def test_a_long_searchmoves_list_is_read_once_per_move_and_refused_in_one_line(raw: RawEngine) -> None:
    """`go searchmoves` with a megabyte of unreadable moves was answered by an info line per
    move (28 MB), and a megabyte of distinct illegal ones kept the engine deaf for 21 s: each
    distinct move is read once, and the refused ones are reported in one line."""
    illegal = [f"{file}7{to}5" for file in "abcdefgh" for to in "abcdefgh"]  # Black's moves, White to move
    raw.send("go nodes 8 searchmoves " + " ".join(["zz"] * 20_000 + illegal * 100 + ["e2e4"]))
    lines = raw.until(is_bestmove, 30)
    said = [line for line in lines if line.startswith("info string")]
    assert len(said) == 1 and "ignored" in said[0], said[:3]
    assert bestmove(lines) == "e2e4"


def test_a_long_record_costs_linear_time_and_is_not_replayed_at_each_go(raw: RawEngine, untrained_model) -> None:
    """#53: `position startpos moves` with 100,000 Animal Shogi moves took 248 s, and each later
    `go` as long (every move walked back over the whole record to count repetitions, and the
    record was played again at every `go`).  The record's repetition table makes it linear, and
    a position that extends the last one plays only its new moves."""
    raw.send("setoption name UCI_Variant value dobutsu",
             f"setoption name ModelFile value {untrained_model('animal_shogi')}")
    raw.ready(timeout=60)
    shuffle = ["c1c2", "a4a3", "c2c1", "a3a4"] * 25_000  # the giraffes back and forth: positions repeat
    began = time.perf_counter()
    raw.send("position startpos moves " + " ".join(shuffle))
    raw.ready(timeout=60)
    read = time.perf_counter() - began
    assert read < 20, read  # about 3 s on a loaded 2-core machine
    for extra in ([], ["c1c2"], ["c1c2", "a4a3"]):
        began = time.perf_counter()
        raw.send("position startpos moves " + " ".join(shuffle + extra), "go nodes 8")
        lines = raw.until(is_bestmove, 30)
        assert not any(line.startswith("info string") for line in lines), lines
        assert bestmove(lines) != "(none)"
        assert time.perf_counter() - began < read / 2 + 1.0  # no replay of the record


def test_lichess_bots_default_options_are_accepted_and_a_tablebase_draw_reads_0cp(model: str, syzygy_dir: str) -> None:
    """#51: lichess-bot's default config stopped at start-up (no SyzygyPath option).  Its
    defaults, sent through python-chess as lichess-bot sends them to `klent-uci`, are accepted (a
    SyzygyPath without tables is reported, not refused), and with the bundled tables a drawn
    KRvKR reads 0 cp, what lichess-bot's draw offers wait for, and a certain draw in its WDL;
    a won KQvK a certain win."""
    path = shutil.which("klent-uci", path=str(Path(sys.executable).parent))
    assert path is not None, "klent-uci is not installed: run `make setup`"
    with chess.engine.SimpleEngine.popen_uci([path, "--model", model], timeout=60) as uci:
        assert {"SyzygyPath", "SyzygyProbeLimit", "UCI_ShowWDL", "Move Overhead", "Threads", "Hash"} <= set(uci.options)
        assert uci.options["SyzygyPath"].default == syzygy_dir  # found by default after `make setup`
        uci.configure({"Move Overhead": 100, "Threads": 4, "Hash": 512, "SyzygyPath": "./syzygy/",
                       "UCI_ShowWDL": True})
        uci.ping()
        uci.configure({"SyzygyPath": syzygy_dir})
        board = chess.Board("4k3/8/8/8/8/8/r7/4K2R w - - 0 1")
        info = uci.analyse(board, chess.engine.Limit(nodes=32))
        assert info["score"].relative == chess.engine.Cp(0)
        assert info["wdl"].relative == chess.engine.Wdl(0, 1000, 0)
        won = uci.analyse(chess.Board("8/8/8/3k4/8/8/8/K5Q1 w - - 0 1"), chess.engine.Limit(nodes=32))
        assert won["wdl"].relative == chess.engine.Wdl(1000, 0, 0)
        result = uci.play(board, chess.engine.Limit(nodes=32))
        assert result.move is not None and result.move.uci() != "h1h2"  # Rh2?? loses the rook


# --- games against Stockfish ---------------------------------------------------------------


RULE_ENDINGS = {"checkmate", "stalemate", "insufficient material", "seventyfive moves",
                "fivefold repetition", "threefold repetition", "fifty moves"}


def test_klent_match_against_stockfish(command: list[str], stockfish_path: str, tmp_path) -> None:
    """`klent match` plays two full games, colours alternating, against Stockfish Skill Level 0
    at 50 ms a move: only legal moves (the PGN records replay), every game ended by the rules
    or by the move cap."""
    out = tmp_path / "match"
    result = subprocess.run(
        [sys.executable, "-m", "klent", "match", "--game", "chess", "--engine1", shlex.join(command),
         "--engine2", stockfish_path, "--option2", "Skill Level=0", "--games", "2",
         "--time-per-move", "0.05", "--max-moves", "200", "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    games = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert [g["first"] for g in games] == [0, 1]
    for record in games:
        assert record["reason"] in RULE_ENDINGS or record["reason"].startswith("move cap"), record
        with open(out / record["record"], encoding="utf-8") as pgn:
            game = chess.pgn.read_game(pgn)
        assert game is not None and not game.errors
        board = game.board()
        for move in game.mainline_moves():
            assert move in board.legal_moves
            board.push(move)
        assert board.ply() == record["moves"]
        assert record["digest"] == game_digest(record["first"], [move.uci() for move in board.move_stack])


def test_klent_match_refuses_an_unknown_uci_option(command: list[str], stockfish_path: str, tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "klent", "match", "--game", "chess", "--engine1", shlex.join(command),
         "--engine2", stockfish_path, "--option2", "Skil Level=0", "--out", str(tmp_path / "m")],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert "Skil Level" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "m" / "games.jsonl").exists()


def test_games_against_stockfish_on_the_clock(command: list[str], stockfish_path: str) -> None:
    """Games against Stockfish (Skill Level 0) through python-chess: one on a 5 s + 0.05 s
    clock that klent must not lose on time, one by node count.

    Every move of both sides must be legal; a game ends by the rules or is adjudicated a draw
    at 160 plies (the untrained network may shuffle forever).
    """
    klent = chess.engine.SimpleEngine.popen_uci(command, timeout=60)
    stockfish = chess.engine.SimpleEngine.popen_uci(stockfish_path)
    try:
        stockfish.configure({"Skill Level": 0, "Threads": 1})
        klent.configure({"Move Overhead": 50})
        for klent_colour, klent_limit in ((chess.WHITE, "clock"), (chess.BLACK, "nodes")):
            board = chess.Board()
            clock = {chess.WHITE: 5.0, chess.BLACK: 5.0}
            increment = 0.05
            while not board.is_game_over(claim_draw=True) and board.ply() < 160:
                if board.turn == klent_colour:
                    if klent_limit == "clock":
                        limit = chess.engine.Limit(white_clock=clock[chess.WHITE], black_clock=clock[chess.BLACK],
                                                   white_inc=increment, black_inc=increment)
                    else:
                        limit = chess.engine.Limit(nodes=16)
                    began = time.perf_counter()
                    move = klent.play(board, limit).move
                    clock[board.turn] += increment - (time.perf_counter() - began)
                    assert clock[board.turn] > 0, f"klent lost on time at ply {board.ply()}"
                else:
                    move = stockfish.play(board, chess.engine.Limit(time=0.01)).move
                assert move is not None and move in board.legal_moves, (move, board.fen())
                board.push(move)
            outcome = board.outcome(claim_draw=True)
            assert outcome is not None or board.ply() >= 160
    finally:
        klent.quit()
        stockfish.quit()
