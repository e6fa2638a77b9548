"""`klent match`: what a match records (score margins, distinct games, a resume), and real games against GNU Go."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from klent.engine.games.sgf import read_sgf
from klent.matchplay.config import MatchConfig
from klent.matchplay.engine_process import GtpProcess
from klent.matchplay.records import MatchFolderError, load_results
from klent.matchplay.results import GameResult, distinct_games, game_digest, score_margin

# GNU Go as a referee at level 0, for the tests that check what a match records rather than who
# won: its final_score on a sparse 9x9 board (games cut after 8 or 30 moves) took 1 s against
# 23 s at the default level 10, measured here.  The score it gives is not what they test.
CHEAP_REFEREE = "--mode gtp --chinese-rules --level 0"


def test_score_margin_is_from_the_first_engines_view_over_scored_games() -> None:
    def game(first: int, result: str, reason: str = "two passes, referee score") -> GameResult:
        return GameResult(game=0, first=first, winner=None, reason=reason, result=result, moves=9, record="")

    results = [
        game(0, "B+10.5"),  # engine 1 Black, wins by 10.5
        game(1, "B+4.5"),  # engine 1 White, loses by 4.5
        game(1, "W+2"),  # engine 1 White, wins by 2
        game(0, "0"),  # jigo
        game(0, "W+R", "resignation"),  # not scored
        game(1, "B+T", "time forfeit"),  # not scored
    ]
    assert score_margin(results) == {"games": 4, "mean": (10.5 - 4.5 + 2 + 0) / 4}
    assert score_margin(results[4:]) is None


def test_distinct_games_tell_repeats_by_first_mover_and_moves() -> None:
    def game(first: int, moves: list[str]) -> GameResult:
        return GameResult(game=0, first=first, winner=0, reason="", result="B+1", moves=len(moves),
                          record="", digest=game_digest(first, moves))

    results = [game(0, ["D4", "E5"]), game(1, ["D4", "E5"]), game(0, ["D4", "E5"]), game(0, ["D4", "E6"]),
               game(0, ["D4", "E5", "pass"])]
    assert distinct_games(results) == 4  # the third repeats the first; the others differ
    assert game_digest(0, ["e2e4"]) == game_digest(0, ["e2e4"]) != game_digest(0, ["e2e3"])


def test_a_resumed_match_takes_its_games_in_any_order_but_each_once(tmp_path) -> None:
    """Concurrent games finish out of order: game 3 may be written before game 2, and a resume
    plays the ones missing.  A repeated number, or one beyond the match, is refused."""
    config = MatchConfig(engines=("a", "b"), games=4, out=tmp_path)

    def write(numbers: list[int]) -> None:
        lines = [json.dumps({"game": n, "first": (n - 1) % 2, "winner": 0, "reason": "resignation",
                             "result": "B+R", "moves": 9, "record": f"game-{n:03d}.sgf", "digest": f"d{n}"})
                 for n in numbers]
        (tmp_path / "games.jsonl").write_text("\n".join(lines) + "\n")

    write([1, 3])
    assert [r.game for r in load_results(config)] == [1, 3]
    for numbers in ([1, 3, 1], [1, 5]):
        write(numbers)
        with pytest.raises(MatchFolderError, match="game"):
            load_results(config)


def test_match_between_deterministic_engines_reports_its_repeated_games_and_resumes(
    untrained_model, gnugo_path, tmp_path
) -> None:
    """Greedy play against greedy play repeats the game of each colour assignment: 2 of 4.

    The match is played as 2 games and then resumed to 4, two at a time (--concurrency 2), so
    the repeats also show that the resumed games go on with the right colours whichever worker
    plays them, and that the summary covers all four.
    """
    model = untrained_model("go9")
    ours = f"{sys.executable} -m klent gtp --model {model} --mode reactive --resign-threshold 0"
    out = tmp_path / "match"
    referee = f"{gnugo_path} {CHEAP_REFEREE}"

    def match(games: int, *extra: str, engine2: str = ours) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "klent", "match", "--engine1", ours, "--engine2", engine2, "--game", "go9",
             "--games", str(games), "--max-moves", "30", "--referee", referee, "--out", str(out), *extra],
            capture_output=True, text=True, timeout=300,
        )

    first = match(2)
    assert first.returncode == 0, first.stderr
    assert json.loads((out / "summary.json").read_text())["summary"]["games"] == 2
    completed = match(4, "--resume", "--concurrency", "2")
    assert completed.returncode == 0, completed.stderr
    assert "4 games:" in completed.stdout
    assert "2 distinct games of 4" in completed.stdout
    assert json.loads((out / "summary.json").read_text())["distinct_games"] == 2
    games = sorted((json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()),
                   key=lambda g: g["game"])
    assert [g["game"] for g in games] == [1, 2, 3, 4] and [g["first"] for g in games] == [0, 1, 0, 1]
    assert games[0]["digest"] == games[2]["digest"] != games[1]["digest"] == games[3]["digest"]
    assert (out / "game-001.sgf").read_text() == (out / "game-003.sgf").read_text()

    # A finished match, or a resume with other settings, is refused in one line, folder untouched.
    log = (out / "games.jsonl").read_text()
    for refused, words in ((match(4, "--resume"), "already has 4 games"),
                           (match(6, "--resume", engine2=f"{ours} --mode search"), "other settings (engines)")):
        assert refused.returncode == 2 and words in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert (out / "games.jsonl").read_text() == log


def test_gnugo_plays_each_game_alike_when_the_match_is_played_again(gnugo_path, tmp_path) -> None:
    """GNU Go seeds itself from the clock unless told a seed: the arena sends game N's, so a
    replayed match repeats its games one by one (four unseeded replays of a 40-move GNU Go game
    here gave three different games)."""
    gnugo = f"{gnugo_path} --mode gtp --level 0"
    digests = []
    for name in ("first", "again"):
        out = tmp_path / name
        completed = subprocess.run(
            [sys.executable, "-m", "klent", "match", "--engine1", gnugo, "--engine2", gnugo, "--game", "go9",
             "--games", "4", "--max-moves", "40", "--referee", f"{gnugo_path} {CHEAP_REFEREE}", "--out", str(out)],
            capture_output=True, text=True, timeout=300,
        )
        assert completed.returncode == 0, completed.stderr
        games = sorted((json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()),
                       key=lambda g: g["game"])
        assert [g["game"] for g in games] == [1, 2, 3, 4]
        digests.append([g["digest"] for g in games])
    assert digests[0] == digests[1]
    assert digests[0][0] != digests[0][2]  # same colours, another game's seed


def test_match_against_gnugo_ends_with_legal_moves_and_a_referee_result(
    untrained_model, gnugo_path, tmp_path
) -> None:
    model = untrained_model("go9")
    ours = f"{sys.executable} -m klent gtp --model {model} --mode reactive --resign-threshold 0"
    gnugo = f"{gnugo_path} --mode gtp --level 1"
    out = tmp_path / "match"
    completed = subprocess.run(
        [sys.executable, "-m", "klent", "match", "--engine1", ours, "--engine2", gnugo, "--game", "go9",
         "--games", "2", "--max-moves", "160", "--referee", f"{gnugo_path} --mode gtp --chinese-rules --level 1",
         "--out", str(out)],  # no clock: GNU Go given one thinks 16 times longer (test_pachi.py plays on one)
        capture_output=True, text=True, timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    assert "win rate" in completed.stdout and "Elo difference" in completed.stdout
    report = json.loads((out / "summary.json").read_text())
    assert report["summary"]["games"] == 2
    assert "mean score margin" in completed.stdout
    games = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert report["distinct_games"] == len({g["digest"] for g in games})
    names = report["engine_names"]
    assert names[0].startswith("klent") and names[1].startswith("GNU Go")
    assert [g["first"] for g in games] == [0, 1]  # colours alternate
    for g in games:
        # Only referee-scored endings: no forfeit by illegal move, crash or timeout on either side.
        assert "referee score" in g["reason"], g
        assert g["result"] == "0" or g["result"][:2] in ("B+", "W+")
        # The record replays under klent's rules (read_sgf refuses an illegal move) and ends the game.
        record = read_sgf((out / g["record"]).read_bytes())
        assert len(record.moves) == g["moves"] and record.final.is_terminal
        assert record.result == g["result"] and record.game.komi == 7.5
        assert record.black == names[g["first"]] and record.white == names[1 - g["first"]]
        assert g["digest"] == game_digest(g["first"], [str(a) for a in record.moves])
        winner_colour = None if g["result"] == "0" else "BW".index(g["result"][0])
        expected = None if winner_colour is None else (g["first"] if winner_colour == 0 else 1 - g["first"])
        assert g["winner"] == expected
        # The dead stones counted per engine are the referee's, on the final board.
        referee = GtpProcess([gnugo_path, "--mode", "gtp", "--chinese-rules", "--level", "1"])
        try:
            referee.send("boardsize 9")
            for number, action in enumerate(record.moves):
                referee.send(f"play {'bw'[number % 2]} {record.game.vertex(action)}")
            board = record.final.board().ravel()
            colours = [board[record.game.parse_vertex(v)] for v in referee.send("final_status_list dead").split()]
        finally:
            referee.close()
        by_colour = [colours.count(1), colours.count(-1)]  # Black's, White's
        assert g["dead_stones"] == (by_colour if g["first"] == 0 else by_colour[::-1])
    assert report["dead_stones"]["games"] == 2
    assert report["dead_stones"]["games_with_dead_stones"] == sum(g["dead_stones"][0] > 0 for g in games)
    assert "left dead stones on the board" in completed.stdout


def test_an_engine_that_cannot_start_stops_the_match_before_its_first_game(gnugo_path, tmp_path) -> None:
    """A misspelt program or flag is one error naming the engine, not a match of forfeits."""
    gnugo = f"{gnugo_path} --mode gtp --level 0"
    for engines, words in (((str(tmp_path / "no-such-engine"), gnugo), "engine 1: cannot start"),
                           ((gnugo, f"{gnugo} --no-such-flag"), "engine 2: ")):
        out = tmp_path / f"match{len(words)}"
        done = subprocess.run(
            [sys.executable, "-m", "klent", "match", "--engine1", engines[0], "--engine2", engines[1],
             "--games", "2", "--referee", f"{gnugo_path} {CHEAP_REFEREE}", "--out", str(out)],
            capture_output=True, timeout=120,
        )
        stderr = done.stderr.decode()  # bytes: text mode would turn the bar's carriage returns into newlines
        screen = stderr.rsplit("\r", 1)[-1].strip().splitlines()  # what a terminal still shows
        assert done.returncode == 2 and len(screen) == 1, stderr
        assert screen[0].startswith(f"klent match: {words}"), stderr
        assert "Traceback" not in stderr
        assert not (out / "games.jsonl").exists() and not list(out.glob("game-*.sgf"))


def test_openings_are_each_played_with_both_colours(tmp_path, stockfish_path, gnugo_path) -> None:
    import chess.pgn

    from klent.matchplay.opening_files import read_openings

    start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -"
    chess_file = tmp_path / "chess.txt"
    chess_file.write_text(f"# two openings\n{start} moves e2e4 c7c5\n\n8/8/8/4k3/8/8/3QK3/8 b - - 0 1\n")
    out = tmp_path / "chess-match"
    completed = subprocess.run(
        [sys.executable, "-m", "klent", "match", "--engine1", stockfish_path, "--engine2", stockfish_path,
         "--game", "chess", "--openings", str(chess_file), "--time-per-move", "0.02", "--max-moves", "6",
         "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    games = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert len(games) == 4  # two games per opening by default
    assert [(g["opening"], g["first"]) for g in games] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    first = chess.pgn.read_game(open(out / games[0]["record"]))
    assert [m.uci() for m in first.mainline_moves()][:2] == ["e2e4", "c7c5"]
    third = chess.pgn.read_game(open(out / games[2]["record"]))
    assert third.headers["FEN"] == "8/8/8/4k3/8/8/3QK3/8 b - - 0 1"
    assert len(list(third.mainline_moves())) == 6  # the cap counts moves after the opening
    summary = json.loads((out / "summary.json").read_text())
    assert {k: v["games"] for k, v in summary["per_opening"].items()} == {"0": 2, "1": 2}

    # The same file from its second opening: the games a run that stopped after the first lacks,
    # numbered as the file numbers them.
    rest = tmp_path / "chess-rest"
    completed = subprocess.run(
        [sys.executable, "-m", "klent", "match", "--engine1", stockfish_path, "--engine2", stockfish_path,
         "--game", "chess", "--openings", str(chess_file), "--first-opening", "1", "--time-per-move", "0.02",
         "--max-moves", "6", "--out", str(rest)], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    games = [json.loads(line) for line in (rest / "games.jsonl").read_text().splitlines()]
    assert [(g["opening"], g["first"]) for g in games] == [(1, 0), (1, 1)]  # 2 per remaining opening
    assert chess.pgn.read_game(open(rest / games[0]["record"])).headers["FEN"] == "8/8/8/4k3/8/8/3QK3/8 b - - 0 1"
    assert list(json.loads((rest / "summary.json").read_text())["per_opening"]) == ["1"]

    go_file = tmp_path / "go.txt"
    go_file.write_text("E5 C3\nD4 F6 pass\n")
    assert read_openings(go_file, "go9") == ("E5 C3", "D4 F6 pass")
    go_out = tmp_path / "go-match"
    gnugo = f"{gnugo_path} --mode gtp --level 0"
    completed = subprocess.run(
        [sys.executable, "-m", "klent", "match", "--engine1", gnugo, "--engine2", gnugo, "--game", "go9",
         "--openings", str(go_file), "--games", "2", "--max-moves", "8", "--referee", f"{gnugo_path} {CHEAP_REFEREE}",
         "--out", str(go_out)],
        capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    for i in (1, 2):
        record = read_sgf((go_out / f"game-00{i}.sgf").read_text())
        played = record.states[-1].moves()
        assert [record.game.vertex(a) for a in played[:2]] == ["E5", "C3"] and len(played) == 8

    bad = tmp_path / "bad.txt"
    bad.write_text(f"{start} moves e2e5\n")
    with pytest.raises(ValueError, match="line 1"):
        read_openings(bad, "chess")
    refused = subprocess.run([sys.executable, "-m", "klent", "match", "--engine1", "x", "--engine2", "y",
                              "--game", "chess", "--openings", str(bad), "--out", str(tmp_path / "r")],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "line 1" in refused.stderr and "Traceback" not in refused.stderr


def test_an_openings_file_too_large_or_not_text_is_refused_naming_it(tmp_path, monkeypatch) -> None:
    from klent.matchplay import opening_files

    path = tmp_path / "go.txt"
    path.write_text("E5 C3\n" * 100)
    assert len(opening_files.read_openings(path, "go9")) == 100
    monkeypatch.setattr(opening_files, "MAX_OPENINGS_BYTES", 599)
    with pytest.raises(ValueError, match=f"^{path}: larger than 599 bytes$"):
        opening_files.read_openings(path, "go9")
    path.write_bytes(b"E5 C3 \xff\n")
    with pytest.raises(ValueError, match=f"^{path}: not UTF-8 text"):
        opening_files.read_openings(path, "go9")


def test_a_first_opening_shifts_every_games_opening_and_must_be_one_of_the_file(tmp_path) -> None:
    config = MatchConfig(engines=("a", "b"), games=8, openings=("A", "B", "C"), first_opening=2)
    assert [config.opening(i) for i in range(6)] == [(2, "C"), (2, "C"), (0, "A"), (0, "A"), (1, "B"), (1, "B")]
    for wrong in (3, -1):
        with pytest.raises(ValueError, match="from 0 to 2"):
            MatchConfig(engines=("a", "b"), openings=("A", "B", "C"), first_opening=wrong)
    go_file = tmp_path / "go.txt"
    go_file.write_text("E5 C3\nD4 F6\n")
    for extra, message in ((["--openings", str(go_file), "--first-opening", "2"], "from 0 to 1, not 2"),
                           (["--first-opening", "1"], "needs --openings")):
        refused = subprocess.run([sys.executable, "-m", "klent", "match", "--engine1", "x", "--engine2", "y",
                                  "--out", str(tmp_path / "r"), *extra], capture_output=True, text=True, timeout=60)
        assert refused.returncode == 2 and message in refused.stderr and "Traceback" not in refused.stderr


def test_generated_openings_are_balanced_distinct_and_readable(tmp_path, stockfish_path) -> None:
    import chess.engine

    from klent.matchplay.opening_files import opening_state, read_openings

    out = tmp_path / "openings.txt"
    completed = subprocess.run([sys.executable, "-m", "klent", "openings", "--game", "chess", "--count", "4",
                                "--plies", "6", "--depth", "8", "--max-value", "0.15", "--out", str(out)],
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    openings = read_openings(out, "chess")
    assert len(openings) == len(set(openings)) == 4
    judge = chess.engine.SimpleEngine.popen_uci(stockfish_path)
    judge.configure({"Threads": 1, "UCI_ShowWDL": True})
    try:
        for line in openings:
            board = opening_state("chess", line).board
            assert len(board.move_stack) == 6
            wins, _, losses = judge.analyse(board, chess.engine.Limit(depth=8), game=object())["wdl"].pov(board.turn)
            assert abs(wins - losses) <= 150  # the generator's own judgement, repeated
    finally:
        judge.quit()
    again = tmp_path / "again.txt"
    subprocess.run([sys.executable, "-m", "klent", "openings", "--game", "chess", "--count", "4", "--plies", "6",
                    "--depth", "8", "--max-value", "0.15", "--out", str(again)], check=True, capture_output=True,
                   timeout=300)
    assert again.read_text() == out.read_text()  # seeded: reproducible from its command


def test_generated_variant_openings_are_judged_by_fairy_stockfish(tmp_path, fairy_path) -> None:
    """Gardner openings: 4 random plies each, kept only where Fairy-Stockfish (depth 6) scores
    the position within half a pawn of even, as the same engine confirms afterwards."""
    from fairy_stockfish import FairyStockfish

    from klent.matchplay.opening_files import read_openings

    out = tmp_path / "gardner.txt"
    command = [sys.executable, "-m", "klent", "openings", "--game", "gardner", "--count", "4", "--plies", "4",
               "--depth", "6", "--max-value", "0.5", "--judge", fairy_path, "--out", str(out)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    openings = read_openings(out, "gardner")
    assert len(openings) == len(set(openings)) == 4
    for line in openings:
        judge = FairyStockfish(fairy_path, "gardner")  # a new process: an empty hash, as the generator's
        try:
            kind, amount = judge.score(line.split(), depth=6).split()
        finally:
            judge.close()
        assert len(line.split()) == 4 and kind == "cp" and abs(int(amount)) <= 50, (line, kind, amount)


def test_a_19x19_game_against_gnugo_is_legal_and_scored(gnugo_path, pachi_path, tmp_path) -> None:
    """The shipped 19x19 model (board heads) plays through `klent gtp` against GNU Go, Pachi
    scoring the unfinished game: GNU Go's final_score plays such a board out first (9-25 s)."""
    ours = f"{sys.executable} -m klent gtp --mode reactive --resign-threshold 0"
    out = tmp_path / "match"
    completed = subprocess.run(
        [sys.executable, "-m", "klent", "match", "--engine1", ours, "--engine2", f"{gnugo_path} --mode gtp --level 0",
         "--game", "go19", "--games", "1", "--max-moves", "30", "--referee",
         f"{pachi_path} -t =500 threads=1,pondering=0", "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    (record_line,) = (out / "games.jsonl").read_text().splitlines()
    result = json.loads(record_line)
    assert "referee score" in result["reason"] and result["result"][:2] in ("B+", "W+")
    record = read_sgf((out / result["record"]).read_bytes())
    assert record.game.size == 19 and len(record.moves) == result["moves"]
