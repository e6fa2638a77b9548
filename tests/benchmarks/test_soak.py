"""`klent bench soak` end to end, shortened to 5 seconds: the traffic reaches every kind of
request, and a real `klent serve` answers all of it without an error (a 503 to a search when
its lane is full and the 4xx of bad input are intended, not errors).  Five seconds say nothing
about memory growth, so the RSS verdict is the full soak's (benchmarks/RESULTS.md), not this
test's."""

from __future__ import annotations

import json

from klent.bench.soak import KINDS, main


def test_a_short_soak_has_no_errors(untrained_model, capsys) -> None:
    main(["--minutes", str(5 / 60), "--clients", "4", "--model", untrained_model("go9")])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["benchmark"] == "soak" and summary["errors"] == {}
    assert set(summary["requests"]) <= set(KINDS)
    assert {"search", "reactive", "analyze", "bad_input", "abandoned"} <= set(summary["requests"]), summary["requests"]
    assert summary["statuses"]["reactive"] == {"200": summary["requests"]["reactive"]}
    assert len(summary["rss_mb"]) >= 5 and all(mb > 0 for _, mb in summary["rss_mb"])
    assert summary["p99_ms"]["reactive"] >= summary["p50_ms"]["reactive"] > 0
