"""`torchrun` data parallelism: two CPU processes (gloo) train one network."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

from klent.training.config import EvalConfig, config_to_toml, load_config
from klent.training.metrics import read_metrics
from klent.training.nets import load_checkpoint
from klent.training.selfplay import SelfPlayConfig

ROOT = Path(__file__).resolve().parents[2]


def test_two_gloo_processes_keep_identical_weights_and_the_policy_loss_falls(tmp_path: Path) -> None:
    config = load_config(ROOT / "klent" / "training" / "configs" / "countup_cpu.toml")
    config = dataclasses.replace(
        config,
        selfplay=SelfPlayConfig(games=64, steps=8, evaluator="torch"),
        eval=EvalConfig(every=0),
        export_every=1000,
    )
    config_file = tmp_path / "config.toml"
    config_file.write_text(config_to_toml(config))
    out = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    # Its own process group, so that a timeout (or a failed test) takes the worker ranks down
    # with torchrun instead of leaving them waiting for each other.
    process = subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--standalone",
         "--nproc_per_node=2", "-m", "klent", "train", "--config", str(config_file),
         "--out", str(out), "--iterations", "15", "--no-progress"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    try:
        _, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 0, stderr[-3000:]
    checkpoint = load_checkpoint(out / "checkpoint.pt")
    processes = checkpoint.extra["processes"]
    assert len(processes) == 2
    # Each rank's own weights at the last iteration, hashed on that rank.
    assert processes[0]["weights_sha256"] == processes[1]["weights_sha256"]
    # The ranks played different games (their own seeds).
    assert processes[0]["games"]["histories"] != processes[1]["games"]["histories"]
    records = read_metrics(out / "metrics.jsonl")
    assert [r["iteration"] for r in records] == list(range(1, 16))
    # Samples and simulator evaluations are summed over both ranks.
    assert records[-1]["samples"] == 15 * 2 * 64 * 8
    # The policy part of the loss is CE(pi', pi_theta) = H(pi') + KL(pi' || pi_theta); H(pi')
    # moves with the targets, the KL is what fitting reduces.
    fit_gap = np.array([r["policy_loss"] - r["entropy"] for r in records])
    assert fit_gap[-5:].mean() < 0.5 * fit_gap[:5].mean()
