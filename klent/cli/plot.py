"""`klent plot`: learning curves of one or more training runs, on the paper's x-axis.

    klent plot runs/go9 -o curves.png
    klent plot runs/klent runs/gumbel-az runs/kl-only -o ablation.png
    klent plot --efficiency runs/eff/* -o efficiency.png --reach 0.5

One figure, one line per run: win rate against uniform random play, against the previous
evaluation's model and against the anchor, the losses, and the entropy of pi' -- each against
simulator evaluations (KLENT paper, appendix B).  Runs are labelled by their folder names.  It
also prints each run's budget so far (iterations, samples, simulator evaluations, CPU and wall
hours) and its latest evaluation: the figures a model card quotes.

``--efficiency`` draws the paper's figure 5 instead: the score against the anchor
(`klent.training.anchor`) against simulator evaluations on a log axis, one panel per game, the runs
grouped by a setting of their ``config.toml`` (``--group-by algo``; the seeds of one config
form one group): the group's mean over its seeds, interpolated in log evaluations where the
seeds overlap, with the seeds' min-max band and each seed's own points.  It prints, for each
group, the simulator evaluations at which each seed first reaches the score ``--reach``
(interpolated in log evaluations between the two evaluations around the crossing), their
geometric mean and spread, and how many times more the group needs than the game's most
efficient group: the number the KLENT paper's efficiency claim is about.

``--strength`` reads `klent match` folders instead (``summary.json``; e.g. the rows of
benchmarks/strength/go.sh) and draws the TD search paper's figure 7: Elo against the opponent
(with its 95 % interval) by simulations per move, log axis, one line per player.  A match's
simulations are engine 1's ``--simulations`` (or ``Simulations`` option); its player is the
folder name without that number (``td-td-1000-level10`` -> ``td-td-level10``); matches without
a simulation count (reactive play, a time per move) are named and left out.  Folders of the
same match (equal settings but for the number of games and the openings: a row played in parts,
e.g. with ``klent match --first-opening`` in another session) pool into one point, their games
added, the player named by the first of them; the table counts the distinct games and the folders.
A ``.csv`` among them is a results table (player, simulations, wins, losses, draws, distinct
games: a row per point), for matches whose folders are gone.

    klent plot --strength runs/strength/td-td-*-level10 runs/strength/gpuD-*-level10 -o elo.png
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from klent.cli import CommandError
from klent.engine.files import atomic_target

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from klent.matchplay.strength import StrengthPoint
    from klent.training.efficiency import Curve

# (metric key, panel title); a run without a key (e.g. no evaluation yet) leaves a gap.
PANELS = (
    ("winrate_random", "win rate vs uniform random"),
    ("winrate_reference", "win rate vs previous evaluation"),
    ("anchor_score", "score vs the anchor (klent.training.anchor)"),
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
    parser.add_argument("runs", nargs="+", help="run folders (each with a metrics.jsonl); with --strength, match "
                        "folders or .csv results tables")
    parser.add_argument("-o", "--output", default="curves.png", help="PNG file to write")
    parser.add_argument("--efficiency", action="store_true",
                        help="the KLENT paper's figure 5: score against the anchor by simulator evaluations "
                        "(log axis), runs grouped, seeds as a band; prints the evaluations to reach --reach")
    parser.add_argument("--group-by", default="algo", metavar="KEYS",
                        help="--efficiency: the config.toml settings that name a run's group, comma-separated "
                        "(default algo; e.g. klent.preset, or algo,net.blocks)")
    parser.add_argument("--reach", type=float, default=0.5,
                        help="--efficiency: the score whose first crossing the table reports (default 0.5)")
    parser.add_argument("--strength", action="store_true",
                        help="the folders are `klent match` folders (or .csv results tables): Elo against the "
                        "opponent by simulations per move (log axis), one line per player, with the 95%% intervals")


def run(args: argparse.Namespace) -> int:
    from klent.training.metrics import read_metrics, run_summary  # no torch: metrics.py imports numpy only

    if args.strength:
        return _strength(args.runs, args.output)
    runs: list[tuple[str, list[dict]]] = []
    for folder in args.runs:
        path = Path(folder) / "metrics.jsonl"
        records = read_metrics(path) if path.is_file() else []
        if not records and args.efficiency:  # a grid's run that has not logged yet (or failed)
            print(f"{folder}: no complete iteration in metrics.jsonl yet, left out")
            continue
        if not path.is_file():
            raise CommandError(f"{folder}: no metrics.jsonl (is it a training run folder?)")
        if not records:
            raise CommandError(f"{folder}: metrics.jsonl holds no complete iteration yet")
        runs.append((folder, records))
    if args.efficiency:
        return _efficiency(args, runs)
    runs = [(Path(folder).resolve().name, records) for folder, records in runs]
    write_figure(runs, args.output)
    for label, records in runs:
        print(f"{label}: {run_summary(records)}")
    print(f"wrote {args.output}")
    return 0


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
    save_figure(fig, output)


# ---------------------------------------------------------------------------------------------
# --efficiency: the KLENT paper's figure 5
# ---------------------------------------------------------------------------------------------


def _efficiency(args: argparse.Namespace, runs: list[tuple[str, list[dict]]]) -> int:
    """``--efficiency``: the runs' anchor rows as curves grouped by ``--group-by``, their figure
    and the reach table; runs without anchor rows are named and left out."""
    from klent.training.efficiency import reach_table, run_curve

    if not 0.0 < args.reach <= 1.0:
        raise CommandError("--reach must be a score in (0, 1]")
    keys = [key.strip() for key in args.group_by.split(",") if key.strip()]
    if not keys:
        raise CommandError("--group-by names no setting")
    curves = []
    for folder, records in runs:
        try:
            curve = run_curve(Path(folder), records, keys)
        except ValueError as error:
            raise CommandError(str(error)) from None
        if curve is None:
            print(f"{Path(folder).resolve().name}: no anchor evaluation yet, left out")
        else:
            curves.append(curve)
    if not curves:
        raise CommandError("no run has an anchor evaluation ([eval] anchor in its config)")
    write_efficiency_figure(curves, args.reach, args.output)
    print(reach_table(curves, args.reach))
    print(f"wrote {args.output}")
    return 0


def write_efficiency_figure(curves: list[Curve], target: float, output: str | os.PathLike[str]) -> None:
    """One panel per game: each group's mean over its seeds with the seeds' min-max band and
    their own points, score against log simulator evaluations, the target score dotted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from klent.training.efficiency import seed_band

    games = sorted({c.game for c in curves})
    colours = {group: f"C{number}" for number, group in enumerate(sorted({c.group for c in curves}))}
    fig, axes = plt.subplots(1, len(games), figsize=(5.5 * len(games), 4.2), squeeze=False)
    for ax, game in zip(axes.flat, games):
        for group, colour in colours.items():
            members = [c for c in curves if c.game == game and c.group == group]
            if not members:
                continue
            for curve in members:
                ax.plot(curve.evaluations, curve.scores, "o", markersize=2.5, alpha=0.45, color=colour)
            grid, mean, low, high = seed_band(members)
            label = f"{group} ({len(members)} seed{'s' if len(members) > 1 else ''})"
            if grid and len(members) > 1:
                ax.fill_between(grid, low, high, color=colour, alpha=0.2, linewidth=0)
                ax.plot(grid, mean, color=colour, label=label)
            else:
                ax.plot(members[0].evaluations, members[0].scores, color=colour, label=label)
        ax.axhline(target, color="grey", linestyle=":", linewidth=1)
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(game, fontsize=10)
        ax.set_xlabel("simulator evaluations")
        ax.set_ylabel("score vs anchor (draw = 1/2)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    save_figure(fig, output)


def _strength(inputs: list[str], output: str) -> int:
    """``--strength``: the points of the match folders and results tables, their figure and a table."""
    from klent.matchplay.strength import strength_points, table_points

    tables = [Path(name) for name in inputs if name.endswith(".csv")]
    folders = [Path(name) for name in inputs if not name.endswith(".csv")]
    try:
        points, left_out = strength_points(folders)
        points += [point for table in tables for point in table_points(table)]
    except ValueError as error:
        raise CommandError(str(error)) from None
    for folder in left_out:
        print(f"{folder}: engine 1 plays without a simulation count, left out")
    points.sort(key=lambda p: (p.player, p.simulations))
    if not points:
        raise CommandError("no match with a simulation count (engine 1's --simulations or Simulations)")
    write_strength_figure(points, output)
    for p in points:
        source = {0: ", from a table", 1: ""}.get(p.folders, f", {p.folders} folders pooled")
        print(f"{p.player}: {p.simulations:,} simulations, {p.games} games ({p.distinct} distinct{source}), "
              f"Elo {p.elo:+.0f} ({p.elo_low:+.0f} to {p.elo_high:+.0f})")
    print(f"wrote {output}")
    return 0


def write_strength_figure(points: list[StrengthPoint], output: str | os.PathLike[str]) -> None:
    """Elo against simulations per move (log axis), one line per player, 95 % intervals as
    error bars (an unbounded end, a whitewash, is drawn to the plot's edge)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for number, player in enumerate(sorted({p.player for p in points})):
        mine = [p for p in points if p.player == player]
        xs = [p.simulations for p in mine]
        ys = [p.elo for p in mine]
        errors = [[y - max(p.elo_low, -1000.0) for y, p in zip(ys, mine)],
                  [min(p.elo_high, 1000.0) - y for y, p in zip(ys, mine)]]
        ax.errorbar(xs, [max(min(y, 1000.0), -1000.0) for y in ys], yerr=errors, marker="o", capsize=3,
                    color=f"C{number}", label=player)
    ax.axhline(0.0, color="grey", linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("simulations per move")
    ax.set_ylabel("Elo against the opponent (95 % interval)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    save_figure(fig, output)


def save_figure(fig: Figure, output: str | os.PathLike[str]) -> None:
    """Lay out ``fig``, write it to ``output`` as a PNG atomically, and free it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    try:
        with atomic_target(Path(output)) as tmp:
            fig.savefig(tmp, dpi=110)
    finally:
        plt.close(fig)
