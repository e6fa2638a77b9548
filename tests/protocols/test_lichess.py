"""The lichess bridge against a fake lichess server (tests/protocols/fake_lichess.py) over real HTTP."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from fake_lichess import FakeLichess, FirstLegal, StockfishOpponent

from klent.protocols.lichess import Bot, decline_reason
from klent.protocols.lichess_client import ENDPOINTS, LichessClient, redact
from klent.protocols.lichess_config import ChallengePolicy, config_from_dict, load_config

TOKEN = "lip_SECRETtoken0123456789"
ROOT = Path(__file__).resolve().parents[2]


class RecordingSleep:
    """Stands in for time.sleep: records each requested wait, sleeps only a moment."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, float, float]] = []  # (seconds asked, start, end)

    def __call__(self, seconds: float) -> None:
        start = time.monotonic()
        time.sleep(min(seconds, 0.05))
        self.calls.append((seconds, start, time.monotonic()))


def bot_config(fake: FakeLichess, model: str, **sections: dict) -> dict:
    data = {
        "base_url": fake.url,
        "engine": {"model": model, "mode": "reactive", "threads": 1},
        "game": {"max_games": 1},
        "network": {"backoff_base": 0.02, "backoff_max": 0.1, "timeout": 5.0},
    }
    for name, values in sections.items():
        data[name] = {**data.get(name, {}), **values}
    return data


@contextmanager
def running_bot(
    fake: FakeLichess, model: str, sleep=time.sleep, resign_on_exit: bool = False, **sections: dict
) -> Iterator[Bot]:
    """A bot playing in a thread; on exit it stops and finishes (or resigns) its games."""
    bot = Bot(config_from_dict(bot_config(fake, model, **sections)), TOKEN, sleep=sleep)
    thread = threading.Thread(target=bot.run, daemon=True)
    thread.start()
    try:
        yield bot
    finally:
        bot.stop(resign=resign_on_exit)
        thread.join(timeout=15)
        assert not thread.is_alive(), "the bot did not stop"


@pytest.fixture()
def fake() -> Iterator[FakeLichess]:
    with FakeLichess(TOKEN) as server:
        yield server


@pytest.fixture(scope="module")
def model(untrained_model) -> str:
    return untrained_model("chess")


def test_full_game_to_checkmate_with_a_declined_draw_offer(fake, model, stockfish_path):
    opponent = StockfishOpponent(stockfish_path, depth=6, offer_draw_at=2)
    game_id = fake.challenge(opponent, bot_white=True)
    with running_bot(fake, model, engine={"mode": "search", "simulations": 8}):
        game = fake.wait_finished(game_id, timeout=60)
    assert (game.status, game.winner) == ("mate", "black")
    assert game.board.is_checkmate()
    assert fake.rejected_moves == []  # every move the bot sent was legal and on its turn
    assert game.answers == ["draw/no"]  # draws are declined unless configured
    assert game.chat[0] == ("player", "Hi! I am KlentBot, a klent engine. Good luck!")
    fake.wait(lambda: ("player", "Good game!") in game.chat, timeout=5)


def test_draw_offer_accepted_when_configured(fake, model):
    game_id = fake.challenge(FirstLegal(offer_draw_at=2), bot_white=False)
    with running_bot(fake, model, game={"accept_draws": True}):
        game = fake.wait_finished(game_id)
    assert (game.status, game.winner) == ("draw", None)
    assert game.answers == ["draw/yes"]
    assert len(game.moves) == 3  # opponent, bot, opponent (with the offer)
    assert fake.rejected_moves == []


def test_challenges_are_filtered_with_lichess_reasons(fake, model):
    policy = {"min_base": 60, "max_base": 600, "max_increment": 10, "accept_rated": False}
    with running_bot(fake, model, resign_on_exit=True, challenge=policy, game={"max_games": 1}) as bot:
        variant = fake.challenge(variant="chess960")
        fast = fake.challenge(limit=30)
        slow = fake.challenge(limit=3600)
        big_increment = fake.challenge(limit=180, increment=30)
        correspondence = fake.challenge(time_control="correspondence")
        rated = fake.challenge(rated=True)
        fake.wait(lambda: len(fake.declines) == 6)
        playing = fake.challenge(FirstLegal())  # plays on until the bot stops
        fake.wait(lambda: playing in fake.games and fake.games[playing].bot_moves >= 1)
        busy = fake.challenge()
        fake.wait(lambda: busy in fake.declines)
        assert bot.running_games()[0].game_id == playing
    assert fake.declines == {
        variant: "variant", fast: "tooFast", slow: "tooSlow", big_increment: "tooSlow",
        correspondence: "timeControl", rated: "casual", busy: "later",
    }
    # stopping with resign=True resigned the game in progress
    assert (fake.game(playing).status, fake.game(playing).winner) == ("resign", "black")


def test_decline_reasons_for_players_and_lists():
    human = {"challenger": {"id": "alice"}, "variant": {"key": "standard"},
             "timeControl": {"type": "clock", "limit": 300, "increment": 0}, "rated": True}
    bot = {**human, "challenger": {"id": "robot", "title": "BOT"}}
    assert decline_reason(human, ChallengePolicy(), busy=False) is None
    assert decline_reason(human, ChallengePolicy(), busy=True) == "later"
    assert decline_reason(bot, ChallengePolicy(accept_bots=False), busy=False) == "noBot"
    assert decline_reason(human, ChallengePolicy(accept_humans=False), busy=False) == "onlyBot"
    assert decline_reason(human, ChallengePolicy(variants=("fromPosition",)), busy=False) == "standard"
    assert decline_reason({**human, "rated": False}, ChallengePolicy(accept_casual=False), busy=False) == "rated"
    assert decline_reason(human, ChallengePolicy(allow_list=("bob",)), busy=False) == "generic"
    assert decline_reason(human, ChallengePolicy(block_list=("alice",)), busy=False) == "generic"


def test_one_client_method_per_endpoint_and_ids_stay_in_their_path_segment():
    assert all(callable(getattr(LichessClient, name, None)) for name in ENDPOINTS)
    assert LichessClient._route("move", {"game_id": "../account", "move": "e7e8q"}) == (
        "POST", "/api/bot/game/..%2Faccount/move/e7e8q"
    )


def test_a_hostile_stream_line_is_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """A line nested 100,000 deep (RecursionError) or holding a 5,000-digit integer (a ValueError
    that is not a JSONDecodeError) ended the bridge; each is now a warning, and the stream goes on."""
    client = LichessClient("http://127.0.0.1:9", "lip_token", config_from_dict({}))
    lines = ["[" * 100_000, '{"n": ' + "1" * 5000 + "}", "", '{"type": "ok"}']
    with caplog.at_level(logging.WARNING):
        events = list(client._events(httpx.Response(200, content="\n".join(lines).encode())))
    assert events == [None, {"type": "ok"}]
    warnings = [r.getMessage() for r in caplog.records if "malformed stream line" in r.getMessage()]
    assert len(warnings) == 2 and "nested too deeply" in warnings[0], warnings


def test_reconnection_after_dropped_game_streams_loses_and_repeats_no_move(fake, model):
    # The stream is cut right after the bot's 2nd and 3rd moves were applied, before the
    # bot saw them, and the bot's 4th move is first answered by a 502.
    game_id = fake.challenge(FirstLegal(resign_at=6), bot_white=True, drop_after_bot_moves=(2, 3))
    fake.fail_next("POST", f"/api/bot/game/{game_id}/move/", 502)
    with running_bot(fake, model):
        game = fake.wait_finished(game_id)
    assert (game.status, game.winner) == ("resign", "white")
    assert game.stream_connections >= 3
    assert fake.rejected_moves == []  # no move sent twice (the server refuses a second one)
    assert game.bot_moves == 6 and len(game.moves) == 11  # and none lost
    statuses = [status for *_, status in fake.requests_to("POST", f"/api/bot/game/{game_id}/move/")]
    assert statuses.count(502) == 1 and statuses.count(200) == 6


def test_rate_limit_pauses_requests_for_at_least_a_minute(fake, model):
    sleep = RecordingSleep()
    fake.fail_next("GET", "/api/stream/event", 429)
    fake.fail_next("POST", "/api/challenge/", 429)
    game_id = fake.challenge(FirstLegal(resign_at=1), bot_white=True)
    with running_bot(fake, model, sleep=sleep):
        game = fake.wait_finished(game_id)
    assert game.status == "resign"
    long_waits = [call for call in sleep.calls if call[0] >= 60]
    assert len(long_waits) == 2
    accepts = fake.requests_to("POST", f"/api/challenge/{game_id}/accept")
    assert [status for *_, status in accepts] == [429, 200]
    # the accept was retried only after a >= 60 s wait that started after the 429
    assert any(accepts[0][0] <= start and end <= accepts[1][0] for _, start, end in long_waits)


def test_rate_limit_wait_below_a_minute_is_refused():
    with pytest.raises(ValueError, match=r"^config: \[network\] rate_limit_wait must be >= 60"):
        config_from_dict({"network": {"rate_limit_wait": 5}})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"game": {"max_game": 2}}, "[game] max_game is not a setting"),
        ({"games": {}}, "games is not a setting"),
        ({"engine": 3}, "engine must be a table, not 3"),
        ({"engine": {"simulations": 2.5}}, "[engine] simulations must be an integer, not 2.5"),
        ({"engine": {"simulations": 0}}, "[engine] simulations must be >= 1, not 0"),
        ({"engine": {"threads": 100_000}}, "[engine] threads must be <= 64, not 100000"),
        ({"engine": {"mode": "fast"}}, "[engine] mode must be 'search' or 'reactive'"),
        ({"game": {"accept_draws": "yes"}}, '[game] accept_draws must be true or false, not "yes"'),
        ({"game": {"on_shutdown": "abort"}}, "[game] on_shutdown must be 'finish' or 'resign'"),
        ({"game": {"resign_value": -2}}, "[game] resign_value must be >= -1.0, not -2"),
        ({"challenge": {"variants": ["atomic"]}}, "[challenge] variants[0] must be 'standard' or 'fromPosition'"),
        ({"challenge": {"min_base": 600, "max_base": 60}}, "[challenge] needs min_base <= max_base"),
        ({"network": {"backoff_base": 9, "backoff_max": 1}}, "[network] needs backoff_base <= backoff_max"),
        ({"network": {"timeout": float("nan")}}, "[network] timeout must be finite"),
        ({"base_url": "lichess.org"}, "base_url must be an http(s) URL, got 'lichess.org'"),
    ],
)
def test_a_config_mistake_is_one_line_naming_the_key(data, message):
    with pytest.raises(ValueError) as error:
        config_from_dict(data, source="bot.toml")
    text = str(error.value)
    assert text.startswith("bot.toml: ") and message in text and "\n" not in text


def test_config_values_are_read_as_typed():
    config = config_from_dict({
        "base_url": "http://localhost:8080/",
        "challenge": {"variants": ["standard", "fromPosition"], "min_base": 0},
        "engine": {"threads": 2},
    })
    assert config.base_url == "http://localhost:8080"  # no trailing slash: the client appends paths
    assert config.challenge.variants == ("standard", "fromPosition") and config.challenge.min_base == 0.0
    assert config.engine.threads == 2 and config.game == config_from_dict({}).game


def test_a_file_that_is_not_toml_is_one_line(tmp_path):
    path = tmp_path / "bot.toml"
    path.write_text("[engine\n")
    with pytest.raises(ValueError, match=r"bot.toml: not valid TOML"):
        load_config(path)
    with pytest.raises(FileNotFoundError, match="no config file"):
        load_config(tmp_path / "missing.toml")


def test_a_deeply_nested_config_is_one_line(tmp_path, capsys):
    """The TOML parser's RecursionError was a traceback."""
    from klent.cli import main

    path = tmp_path / "bot.toml"
    path.write_text("x = " + "{a = " * 500 + "}" * 500)
    with pytest.raises(ValueError, match=r"bot.toml: not a settings file \(nested too deeply\)"):
        load_config(path)
    assert main(["bot", "lichess", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "nested too deeply" in err, err


def test_engine_device_is_checked():
    assert config_from_dict({"engine": {"device": "cpu"}}).engine.device == "cpu"
    with pytest.raises(ValueError, match=r"\[engine\] device must be one of \['auto', 'cpu', 'cuda', 'tensorrt'\]"):
        config_from_dict({"engine": {"device": "gpu"}})


def test_game_in_progress_at_startup_is_resumed(fake, model):
    game_id = fake.start_game(FirstLegal(resign_at=3), bot_white=False, moves=["e2e4"])
    with running_bot(fake, model):
        game = fake.wait_finished(game_id)
    assert (game.status, game.winner) == ("resign", "black")
    assert game.bot_moves == 3 and fake.rejected_moves == []
    assert game.chat == [("player", "Good game!")]  # no greeting in a game already under way


def test_resigns_after_consecutive_lost_evaluations(fake, model):
    game_id = fake.challenge(FirstLegal(), bot_white=True)
    with running_bot(fake, model, game={"resign_value": 1.0, "resign_moves": 2}):
        game = fake.wait_finished(game_id)
    assert (game.status, game.winner) == ("resign", "black")
    assert game.bot_moves == 1  # first "lost" evaluation: a move; the second: resignation


def test_token_never_in_logs_or_errors(fake, model, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    game_id = fake.challenge(FirstLegal(resign_at=2), bot_white=True)
    # the greeting is refused with an error body that echoes the Authorization header
    fake.fail_next("POST", f"/api/bot/game/{game_id}/chat", 400, echo_auth=True)
    fake.fail_next("GET", f"/api/bot/game/stream/{game_id}", 503)
    with running_bot(fake, model):
        fake.wait_finished(game_id)
    text = caplog.text + "".join(capfd.readouterr())
    assert "HTTP 400" in text and "<token>" in text  # the echo was logged, masked
    assert TOKEN not in text
    assert redact(f"x {TOKEN} y", TOKEN) == "x <token> y"


def token_pieces(token: str) -> list[str]:
    """Every piece of ``token`` that starts or ends it and is long enough to matter."""
    return [token[:n] for n in range(6, len(token) + 1)] + [token[-n:] for n in range(6, len(token) + 1)]


def test_an_echo_cut_at_the_error_length_shows_no_piece_of_the_token(fake, model, caplog, capfd):
    """An error body is kept to 300 characters; masked after the cut, a token across the cut
    was no longer whole, and its first part was printed.  Every log line of the run is scanned."""
    caplog.set_level(logging.DEBUG)
    game_id = fake.challenge(FirstLegal(resign_at=2), bot_white=True)
    prefix = len('{"error":"') + len("fault (you sent Bearer ")
    fake.fail_next("POST", f"/api/bot/game/{game_id}/chat", 400, echo_auth=True, padding=300 - prefix - 10)
    with running_bot(fake, model):
        fake.wait_finished(game_id)
    lines = [record.getMessage() for record in caplog.records] + "".join(capfd.readouterr()).splitlines()
    assert any("HTTP 400" in line and "<token>" in line for line in lines)
    leaks = [line for line in lines if any(piece in line for piece in token_pieces(TOKEN))]
    assert not leaks


def test_redaction_masks_escaped_and_cut_forms_of_the_token():
    assert redact(f"x {TOKEN} y", TOKEN) == "x <token> y"
    assert redact(f"header {repr('Bearer ' + TOKEN)}", TOKEN) == "header 'Bearer <token>'"
    assert redact(f"cut after {TOKEN[:9]}", TOKEN) == "cut after <token>"
    assert redact(f"{TOKEN[-8:]} (cut before)", TOKEN) == "<token> (cut before)"
    slashed = "lip_abc/def+ghi=="
    assert redact(f"quoted {quote(slashed, safe='')}!", slashed) == "quoted <token>!"
    assert redact("lip_ and 456 are no pieces of it", TOKEN) == "lip_ and 456 are no pieces of it"


@pytest.mark.parametrize("token", ["lip_SECRET\nTOKEN005", "lip_SECRET TOKEN005", "lip_SECRET\x7fTOKEN005",
                                   "lip_SECRET\u00e9TOKEN005", "lip_SECRET;TOKEN005"])
def test_a_token_a_header_cannot_carry_is_refused_unshown(fake, model, token):
    with pytest.raises(ValueError, match="bearer token") as error:
        Bot(config_from_dict(bot_config(fake, model)), token)
    assert "SECRET" not in str(error.value) and "TOKEN005" not in str(error.value)


def test_cli_refuses_a_token_with_a_newline_in_one_line_without_showing_it(fake, model, tmp_path):
    """The HTTP library's error printed such a header escaped, which the exact-match mask missed."""
    config = tmp_path / "bot.toml"
    config.write_text(f'base_url = "{fake.url}"\n[engine]\nmodel = "{model}"\nmode = "reactive"\n'
                      "[network]\nbackoff_base = 0.01\nbackoff_max = 0.02\nretries = 2\n")
    token = "lip_SECRET\nTOKEN005"
    result = subprocess.run(
        [sys.executable, "-m", "klent", "bot", "lichess", "--config", str(config)],
        cwd=ROOT, env={**os.environ, "LICHESS_BOT_TOKEN": token}, capture_output=True, text=True, timeout=60,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert len(result.stderr.strip().splitlines()) == 1 and "bearer token" in result.stderr, output
    assert not any(piece in output for part in token.split() for piece in token_pieces(part)), output


def test_cli_plays_and_resigns_on_sigterm_without_showing_the_token(fake, model, tmp_path):
    config = tmp_path / "bot.toml"
    config.write_text(
        f'base_url = "{fake.url}"\n'
        f'[engine]\nmodel = "{model}"\nmode = "reactive"\nthreads = 1\n'
        '[game]\non_shutdown = "resign"\n'
        '[network]\nbackoff_base = 0.05\ntimeout = 5.0\n'
    )
    assert load_config(config).game.on_shutdown == "resign"
    env = {**os.environ, "LICHESS_BOT_TOKEN": TOKEN}
    process = subprocess.Popen(
        [sys.executable, "-m", "klent", "bot", "lichess", "--config", str(config), "--verbose"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        game_id = fake.challenge(FirstLegal(), bot_white=True)
        fake.wait(lambda: game_id in fake.games and fake.games[game_id].bot_moves >= 2, timeout=60)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert (fake.game(game_id).status, fake.game(game_id).winner) == ("resign", "black")
    assert "accepting challenge" in err
    assert TOKEN not in out + err


def test_cli_without_token_is_one_line_error(tmp_path):
    config = tmp_path / "bot.toml"
    config.write_text("")
    env = {k: v for k, v in os.environ.items() if k != "LICHESS_BOT_TOKEN"}
    result = subprocess.run(
        [sys.executable, "-m", "klent", "bot", "lichess", "--config", str(config)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "klent bot: set the LICHESS_BOT_TOKEN environment variable to the bot account's API token"
    ]
