"""Two matches against the same opponent, compared game by game: `klent bench paired A B`.

Two `klent match` rows from the same openings (`--openings`: game 2k-1 and 2k on opening k,
engine 1 moving first in one of them) pair up game by game: the same start, the same colour,
the same opponent, only engine 1 differs.  On a pair the outcome and the score margin are
compared directly, which is far more sensitive than two win rates side by side: the opening's
own difficulty cancels.  Prints the games both rows played, the wins of each, how many pairs
only one of them won, with the two-sided exact sign test on those (McNemar's test), and in Go
in how many pairs each had the better referee margin.

Games pair by their opening's moves and who moved first, read from each folder's
``summary.json``, so rows played from other opening files or in parts still pair correctly; a
folder that passes over its openings more than once pairs the n-th game from a start with the
other row's n-th game from it. A folder without recorded openings pairs by game number.  A row
played in parts (other sessions, ``--first-opening``) is given as all its folders: with more than
two folders, those with equal settings but for the games and openings
(`klent.matchplay.records.row_settings`) form one row, and there must be two rows.

    klent bench paired runs/strength/gpuD-200-level10 runs/strength/abl-noown-200-level10
    klent bench paired runs/strength/td-s2{,r}-td-10000-level10 runs/strength/td-s2{,r}-dyna2-10000-level10
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from klent.matchplay.records import group_rows, read_results, recorded_config
from klent.matchplay.results import GameResult, game_margin
from klent.matchplay.stats import sign_test


@dataclass(frozen=True)
class Paired:
    games: int  # pairs: games both rows played
    first_wins: int
    second_wins: int
    only_first: int  # pairs the first row won and the second did not
    only_second: int
    first_better_margin: int  # Go: pairs where the first row's referee margin was larger
    second_better_margin: int


def rows(folders: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """Two folders are two rows; more are grouped into rows by their settings (the module
    docstring), and must make exactly two."""
    if len(folders) == 2:
        return [folders[0]], [folders[1]]
    groups = group_rows(folders)
    if len(groups) != 2:
        raise ValueError(f"the {len(folders)} folders hold {len(groups)} rows (folders with equal settings "
                         "but for the games and openings are one row); paired compares two")
    first, second = groups
    return first, second


def row_games(row: Sequence[Path], openings: dict[Path, list[str]] | None) -> dict[tuple[object, ...], GameResult]:
    """A row's finished games by their start: (opening moves, who moved first, the how-manieth
    game of the folder from that start) from each folder's recorded ``openings``, or by game
    number without them (a row of one folder).  Two folders of a row must not share a start."""
    games: dict[tuple[object, ...], GameResult] = {}
    for folder in row:
        seen: Counter[tuple[object, ...]] = Counter()
        for result in sorted(read_results(folder), key=lambda result: result.game):
            if openings is None:
                key: tuple[object, ...] = (result.game,)
            else:
                texts, opening = openings[folder], result.opening
                if not isinstance(opening, int) or not 0 <= opening < len(texts):
                    raise ValueError(f"{folder}: game {result.game} names no recorded opening ({opening})")
                start = (texts[opening], result.first)
                key = (*start, seen[start])
                seen[start] += 1
            if key in games:
                raise ValueError(f"{folder}: game {result.game} has the start of a game in another part of its row")
            games[key] = result
    return games


def compare(first: Sequence[Path], second: Sequence[Path]) -> Paired:
    """The game-by-game comparison of two rows, each one match folder or the folders of its
    parts (see the module docstring)."""
    configs = {folder: recorded_config(folder) for folder in [*first, *second]}
    recorded = {folder: config["openings"] for folder, config in configs.items() if config and config.get("openings")}
    openings = recorded if len(recorded) == len(configs) else None
    if openings is None and len(configs) > 2:
        raise ValueError("the parts of a row pair by opening, so every folder needs a summary.json "
                         "with its openings (klent match --openings)")
    a, b = row_games(first, openings), row_games(second, openings)
    common = [key for key in a if key in b]
    if openings is None:  # by game number: the numbers must stand for the same starts
        for key in common:
            if (a[key].opening, a[key].first) != (b[key].opening, b[key].first):
                raise ValueError(f"game {a[key].game} started from another opening or colour in "
                                 f"{first[0]} and {second[0]}")
    won_a = {k for k in common if a[k].winner == 0}
    won_b = {k for k in common if b[k].winner == 0}
    margins = [(game_margin(a[k]), game_margin(b[k])) for k in common]
    scored = [(x, y) for x, y in margins if x is not None and y is not None]
    return Paired(len(common), len(won_a), len(won_b), len(won_a - won_b), len(won_b - won_a),
                  sum(x > y for x, y in scored), sum(y > x for x, y in scored))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench paired", description=__doc__.split("\n")[0],
                                     epilog="With more than two folders, those with equal settings but for "
                                            "the games and openings are the parts of one row.")
    parser.add_argument("folders", type=Path, nargs="+", metavar="folder",
                        help="klent match folders from the same openings: two rows, each one folder or its parts")
    args = parser.parse_args(argv)
    if len(args.folders) < 2:
        parser.error("give two rows: at least two klent match folders")
    try:
        first, second = rows(args.folders)
        result = compare(first, second)
    except ValueError as error:
        parser.error(str(error))
    if result.games == 0:
        parser.error("the two rows have no game in common")
    name_a, name_b = ("+".join(folder.name for folder in row) for row in (first, second))
    print(f"{result.games} games both played: {name_a} won {result.first_wins}, {name_b} won {result.second_wins}")
    print(f"won by one of them only: {result.only_first} by {name_a}, {result.only_second} by "
          f"{name_b} (two-sided sign test p = {sign_test(result.only_first, result.only_second):.3f})")
    if result.first_better_margin or result.second_better_margin:
        print(f"better referee margin: {result.first_better_margin} games {name_a}, "
              f"{result.second_better_margin} games {name_b} "
              f"(p = {sign_test(result.first_better_margin, result.second_better_margin):.3f})")
    return 0
