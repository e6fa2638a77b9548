"""`klent.bench.server_overhead` on a tiny model: a real `klent serve` answers every request, and
the figures it prints are consistent (the server process spends at least what its network
call costs; CPU time read from /proc grows with work)."""

from __future__ import annotations

import os
import re

from klent.bench.server_overhead import main, process_cpu_seconds


def test_process_cpu_seconds_counts_this_process_work() -> None:
    before = process_cpu_seconds(os.getpid())
    total = 0
    while process_cpu_seconds(os.getpid()) - before < 0.05:  # busy for at least five clock ticks
        total += sum(range(10_000))
    assert total > 0


def test_the_benchmark_reports_the_server_and_the_network(untrained_model, capsys) -> None:
    main(["--model", untrained_model("go9"), "--requests", "16", "--rounds", "2"])
    out = capsys.readouterr().out
    figures = {
        name: float(value)
        for name, value in re.findall(r"^\s+(server process|network alone|outside it)\s+(-?[\d.]+)", out, re.M)
    }
    assert set(figures) == {"server process", "network alone", "outside it"}, out
    assert figures["network alone"] > 0
    assert figures["server process"] > figures["network alone"]
    assert abs(figures["outside it"] - (figures["server process"] - figures["network alone"])) < 2e-3
