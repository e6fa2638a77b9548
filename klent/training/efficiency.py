"""Efficiency curves, the analysis behind the KLENT paper's figure 5 (`klent plot --efficiency`):
each run's scores against the anchor (`klent.training.anchor`) by the simulator evaluations
spent before them, the runs grouped by settings of their ``config.toml`` (the seeds of one
config form one group), the seeds' band, and the evaluations each seed needs to first reach a
score (`klent.matchplay.stats.reach_point`) with the groups' geometric means side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from statistics import geometric_mean

from klent.engine.settings import read_toml
from klent.matchplay.stats import reach_point


@dataclass
class Curve:
    """One run's scores against the anchor by the simulator evaluations spent before each."""

    run: str
    game: str
    group: str
    evaluations: list[float]
    scores: list[float]


def run_curve(folder: Path, records: list[dict], keys: list[str]) -> Curve | None:
    """The curve of the run in ``folder`` from its metrics ``records``, its group named by the
    values of ``keys`` (dotted settings of its ``config.toml``); None without anchor rows."""
    config = _run_config(folder)
    points = [(r["simulator_evaluations"], r["anchor_score"]) for r in records
              if r.get("anchor_score") is not None and r.get("simulator_evaluations")]
    if not points:
        return None
    group = " ".join(str(_setting(config, key, folder)) for key in keys)
    xs, ys = zip(*points)
    return Curve(folder.resolve().name, str(config.get("game", "?")), group, list(xs), list(ys))


def _run_config(folder: Path) -> dict:
    """The run's ``config.toml`` (written by the trainer, klent.training.checkpoint.CONFIG_TOML)."""
    try:
        return read_toml(folder / "config.toml")
    except (FileNotFoundError, ValueError) as error:
        raise ValueError(f"{folder}: cannot read config.toml to group the run: {error}") from None


def _setting(config: dict, key: str, folder: Path) -> object:
    """The value of a dotted key (``klent.preset``) in a run's config."""
    value: object = config
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise ValueError(f"{folder}: config.toml has no setting {key!r} to group by")
        value = value[part]
    return value


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
