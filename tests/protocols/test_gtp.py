"""GTP conformance over a real `klent gtp` subprocess with a small random 9x9 model."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

import pytest
from sgfmill import sgf

from klent.engine.games.go import GoGame
from klent.engine.games.sgf import read_sgf
from klent.engine.timecontrol import GameClock
from klent.matchplay.engine_process import GtpFailure, GtpProcess
from klent.protocols.gtp_clock import gtp_time_settings, kgs_time_settings
from klent.protocols.gtp_wire import parse


@pytest.fixture(scope="module")
def gtp(untrained_model):
    model = untrained_model("go9")
    process = GtpProcess([sys.executable, "-m", "klent", "gtp", "--model", model, "--simulations", "16",
                          "--resign-threshold", "0", "--seed", "1"])
    yield process
    process.close()


def board(gtp: GtpProcess) -> str:
    return gtp.send("showboard")


def stones(gtp: GtpProcess) -> dict[str, str]:
    """Vertex -> "X" / "O" of every stone, read off the showboard diagram by its own labels."""
    lines = board(gtp).split("\n")
    columns = lines[0].split()
    out = {}
    for line in lines[1:]:
        words = line.split()
        if len(words) != len(columns) + 2 or not words[0].isdigit():
            continue  # the letter line and the komi line
        assert words[0] == words[-1]
        for column, cell in zip(columns, words[1:-1]):
            if cell in "XO":
                out[f"{column}{words[0]}"] = cell
    return out


def failure(gtp: GtpProcess, command: str) -> str:
    """The message of a command that must fail, checking that the board did not change."""
    before = board(gtp)
    with pytest.raises(GtpFailure) as error:
        gtp.send(command)
    assert board(gtp) == before
    return error.value.message


def raw(gtp: GtpProcess, text: str, lines: int) -> list[str]:
    """Write ``text`` as is and read ``lines`` raw output lines."""
    gtp.process.stdin.write(text)
    gtp.process.stdin.flush()
    return [gtp._next_line(text, time.monotonic() + 30) for _ in range(lines)]


def new_game(gtp: GtpProcess) -> None:
    gtp.send("boardsize 9")
    gtp.send("clear_board")
    gtp.send("komi 7.5")


def test_the_device_reaches_the_player(untrained_model, devices_asked: list[str]) -> None:
    """`klent gtp --device cpu` loads its network on the CPU."""
    from pathlib import Path

    from klent.protocols.gtp import GtpConfig, GtpEngine

    gtp = GtpEngine(GtpConfig(model=Path(untrained_model("go9")), device="cpu"))
    player = gtp.player(gtp.state)
    assert devices_asked == ["cpu"] and player.evaluator.providers == ["CPUExecutionProvider"]


def test_administrative_commands(gtp) -> None:
    assert gtp.send("protocol_version") == "2"
    assert gtp.send("name") == "klent"
    assert gtp.send("version")
    commands = gtp.send("list_commands").split("\n")
    required = ["protocol_version", "name", "version", "known_command", "list_commands", "quit", "boardsize",
                "clear_board", "komi", "play", "genmove", "undo", "showboard", "fixed_handicap",
                "place_free_handicap", "set_free_handicap", "time_settings", "time_left", "final_score",
                "final_status_list", "loadsgf", "reg_genmove", "kgs-time_settings", "kgs-genmove_cleanup",
                "printsgf", "lz-analyze", "kata-analyze", "lz-genmove_analyze", "kata-genmove_analyze"]
    assert set(required) <= set(commands)
    assert all(gtp.send(f"known_command {c}") == "true" for c in required)
    assert gtp.send("known_command frobnicate") == "false"


def test_ids_comments_blank_lines_crlf_and_case(gtp) -> None:
    new_game(gtp)
    assert raw(gtp, "\n   \n# a comment\n7 name # trailing comment\r\n", 2) == ["=7 klent", ""]
    assert raw(gtp, "8\tPROTOCOL_VERSION\n", 2) == ["=8 2", ""]
    assert raw(gtp, "9 frobnicate\n", 2) == ["?9 unknown command", ""]
    assert parse("12 play b d4 # x") == parse("12\tplay  b  d4\r")


def test_play_undo_and_malformed_input_leave_the_board_unchanged(gtp) -> None:
    new_game(gtp)
    gtp.send("play b D4")
    assert "X" in board(gtp)
    assert failure(gtp, "frobnicate") == "unknown command"
    assert failure(gtp, "play b Z99") == "invalid coordinate"
    assert failure(gtp, "play b J10") == "invalid coordinate"  # off a 9x9 board
    assert failure(gtp, "play b I5") == "invalid coordinate"  # GTP has no column I
    assert failure(gtp, "play w D4") == "illegal move"  # occupied
    assert failure(gtp, "play purple E5") == "invalid color"
    assert failure(gtp, "genmove purple") == "invalid color"
    assert failure(gtp, "play b") == "syntax error"
    assert failure(gtp, "boardsize 13") == "unacceptable size"  # only a 9x9 model
    assert failure(gtp, "komi lots") == "syntax error"
    assert failure(gtp, "genmove") == "syntax error"
    assert failure(gtp, "final_status_list zombie") == "syntax error"
    assert failure(gtp, "fixed_handicap 3") == "board not empty"
    huge = "play b " + "D4" * 100_000
    assert failure(gtp, huge) == "command line too long"
    before = board(gtp)
    assert raw(gtp, "\n \r\n\t\n4 name\n", 2) == ["=4 klent", ""]  # empty lines get no reply
    assert board(gtp) == before
    assert gtp.send("undo") == ""
    assert "X" not in board(gtp)
    assert failure(gtp, "undo") == "cannot undo"


def test_ko_recapture_is_illegal(gtp) -> None:
    new_game(gtp)
    for move in ["b D5", "w E5", "b C4", "w F4", "b D3", "w E3", "b A9", "w D4", "b E4"]:
        gtp.send(f"play {move}")
    assert "D4" not in stones(gtp) and stones(gtp)["E4"] == "X"  # Black's E4 captured D4
    assert failure(gtp, "play w D4") == "illegal move"
    gtp.send("play w A1")  # a ko threat elsewhere, then the recapture is legal
    gtp.send("play b A2")
    gtp.send("play w D4")
    assert "E4" not in stones(gtp) and stones(gtp)["D4"] == "O"


def test_genmove_plays_legal_moves_for_either_colour(gtp) -> None:
    new_game(gtp)
    for colour in "bwbwb":
        move = gtp.send(f"genmove {colour}")
        assert move == "pass" or move[0] in "ABCDEFGHJ" and 1 <= int(move[1:]) <= 9
    gtp.send("genmove w")
    gtp.send("genmove w")  # same colour twice: GTP allows it
    before = stones(gtp)
    move = gtp.send("reg_genmove b")
    assert move.upper() not in before and stones(gtp) == before  # reg_genmove does not play
    # Under cleanup Black never passes while White has a stone it can attack.
    new_game(gtp)
    gtp.send("play b C3")
    gtp.send("play w G7")
    assert gtp.send("kgs-genmove_cleanup b") not in ("pass", "resign")


def test_handicap_commands(gtp) -> None:
    new_game(gtp)
    assert gtp.send("fixed_handicap 4").split() == ["C3", "G7", "C7", "G3"]
    assert stones(gtp) == {"C3": "X", "G7": "X", "C7": "X", "G3": "X"}
    assert failure(gtp, "fixed_handicap 10") == "board not empty"
    new_game(gtp)
    assert failure(gtp, "fixed_handicap 10") == "invalid number of stones"
    assert failure(gtp, "fixed_handicap 1") == "invalid number of stones"
    placed = gtp.send("place_free_handicap 3").split()
    assert len(set(placed)) == 3 and stones(gtp) == {v: "X" for v in placed}
    new_game(gtp)
    assert failure(gtp, "set_free_handicap D4 D4") == "bad vertex list"
    assert failure(gtp, "set_free_handicap D4 Z1") == "bad vertex list"
    gtp.send("set_free_handicap D4 F6")
    assert stones(gtp) == {"D4": "X", "F6": "X"}
    move = gtp.send("genmove w")  # White moves first after handicap
    assert move not in ("D4", "F6")


def test_time_commands(gtp) -> None:
    new_game(gtp)
    gtp.send("time_settings 30 5 1")
    gtp.send("time_left b 20 0")
    for command in ["kgs-time_settings none", "kgs-time_settings absolute 60", "kgs-time_settings byoyomi 10 5 3",
                    "kgs-time_settings canadian 10 30 5"]:
        gtp.send(command)
    assert failure(gtp, "kgs-time_settings fischer 10 5").startswith("syntax error")
    assert failure(gtp, "time_settings 1 2") == "syntax error"
    assert failure(gtp, "time_left b -3 0") == "syntax error"
    gtp.send("time_settings 0 1 1")  # one second per move
    start = time.monotonic()
    gtp.send("time_left b 1 1")
    gtp.send("genmove b")
    assert time.monotonic() - start < 1.0
    gtp.send("time_settings 0 1 0")  # no time limit


def test_clock_budgets_keep_a_margin() -> None:
    clock = GameClock(gtp_time_settings(0, 10, 5), margin=0.2)
    assert 0 < clock.budget(0, 81) < 10 / 5 - 0.2  # Canadian: 5 stones in 10 s
    clock.reset(kgs_time_settings(["absolute", "60"]))
    assert 0 < clock.budget(0, 81) < 60 / 40
    clock.time_left(0, 0.3, 0)
    assert clock.budget(0, 81) == 0.0  # nearly flagged: reactive move
    assert GameClock(gtp_time_settings(10, 5, 0)).budget(0, 81) is None  # no time limit
    clock.reset(kgs_time_settings(["byoyomi", "0", "5", "3"]))
    assert 0 < clock.budget(1, 81) <= 5 - 2 * 0.2


def test_final_score_and_status(gtp) -> None:
    new_game(gtp)
    assert gtp.send("final_score") == "W+7.5"
    gtp.send("play b E5")
    assert gtp.send("final_score") == "B+73.5"  # 81 points for Black minus komi
    assert gtp.send("final_status_list alive") == "E5"
    assert gtp.send("final_status_list dead") == ""
    gtp.send("komi 0.5")  # komi changes apply to the game so far, undo included
    assert gtp.send("final_score") == "B+80.5"
    gtp.send("undo")
    assert gtp.send("final_score") == "W+0.5"


def test_loadsgf_then_printsgf_round_trips(gtp, tmp_path) -> None:
    original = sgf.Sgf_game(size=9)
    root = original.get_root()
    root.set("KM", 6.5)
    root.set_setup_stones({(2, 2), (6, 6)}, set())
    root.set("HA", 2)
    moves = [("w", (4, 4)), ("b", (4, 3)), ("w", (3, 3)), ("b", None), ("w", (5, 5))]
    for colour, move in moves:
        original.extend_main_sequence().set_move(colour, move)
    path = tmp_path / "game.sgf"
    path.write_bytes(original.serialise())
    assert gtp.send(f"loadsgf {path}") == "b"
    printed = sgf.Sgf_game.from_string(gtp.send("printsgf"))
    assert printed.get_size() == 9 and printed.get_komi() == 6.5
    assert printed.get_root().get_setup_stones()[0] == {(2, 2), (6, 6)}
    assert [n.get_move() for n in printed.get_main_sequence()[1:]] == moves
    out = tmp_path / "out.sgf"
    gtp.send(f"printsgf {out}")
    assert [n.get_move() for n in sgf.Sgf_game.from_bytes(out.read_bytes()).get_main_sequence()[1:]] == moves
    # loadsgf with a move number stops before that move.
    assert gtp.send(f"loadsgf {path} 3") == "w"
    assert board(gtp).count("O") == 1 and board(gtp).count("X") == 3
    assert failure(gtp, f"loadsgf {tmp_path / 'missing.sgf'}").startswith("cannot load file")


def test_loadsgf_refuses_a_charset_that_is_not_a_text_encoding(gtp, tmp_path) -> None:
    new_game(gtp)
    gtp.send("play b D4")
    path = tmp_path / "odd.sgf"
    for codec in ["zlib", "base64", "hex", "rot13", "bz2", "uu", "quopri", "nonsense"]:
        path.write_bytes(f"(;FF[4]CA[{codec}]SZ[9]PB[abc];B[ee])".encode())
        assert failure(gtp, f"loadsgf {path}").startswith("cannot load file")
    assert gtp.send("name") == "klent"


def test_printsgf_writes_only_regular_files(gtp, tmp_path) -> None:
    new_game(gtp)
    gtp.send("play b D4")
    folder, fifo, to_fifo = tmp_path / "folder", tmp_path / "fifo", tmp_path / "to-fifo"
    folder.mkdir()
    os.mkfifo(fifo)
    to_fifo.symlink_to(fifo)
    for target in [folder, fifo, to_fifo, tmp_path / "missing" / "game.sgf"]:
        assert failure(gtp, f"printsgf {target}").startswith("cannot write")
    assert failure(gtp, f"loadsgf {fifo}") == "cannot load file (not a regular file)"  # instead of hanging
    assert folder.is_dir() and not any(folder.iterdir()) and stat.S_ISFIFO(fifo.stat().st_mode)
    assert to_fifo.is_symlink() and not (tmp_path / "missing").exists()
    old, to_old = tmp_path / "old.sgf", tmp_path / "to-old.sgf"
    old.write_text("old")
    to_old.symlink_to(old)
    gtp.send(f"printsgf {to_old}")  # a link to a regular file: the file it points to is replaced
    assert to_old.is_symlink() and read_sgf(old.read_bytes()).moves == [GoGame(9).parse_vertex("D4")]


def test_numbers_are_finite_ascii_decimals_and_undo_takes_no_argument(gtp) -> None:
    new_game(gtp)
    gtp.send("play b D4")
    too_long = "9" * 400  # matches the decimal syntax, but float() rounds it to inf
    for command in ["time_settings nan 0 0", "time_settings 10 inf 1", "time_left b nan 0", f"time_left b {too_long} 0",
                    "kgs-time_settings absolute inf", "kgs-time_settings byoyomi 10 5 \uff13", "komi \u0661",
                    "komi 1_000", "komi nan", "komi 1e2", "komi 150.5", "boardsize \uff19", "lz-analyze b \u00b2",
                    "kata-analyze b interval 1_0", "undo extra"]:
        assert failure(gtp, command).startswith("syntax error"), command
    assert "komi 7.5" in board(gtp)
    gtp.send("komi -150")
    gtp.send("komi +0.5")
    assert gtp.send("final_score") == "B+80.5"


def _parse_info(line: str) -> list[dict[str, object]]:
    """Split an analysis line into moves the way Sabaki/Lizzie do: "info" blocks, key-value pairs, pv last."""
    assert line.startswith("info ")
    moves = []
    for block in line.split("info ")[1:]:
        head, pv = block.split(" pv ")
        words = head.split()
        entry: dict[str, object] = {k: float(v) if k != "move" else v for k, v in zip(words[::2], words[1::2])}
        entry["pv"] = pv.split()
        moves.append(entry)
    return moves


@pytest.mark.parametrize("command", ["lz-analyze", "kata-analyze"])
def test_analysis_streams_until_the_next_command(gtp, command) -> None:
    new_game(gtp)
    gtp.send("play b E5")
    lines = raw(gtp, f"5 {command} w 10\n", 3)
    assert lines[0] == "=5"
    game = GoGame(9)
    for line in lines[1:]:
        moves = _parse_info(line)
        assert moves and all(m["move"] != "E5" and m["pv"][0] == m["move"] for m in moves)
        for m in moves:  # every move of every line is a vertex (or pass) of the board
            assert all(0 <= game.parse_vertex(v) <= game.pass_action for v in m["pv"])
        assert [m["order"] for m in moves] == list(range(len(moves)))
        visits = [m["visits"] for m in moves]
        assert visits == sorted(visits, reverse=True) and visits[0] > 0
        for m in moves:
            if command == "lz-analyze":
                assert 0 <= m["winrate"] <= 10000 and 0 <= m["prior"] <= 10000
            else:
                assert 0 <= m["winrate"] <= 1 and -1 <= m["utility"] <= 1 and 0 <= m["prior"] <= 1
    # Each line continues the same tree: the visits shown grow.
    assert sum(m["visits"] for m in _parse_info(lines[2])) > sum(m["visits"] for m in _parse_info(lines[1]))
    # Any line stops the analysis: the stream ends with an empty line, then the reply follows.
    tail = []
    gtp.process.stdin.write("6 name\n")
    gtp.process.stdin.flush()
    while (line := gtp._next_line("name", time.monotonic() + 30)) != "=6 klent":
        tail.append(line)
    assert tail[-1] == "" and all(t.startswith("info ") for t in tail[:-1])
    assert gtp._next_line("name", time.monotonic() + 30) == ""
    assert board(gtp).count("X") == 1  # analysis does not play


@pytest.mark.parametrize("command", ["lz-genmove_analyze", "kata-genmove_analyze"])
def test_genmove_analyze_ends_with_play(gtp, command) -> None:
    new_game(gtp)
    lines = raw(gtp, f"3 {command} b 10\n", 1)
    assert lines == ["=3"]
    rest = []
    while (line := gtp._next_line("genmove_analyze", time.monotonic() + 60)) != "":
        rest.append(line)
    assert rest[-1].startswith("play ") and all(r.startswith("info ") for r in rest[:-1])
    move = rest[-1].split()[1]
    assert stones(gtp) == {move: "X"}
    candidates = _parse_info(rest[0])
    assert move in {m["move"] for m in candidates}
    assert sum(m["visits"] for m in candidates) >= 16  # the genmove's search, 16 simulations


@pytest.fixture(scope="module")
def hopeless_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A go9 model that believes every move loses: action values tanh(-10) ~ -1, so V ~ -1."""
    import torch

    from klent.training.export import export_onnx
    from klent.training.nets import NetConfig, build_net

    game = GoGame(9)
    model = build_net(game, NetConfig(blocks=1, channels=8)).eval()
    with torch.no_grad():
        model.action_value_head.fc.weight.zero_()
        model.action_value_head.fc.bias.fill_(-10.0)
    path = tmp_path_factory.mktemp("hopeless") / "go9.onnx"
    export_onnx(model, game, path)
    return str(path)


@pytest.fixture(scope="module")
def hopeless_but_ahead_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A go9 model whose values say every move loses but whose ownership head gives the side to
    move every point: the count is won, as in a handicap game whose komi the values do not see."""
    import torch

    from klent.training.export import export_onnx
    from klent.training.nets import NetConfig, build_net

    game = GoGame(9)
    model = build_net(game, NetConfig(blocks=1, channels=8, ownership_head=True)).eval()
    with torch.no_grad():
        model.action_value_head.fc.weight.zero_()
        model.action_value_head.fc.bias.fill_(-10.0)
        model.ownership_head.conv.weight.zero_()
        model.ownership_head.conv.bias.fill_(10.0)
    path = tmp_path_factory.mktemp("ahead") / "go9.onnx"
    export_onnx(model, game, path)
    return str(path)


def test_never_resigns_while_the_count_has_it_ahead(hopeless_but_ahead_model) -> None:
    """Values of a lost game, a count of a won one (komi 0.5, a handicap stone): no resigning."""
    command = [sys.executable, "-m", "klent", "gtp", "--model", hopeless_but_ahead_model, "--mode", "reactive",
               "--resign-threshold", "0.1", "--resign-moves", "2"]
    process = GtpProcess(command)
    try:
        process.send("komi 0.5")
        assert process.send("fixed_handicap 2")
        assert all(process.send(f"genmove {colour}") != "resign" for colour in "wbwbw")
    finally:
        process.close()


def test_resigns_only_after_several_losing_moves(hopeless_model) -> None:
    """Every win rate is ~0: the engine plays `resign_moves - 1` moves, resigns at the next,
    and a new game starts the count again.  With resigning off it never resigns."""
    command = [sys.executable, "-m", "klent", "gtp", "--model", hopeless_model, "--mode", "reactive"]
    process = GtpProcess([*command, "--resign-threshold", "0.1", "--resign-moves", "3"])
    try:
        answers = [process.send("genmove b") for _ in range(3)]
        assert "resign" not in answers[:2] and answers[2] == "resign"
        process.send("clear_board")
        assert process.send("genmove b") != "resign"
    finally:
        process.close()
    process = GtpProcess([*command, "--resign-threshold", "0"])
    try:
        assert all(process.send("genmove b") != "resign" for _ in range(4))
    finally:
        process.close()


def test_quit_ends_the_process(untrained_model) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "klent", "gtp", "--model", untrained_model("go9")],
        input="1 name\n2 quit\n3 name\n", capture_output=True, text=True, timeout=60,
    )
    assert process.returncode == 0
    assert process.stdout == "=1 klent\n\n=2\n\n"


def test_gtp_startup_imports_neither_torch_nor_fastapi(untrained_model) -> None:
    code = (
        "import sys, io\n"
        "from klent.cli import main\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(b'name\\nquit\\n'))\n"
        f"main(['gtp', '--model', {untrained_model('go9')!r}])\n"
        "bad = [m for m in ('torch', 'fastapi') if m in sys.modules]\n"
        "print('IMPORTED', bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "IMPORTED []" in out.stdout, out.stdout + out.stderr


def test_showboard_puts_stones_where_gtp_and_gnugo_put_them(gtp, gnugo_path) -> None:
    moves = ["b A1", "w J9", "b A9", "w J1", "b C2", "w H7", "b E5"]
    new_game(gtp)
    with GtpProcess([gnugo_path, "--mode", "gtp"]) as gnugo:
        gnugo.send("boardsize 9")
        gnugo.send("clear_board")
        for move in moves:
            gtp.send(f"play {move}")
            gnugo.send(f"play {move}")
        expected = {v: "X" for v in gnugo.send("list_stones black").split()}
        expected |= {v: "O" for v in gnugo.send("list_stones white").split()}
    assert stones(gtp) == expected == {"A1": "X", "J9": "O", "A9": "X", "J1": "O", "C2": "X", "H7": "O", "E5": "X"}
    lines = board(gtp).split("\n")
    assert lines[1].split()[:2] == ["9", "X"] and lines[1].split()[-2:] == ["O", "9"]  # top line first
    assert lines[9].split()[:2] == ["1", "X"] and lines[9].split()[-2:] == ["O", "1"]
    alive = {tuple(group.split()) for group in gtp.send("final_status_list alive").split("\n")}
    assert alive == {(v,) for v in expected}
    # A capture removes the right stone: White's J1 in the corner, by Black at H1 and J2.
    gtp.send("play b H1")
    gtp.send("play b J2")
    assert "J1" not in stones(gtp) and stones(gtp)["J2"] == "X"


def test_genmove_never_answers_an_occupied_point(gtp) -> None:
    new_game(gtp)
    for move in ["b D4", "w E5", "b F6", "w C3", "b G7"]:
        gtp.send(f"play {move}")
    for colour in "wbwbwbwb":
        before = stones(gtp)
        move = gtp.send(f"genmove {colour}")
        assert move != "resign" and move.upper() not in before
        if move != "pass":
            assert stones(gtp)[move.upper()] == "XO"["bw".index(colour)]
    # Whatever was played, the record replays under the rules to the board shown.
    record = read_sgf(gtp.send("printsgf"))
    assert len(record.moves) == 13
    game = record.game
    shown = {game.parse_vertex(v): 1 if c == "X" else -1 for v, c in stones(gtp).items()}
    assert {int(p): int(v) for p, v in enumerate(record.final.board().ravel()) if v} == shown


def test_passes_only_when_passing_cannot_lose(gtp) -> None:
    new_game(gtp)
    gtp.send("play b E5")
    gtp.send("play w pass")
    assert gtp.send("genmove b") == "pass"  # B+73.5 as the board stands: the game ends, Black wins
    assert gtp.send("final_score") == "B+73.5"
    gtp.send("undo")
    gtp.send("undo")
    gtp.send("play b pass")  # now White's pass would lose: White plays on, whatever the network says
    assert gtp.send("genmove w") not in ("pass", "resign")


def test_klent_gtp_time_lifts_the_default_simulation_cap() -> None:
    """`klent gtp --time 1` searches for the second (its schedule planned from the time), not
    for the 200 simulations of the default; an explicit --simulations still caps it."""
    from klent.cli.gtp import DEFAULT_SIMULATIONS, _simulations

    assert _simulations(None, None) == DEFAULT_SIMULATIONS == 200
    assert _simulations(None, 1.0) is None
    assert _simulations(800, 1.0) == 800
    assert _simulations(50, None) == 50


@pytest.mark.parametrize("size", [9, 13, 19])
def test_the_shipped_weights_play_every_board_size_with_handicap(size: int) -> None:
    """`klent gtp` with no --model: 9x9, 13x13 and 19x19 each accepted and played, a handicap
    game set up as GUIs send it (komi 0.5, fixed handicap stones, White to move)."""
    process = GtpProcess([sys.executable, "-m", "klent", "gtp", "--simulations", "8", "--seed", "1"])
    try:
        process.send(f"boardsize {size}")
        process.send("clear_board")
        process.send("komi 0.5")
        handicap = process.send("fixed_handicap 4").split()
        assert len(handicap) == 4 and len(set(handicap)) == 4
        move = process.send("genmove w")
        assert move != "resign" and (move == "pass" or move.upper() not in handicap)
        assert process.send("genmove b") not in ("resign",)
        assert len(stones(process)) >= 5
    finally:
        process.close()


def test_a_size_without_shipped_weights_is_unacceptable() -> None:
    process = GtpProcess([sys.executable, "-m", "klent", "gtp"])
    try:
        assert failure(process, "boardsize 7") == "unacceptable size"
        assert process.send("boardsize 19") == ""
    finally:
        process.close()
