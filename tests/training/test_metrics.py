"""klent.training.metrics: the JSONL log read back within bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from klent.training import metrics


def test_a_log_skips_lines_it_cannot_parse_and_refuses_one_too_large_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line nested 100,000 deep was a RecursionError; it is skipped as a torn line is."""
    path = tmp_path / "metrics.jsonl"
    metrics.append_metrics(path, {"iteration": 1})
    with path.open("a") as log:
        log.write("[" * 100_000 + "\n" + '{"iteration": 2, "lo')  # a hostile line, a torn one
    assert metrics.read_metrics(path) == [{"iteration": 1}]
    monkeypatch.setattr(metrics, "MAX_METRICS_BYTES", 1000)
    with pytest.raises(ValueError, match=f"^{path}: larger than 1000 bytes$"):
        metrics.read_metrics(path)
