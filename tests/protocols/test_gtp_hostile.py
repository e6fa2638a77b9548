"""`klent gtp` against hostile input: numbers far beyond any board, commands that fail in ways
of their own, models that cannot load or fail at play, files too large to be records.  Each
answer is a ``? message`` and the engine lives on."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
from pathlib import Path

import broken_models
import pytest

from klent.matchplay.engine_process import GtpFailure, GtpProcess
from klent.protocols.gtp import GtpConfig, GtpEngine
from klent.protocols.gtp_records import MAX_SGF_BYTES
from klent.protocols.gtp_wire import GtpError

DIGITS = "1" * 4301  # one past int()'s 4,300-digit limit


@pytest.fixture(scope="module")
def gtp(untrained_model):
    process = GtpProcess([sys.executable, "-m", "klent", "gtp", "--model", untrained_model("go9"),
                          "--simulations", "8", "--seed", "1"])
    yield process
    process.close()


@pytest.mark.parametrize("line", [
    f"play b A{DIGITS}",  # int() of the row number: ValueError, and the process died of SIGABRT
    f"set_free_handicap {DIGITS}",
    "lz-analyze interval 1" + "0" * 400,  # OverflowError dividing a 401-digit int
    "lz-analyze b " + "9" * 308,  # an interval of 1e306 s: int(inf) in the analysis' rate
    f"lz-analyze b 1{DIGITS}",
    f"kata-genmove_analyze b 1{DIGITS}",
])
def test_oversized_numbers_are_refused_and_the_engine_lives(gtp: GtpProcess, line: str) -> None:
    before = gtp.send("showboard")
    with pytest.raises(GtpFailure):
        gtp.send(line)
    assert gtp.send("showboard") == before
    assert gtp.send("name") == "klent"


def test_a_command_that_fails_unexpectedly_is_a_question_mark_and_logged(
    untrained_model, caplog: pytest.LogCaptureFixture
) -> None:
    """One catch-all at the command loop: an exception that is not the command's own refusal
    (a bug) is answered ``? message`` and logged with its traceback, and the next command is
    served; a streaming command that fails after its ``=`` line ends its reply."""
    out = io.StringIO()
    engine = GtpEngine(GtpConfig(model=Path(untrained_model("go9"))), out=out)

    def broken(args: list[str]) -> str:
        raise ZeroDivisionError("division by zero, in a handler")

    def broken_stream(cid: str, args: list[str]) -> None:
        engine._begin_stream(cid)
        out.write("info partial\n")
        raise GtpError("the model failed half-way")

    engine.handlers["showboard"] = broken
    engine.streaming["lz-analyze"] = broken_stream
    with caplog.at_level(logging.ERROR, logger="klent.gtp"):
        for line in ("7 showboard\n", "8 name\n", "9 lz-analyze b\n", "10 name\n"):
            engine.handle_line(line)
    assert out.getvalue() == ("?7 division by zero, in a handler\n\n" "=8 klent\n\n"
                              "=9\ninfo partial\n\n" "=10 klent\n\n")
    assert "ZeroDivisionError" in caplog.text and "the model failed half-way" in caplog.text


def test_a_model_onnx_runtime_cannot_evaluate_is_a_question_mark_naming_it(tmp_path: Path) -> None:
    path = broken_models.huge_allocation_model("go9", tmp_path / "huge.onnx")
    with GtpProcess([sys.executable, "-m", "klent", "gtp", "--model", path, "--simulations", "8"]) as gtp:
        with pytest.raises(GtpFailure) as error:
            gtp.send("genmove b")
        assert error.value.message.startswith(f"cannot load model: {path}: ONNX Runtime fails to evaluate it")
        gtp.send("play b E5")
        assert gtp.send("name") == "klent"


def test_a_model_that_turns_nan_after_a_stone_fails_that_move_only(tmp_path: Path) -> None:
    """Finite on the empty board, NaN after one stone: genmove aborted the process with
    "argmax of an empty sequence"."""
    path = broken_models.nan_after_a_move_model("go9", tmp_path / "nan.onnx")
    with GtpProcess([sys.executable, "-m", "klent", "gtp", "--model", path, "--simulations", "8"]) as gtp:
        gtp.send("play b E5")
        for command in ("genmove w", "reg_genmove w"):
            with pytest.raises(GtpFailure) as error:
                gtp.send(command)
            assert error.value.message == f"cannot choose a move: {path}: its policy_logits are not finite " \
                "(NaN or infinite), as from a diverged training run"
        assert gtp.send("final_score")  # every stone alive, as without a model
        assert "X" in gtp.send("showboard") and gtp.send("name") == "klent"


def test_a_model_with_metadata_nested_too_deeply_is_a_one_line_error_at_start(tmp_path: Path) -> None:
    path = broken_models.nested_metadata_model("go9", tmp_path / "nested.onnx")
    done = subprocess.run([sys.executable, "-m", "klent", "gtp", "--model", path], input="name\n",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"klent gtp: {path}: malformed klent metadata (klent.training is nested too deeply)"], done.stderr


def test_loadsgf_refuses_a_file_larger_than_a_record_unread(gtp: GtpProcess, tmp_path: Path) -> None:
    """A 1 GB file was read whole (1.35 GB of memory); the HTTP API caps SGF at 200,000
    characters."""
    big = tmp_path / "big.sgf"
    with big.open("wb") as file:
        file.write(b"(;FF[4]SZ[9];B[ee])")
        file.truncate(1 << 30)  # sparse: nothing on the disk
    with pytest.raises(GtpFailure, match=f"cannot load file .{big}: larger than {MAX_SGF_BYTES} bytes"):
        gtp.send(f"loadsgf {big}", timeout=10)
    just = tmp_path / "just.sgf"
    just.write_bytes(b"(;FF[4]SZ[9]C[" + b"x" * (MAX_SGF_BYTES - 100) + b"];B[ee])")
    assert gtp.send(f"loadsgf {just}") == "w"


def test_a_controller_that_closes_its_end_ends_the_session_without_a_traceback(untrained_model) -> None:
    """A match runner killed mid-game, or a GUI closed, leaves klent gtp writing into a closed
    pipe: each answer raised BrokenPipeError, was caught as a failed command whose `?` reply
    failed again, and the process died with two tracebacks on stderr.  Its input stays open
    here, so the input thread is still reading when the session ends: that aborted the
    interpreter's exit (SIGABRT) until the session ended without waiting for it."""
    process = subprocess.Popen([sys.executable, "-m", "klent", "gtp", "--model", untrained_model("go9"),
                                "--simulations", "4"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stdin is not None
    process.stdout.close()
    process.stdin.write(b"name\ngenmove b\nversion\nname\n")
    process.stdin.flush()
    try:
        assert process.wait(timeout=60) == 0
    finally:
        process.stdin.close()
    assert process.stderr is not None and "Traceback" not in process.stderr.read().decode()
