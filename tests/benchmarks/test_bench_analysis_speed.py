"""`klent bench analysis_speed`: visits/s of `klent analysis` beside `klent gtp` kata-analyze."""

from __future__ import annotations

import pytest

from klent.bench.analysis_speed import main


def test_both_front_ends_are_timed_on_one_position(untrained_model, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--visits", "32", "--seconds", "0.6", "--rounds", "1", "--model", untrained_model("go9")]) == 0
    analysis, gtp, ratio = capsys.readouterr().out.splitlines()
    assert analysis.startswith("klent analysis:") and "visits/s, first report after" in analysis
    assert float(analysis.split()[2].replace(",", "")) > 0 and float(gtp.split()[3].replace(",", "")) > 0
    assert ratio.startswith("ratio analysis / gtp:")
