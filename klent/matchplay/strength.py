"""Strength by budget, the points of `klent plot --strength` (the TD search paper's figure 7):
a player's Elo against its opponent, with the 95 % interval, at each number of simulations per
move.

A match's simulations are engine 1's ``--simulations`` (or ``Simulations`` option); its player
is the folder name without that number (``td-td-1000-level10`` -> ``td-td-level10``).  The
folders of one row played in parts (`klent.matchplay.records.group_rows`) pool into one point,
their games added, the player named by the first of them.  A CSV results table (`TABLE_COLUMNS`)
gives the points of matches whose folders are gone.
"""

from __future__ import annotations

import csv
import io
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from klent.engine.files import read_text
from klent.matchplay.records import MatchFolderError, group_rows, read_results, recorded_config
from klent.matchplay.results import distinct_games, summarise
from klent.matchplay.stats import MatchSummary

TABLE_COLUMNS = ("player", "simulations", "wins", "losses", "draws", "distinct")
# The largest results table read: a row per match of about 50 bytes (the real one, 1.3 KB for
# 26 rows), so this is room for 20,000 matches.
MAX_TABLE_BYTES = 1 << 20


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

    @classmethod
    def of(cls, player: str, simulations: int, summary: MatchSummary, distinct: int, folders: int) -> StrengthPoint:
        return cls(player, simulations, summary.games, distinct, folders, summary.elo, summary.elo_low,
                   summary.elo_high)


def simulations(folder: Path) -> int | None:
    """Engine 1's simulations per move in a `klent match` folder; None when it has no count."""
    config = recorded_config(folder)
    if config is None:
        raise MatchFolderError(f"{folder}: not a klent match folder: no summary.json")
    try:
        words = shlex.split(config["engines"][0])
        options = config.get("uci_options", [{}])[0]
        count = options.get("Simulations") or next(
            (words[i + 1] for i, word in enumerate(words[:-1]) if word == "--simulations"), None)
        return None if count is None else int(count)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as error:
        raise MatchFolderError(f"{folder}: not a klent match folder: its summary.json names no engines ({error})") \
            from None


def strength_points(folders: Sequence[Path]) -> tuple[list[StrengthPoint], list[Path]]:
    """One point per row of the match folders whose engine 1 has a simulation count, in the
    order of their first folders, and the folders left out for having none."""
    counts = {folder: simulations(folder) for folder in folders}
    counted = {folder: count for folder, count in counts.items() if count is not None}
    points = []
    for row in group_rows(list(counted)):
        results = [result for folder in row for result in read_results(folder)]
        count = counted[row[0]]
        player = re.sub(rf"-{count}(?=-|$)", "", row[0].resolve().name, count=1)
        points.append(StrengthPoint.of(player, count, summarise(results), distinct_games(results), len(row)))
    return points, [folder for folder in folders if folder not in counted]


def table_points(path: Path) -> list[StrengthPoint]:
    """The points of a CSV table of match results (columns TABLE_COLUMNS, others such as the
    source ignored): rows whose folders are gone, kept as counts beside their RESULTS entry."""
    points = []
    try:
        reader = csv.DictReader(io.StringIO(read_text(path, MAX_TABLE_BYTES), newline=""))
        missing = [c for c in TABLE_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: a results table needs the columns {', '.join(missing)}")
        for line, row in enumerate(reader, start=2):
            try:
                wins, losses, draws, distinct, count = (
                    int(row[c]) for c in ("wins", "losses", "draws", "distinct", "simulations"))
            except (ValueError, TypeError) as error:  # TypeError: a short row's missing value
                raise ValueError(f"{path}:{line}: {error}") from None
            points.append(StrengthPoint.of(row["player"], count, MatchSummary.from_counts(wins, losses, draws),
                                           distinct, 0))
    except OSError as error:
        raise ValueError(f"{path}: {error.strerror}") from None
    except csv.Error as error:  # a field longer than csv's limit, a NUL byte
        raise ValueError(f"{path}: not a CSV table ({error})") from None
    return points
