"""`klent plot`: learning curves of one or more training runs, on the paper's x-axis.

    klent plot runs/go9 -o curves.png
    klent plot runs/klent runs/gumbel-az runs/kl-only -o ablation.png

One figure, one line per run: win rate against uniform random play and against the previous
evaluation's model, the losses, and the entropy of pi' -- each against simulator evaluations
(KLENT paper, appendix B).  Runs are labelled by their folder names.  It also prints each
run's budget so far (iterations, samples, simulator evaluations, CPU and wall hours) and its
latest evaluation: the figures a model card quotes.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from engine.files import atomic_target
from klent.cli import CommandError

# (metric key, panel title); a run without a key (e.g. no evaluation yet) leaves a gap.
PANELS = (
    ("winrate_random", "win rate vs uniform random"),
    ("winrate_reference", "win rate vs previous evaluation"),
    ("policy_loss", "policy loss (cross-entropy)"),
    ("value_loss", "value loss (squared error)"),
    ("entropy", "entropy of the improved policy"),
    ("samples_per_second", "samples / second"),
    ("val_regret", "distillation: teacher's value lost per move (validation)"),
    ("val_tactics_solved", "distillation: tactical positions solved (validation)"),
    ("val_top1", "distillation: the teacher's move chosen (validation)"),
    ("ownership_loss", "ownership loss (cross-entropy per point)"),
    ("val_ownership", "owned points predicted right (validation)"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", help="run folders (each with a metrics.jsonl)")
    parser.add_argument("-o", "--output", default="curves.png", help="PNG file to write")


def run(args: argparse.Namespace) -> int:
    from training.metrics import read_metrics  # no torch: metrics.py imports numpy only

    runs: list[tuple[str, list[dict]]] = []
    for folder in args.runs:
        path = Path(folder) / "metrics.jsonl"
        if not path.is_file():
            raise CommandError(f"{folder}: no metrics.jsonl (is it a training run folder?)")
        records = read_metrics(path)
        if not records:
            raise CommandError(f"{folder}: metrics.jsonl holds no complete iteration yet")
        runs.append((Path(folder).resolve().name, records))
    write_figure(runs, args.output)
    for label, records in runs:
        print(f"{label}: {run_summary(records)}")
    print(f"wrote {args.output}")
    return 0


def run_summary(records: list[dict]) -> str:
    """One line: how much a run has spent and how its latest evaluation went.

    ``cpu_seconds`` is cumulative from the first iteration the trainer metered (runs begun
    before it metered CPU lack it earlier), so the line says from which iteration it counts.
    """
    last = records[-1]
    parts = [
        f"iteration {last['iteration']}",
        f"{last.get('samples', 0):,} samples",
        f"{last.get('simulator_evaluations', 0):,} simulator evaluations",
    ]
    metered = [r for r in records if r.get("cpu_seconds") is not None]
    if metered:
        since = "" if metered[0] is records[0] else f" from iteration {metered[0]['iteration']} on"
        parts.append(f"{metered[-1]['cpu_seconds'] / 3600:.2f} CPU-hours{since}")
    if last.get("wall_seconds") is not None:
        parts.append(f"{last['wall_seconds'] / 3600:.2f} wall hours")
    evaluated = [r for r in records if r.get("winrate_random") is not None]
    if evaluated:
        latest = evaluated[-1]
        parts.append(f"vs random {latest['winrate_random']:.2f} at iteration {latest['iteration']}")
    return ", ".join(parts)


def write_figure(runs: list[tuple[str, list[dict]]], output: str | os.PathLike[str]) -> None:
    """Draw every panel for every run and save the PNG atomically."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt

    # Panels some run has data for; distillation plays no games, so its x-axis is samples.
    panels = [(k, t) for k, t in PANELS if any(r.get(k) is not None for _, records in runs for r in records)]
    played = any(r.get("simulator_evaluations") for _, records in runs for r in records)
    x_key = "simulator_evaluations" if played else "samples"
    columns = 2
    rows = max(1, (len(panels) + columns - 1) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(11, 3.2 * rows), squeeze=False)
    for ax, (key, title) in zip(axes.flat, panels):
        for number, (label, records) in enumerate(runs):
            points = [(r[x_key], r[key]) for r in records if r.get(key) is not None and x_key in r]
            if points:
                xs, ys = zip(*points)
                marker = "o" if key.startswith("winrate") else None
                ax.plot(xs, ys, marker=marker, markersize=3, label=label, color=f"C{number}")  # a run keeps its colour
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(x_key.replace("_", " "))
        ax.grid(alpha=0.3)
        if key.startswith("winrate"):
            ax.set_ylim(-0.02, 1.02)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    output = Path(output)
    try:
        with atomic_target(output) as tmp:
            fig.savefig(tmp, dpi=110)
    finally:
        plt.close(fig)
