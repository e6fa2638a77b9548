"""`klent bench search --devices`: one model measured on two execution providers side by side."""

from __future__ import annotations

import pytest

from klent.bench.search import main as bench_search

FAST = ["--games", "2", "--simulations", "4", "--moves", "1", "--seconds", "0.02", "--rounds", "1"]


def test_one_model_on_two_providers(untrained_model, capsys: pytest.CaptureFixture[str]) -> None:
    # CI has no GPU, so both sessions are CPU sessions here; the header names what each really
    # runs on, which is how a GPU that failed over to the CPU shows.
    model = untrained_model("go9")
    assert bench_search(["--model", model, "--devices", "cpu", "auto", *FAST]) == 0
    out = capsys.readouterr().out
    assert f"A: model {model}" in out and f"B: model {model}" in out
    assert out.count("on CPUExecutionProvider") == 2
    assert out.count("x  positions/s") == 4 and out.count("x  simulations/s") == 2


@pytest.mark.parametrize(
    "arguments",
    [
        ["--devices", "cpu", "cuda", "tensorrt"],
        ["--compare", "a.onnx", "b.onnx", "--devices", "cpu", "cuda"],
    ],
)
def test_devices_take_one_or_two_names_for_one_model(arguments: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_status:
        bench_search(arguments)
    assert exit_status.value.code == 2
