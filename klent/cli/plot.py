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
benchmarks/strength/go9.sh) and draws the TD search paper's figure 7: Elo against the opponent
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
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import geometric_mean
from typing import TYPE_CHECKING

from klent.cli import CommandError
from klent.engine.files import atomic_target
from klent.engine.settings import read_toml

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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
    from klent.training.metrics import read_metrics  # no torch: metrics.py imports numpy only

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
    save_figure(fig, output)


# ---------------------------------------------------------------------------------------------
# --efficiency: the KLENT paper's figure 5
# ---------------------------------------------------------------------------------------------


@dataclass
class Curve:
    """One run's scores against the anchor by the simulator evaluations spent before each."""

    run: str
    game: str
    group: str
    evaluations: list[float]
    scores: list[float]


def _efficiency(args: argparse.Namespace, runs: list[tuple[str, list[dict]]]) -> int:
    """``--efficiency``: the runs' anchor rows as curves grouped by ``--group-by``, their figure
    and the reach table; runs without anchor rows are named and left out."""
    if not 0.0 < args.reach <= 1.0:
        raise CommandError("--reach must be a score in (0, 1]")
    keys = [key.strip() for key in args.group_by.split(",") if key.strip()]
    if not keys:
        raise CommandError("--group-by names no setting")
    curves = []
    for folder, records in runs:
        name = Path(folder).resolve().name
        config = _run_config(Path(folder))
        points = [(r["simulator_evaluations"], r["anchor_score"]) for r in records
                  if r.get("anchor_score") is not None and r.get("simulator_evaluations")]
        if not points:
            print(f"{name}: no anchor evaluation yet, left out")
            continue
        group = " ".join(str(_setting(config, key, folder)) for key in keys)
        xs, ys = zip(*points)
        curves.append(Curve(name, str(config.get("game", "?")), group, list(xs), list(ys)))
    if not curves:
        raise CommandError("no run has an anchor evaluation ([eval] anchor in its config)")
    write_efficiency_figure(curves, args.reach, args.output)
    print(reach_table(curves, args.reach))
    print(f"wrote {args.output}")
    return 0


def _run_config(folder: Path) -> dict:
    """The run's ``config.toml`` (written by the trainer, klent.training.checkpoint.CONFIG_TOML)."""
    try:
        return read_toml(folder / "config.toml")
    except (FileNotFoundError, ValueError) as error:
        raise CommandError(f"{folder}: cannot read config.toml to group the run: {error}") from None


def _setting(config: dict, key: str, folder: str) -> object:
    """The value of a dotted key (``klent.preset``) in a run's config."""
    value: object = config
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise CommandError(f"{folder}: config.toml has no setting {key!r} to group by")
        value = value[part]
    return value


def reach_point(evaluations: Sequence[float], scores: Sequence[float], target: float) -> float | None:
    """The simulator evaluations at which a curve first reaches ``target``: at the first point
    scoring at least ``target``, interpolated linearly in log evaluations from the point
    before it (the first point itself when it already scores enough); None if none does."""
    for i, (x, y) in enumerate(zip(evaluations, scores)):
        if y >= target:
            if i == 0:
                return float(x)
            x0, y0 = evaluations[i - 1], scores[i - 1]
            share = (target - y0) / (y - y0)
            return float(math.exp(math.log(x0) + share * (math.log(x) - math.log(x0))))
    return None


def reach_table(curves: list[Curve], target: float) -> str:
    """Per game and group: the evaluations each seed needs to first reach ``target``, their
    geometric mean and min-max, and the mean as a multiple of the game's smallest mean (among
    groups all of whose seeds reached it)."""
    lines = [f"simulator evaluations to first reach a score of {target:g} against the anchor "
             "(per seed, interpolated in log evaluations):",
             f"{'game':<14}{'group':<22}{'reached':>8}{'geo. mean':>12}{'min':>12}{'max':>12}{'vs best':>9}  seeds"]
    for game in sorted({c.game for c in curves}):
        groups: dict[str, list[Curve]] = {}
        for curve in curves:
            if curve.game == game:
                groups.setdefault(curve.group, []).append(curve)
        reached = {group: [reach_point(c.evaluations, c.scores, target) for c in members]
                   for group, members in groups.items()}
        hits = {group: [x for x in xs if x is not None] for group, xs in reached.items()}
        means = {group: geometric_mean(hits[group]) for group, xs in reached.items() if len(hits[group]) == len(xs)}
        best = min(means.values(), default=None)
        for group in sorted(groups):
            xs = reached[group]
            spent = [f"{c.run} not by {c.evaluations[-1]:.3g}" for c, x in zip(groups[group], xs) if x is None]
            mean = means.get(group)
            row = f"{game:<14}{group:<22}{f'{len(hits[group])}/{len(xs)}':>8}{_number(mean):>12}"
            row += f"{_number(min(hits[group], default=None)):>12}{_number(max(hits[group], default=None)):>12}"
            row += f"{'' if mean is None or best is None else f'{mean / best:.2f}x':>9}  "
            row += ", ".join([f"{c.run} {x:.3g}" for c, x in zip(groups[group], xs) if x is not None] + spent)
            lines.append(row)
    return "\n".join(lines)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def seed_band(curves: list[Curve], points: int = 50) -> tuple[list[float], list[float], list[float], list[float]]:
    """(evaluations, mean, min, max) of a group's seeds on a log-spaced grid over the range all
    of them cover, each seed interpolated linearly in log evaluations; empty lists when their
    ranges do not overlap."""
    import numpy as np

    low = max(min(c.evaluations) for c in curves)
    high = min(max(c.evaluations) for c in curves)
    if high <= low:
        return [], [], [], []
    grid = np.geomspace(low, high, points)
    values = np.array([np.interp(np.log(grid), np.log(c.evaluations), c.scores) for c in curves])
    return list(grid), list(values.mean(axis=0)), list(values.min(axis=0)), list(values.max(axis=0))


def write_efficiency_figure(curves: list[Curve], target: float, output: str | os.PathLike[str]) -> None:
    """One panel per game: each group's mean over its seeds with the seeds' min-max band and
    their own points, score against log simulator evaluations, the target score dotted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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


@dataclass(frozen=True)
class MatchPart:
    """One `klent match` folder: a row of the figure, or a part of one played in another run
    (another session, from further openings with ``--first-opening``)."""

    player: str
    simulations: int
    settings: str  # `klent.matchplay.match.row_settings`: equal for the parts of one row
    wins: int
    losses: int
    draws: int
    digests: frozenset[str]  # of its games (`klent.matchplay.match.GameResult.digest`)


@dataclass(frozen=True)
class StrengthPoint:
    """A player at one budget: its Elo against the opponent with the interval, over the games
    of every folder that played that match."""

    player: str
    simulations: int
    games: int
    distinct: int  # games that differ in who moved first or in any move
    folders: int  # 0: a row of a results table (`table_points`)
    elo: float
    elo_low: float
    elo_high: float


def match_part(folder: Path) -> MatchPart | None:
    """The part of one `klent match` folder; None when engine 1 has no simulation count."""
    import json
    import re
    import shlex

    from klent.matchplay.match import row_settings

    try:
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        config = summary["config"]
        words = shlex.split(config["engines"][0])
        options = config.get("uci_options", [{}])[0]
        result = summary["summary"]
        digests = frozenset(json.loads(line)["digest"]
                            for line in (folder / "games.jsonl").read_text(encoding="utf-8").splitlines()
                            if line.strip())
        counts = (int(result["wins"]), int(result["losses"]), int(result["draws"]))
    except (OSError, ValueError, KeyError, IndexError, TypeError) as error:
        raise CommandError(f"{folder}: not a klent match folder with summary.json and games.jsonl ({error})") from None
    count = options.get("Simulations") or next(
        (words[i + 1] for i, word in enumerate(words[:-1]) if word == "--simulations"), None)
    if count is None:
        return None
    player = re.sub(rf"-{count}(?=-|$)", "", folder.resolve().name, count=1)
    return MatchPart(player, int(count), row_settings(config), *counts, digests)


def strength_points(parts: Sequence[MatchPart]) -> list[StrengthPoint]:
    """One point per match, the parts with equal settings and simulations pooled (the player is
    the first part's), in the order of their first parts."""
    from klent.matchplay.stats import MatchSummary

    rows: dict[tuple[str, int], list[MatchPart]] = {}
    for part in parts:
        rows.setdefault((part.settings, part.simulations), []).append(part)
    points = []
    for (_, simulations), row in rows.items():
        summary = MatchSummary.from_counts(sum(p.wins for p in row), sum(p.losses for p in row),
                                           sum(p.draws for p in row))
        points.append(StrengthPoint(row[0].player, simulations, summary.games,
                                    len(frozenset().union(*(p.digests for p in row))), len(row),
                                    summary.elo, summary.elo_low, summary.elo_high))
    return points


TABLE_COLUMNS = ("player", "simulations", "wins", "losses", "draws", "distinct")


def table_points(path: Path) -> list[StrengthPoint]:
    """The points of a CSV table of match results (columns TABLE_COLUMNS, others such as the
    source ignored): rows whose folders are gone, kept as counts beside their RESULTS entry."""
    import csv

    from klent.matchplay.stats import MatchSummary

    points = []
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in TABLE_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise CommandError(f"{path}: a results table needs the columns {', '.join(missing)}")
            for line, row in enumerate(reader, start=2):
                try:
                    wins, losses, draws, distinct, simulations = (
                        int(row[c]) for c in ("wins", "losses", "draws", "distinct", "simulations"))
                except (ValueError, TypeError) as error:  # TypeError: a short row's missing value
                    raise CommandError(f"{path}:{line}: {error}") from None
                summary = MatchSummary.from_counts(wins, losses, draws)
                points.append(StrengthPoint(row["player"], simulations, summary.games, distinct, 0,
                                            summary.elo, summary.elo_low, summary.elo_high))
    except OSError as error:
        raise CommandError(f"{path}: {error.strerror}") from None
    return points


def _strength(inputs: list[str], output: str) -> int:
    """``--strength``: the points of the match folders and results tables, their figure and a table."""
    parts, points = [], []
    for name in inputs:
        if name.endswith(".csv"):
            points += table_points(Path(name))
            continue
        part = match_part(Path(name))
        if part is None:
            print(f"{name}: engine 1 plays without a simulation count, left out")
        else:
            parts.append(part)
    points = sorted(points + strength_points(parts), key=lambda p: (p.player, p.simulations))
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
