"""Two matches against the same opponent, compared game by game: `klent bench paired A B`.

Two `klent match` rows from the same openings (`--openings`: game 2k-1 and 2k on opening k,
engine 1 moving first in one of them) pair up by game number: the same start, the same colour,
the same opponent, only engine 1 differs.  On a pair the outcome and the score margin are
compared directly, which is far more sensitive than two win rates side by side: the opening's
own difficulty cancels.  Prints the games both rows played, the wins of each, how many pairs
only one of them won, with the two-sided exact sign test on those (McNemar's test), and in Go
in how many pairs each had the better referee margin.

    klent bench paired runs/strength/gpuD-200-level10 runs/strength/abl-noown-200-level10
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path

from matchplay.match import GameResult, game_margin


@dataclass(frozen=True)
class Paired:
    games: int  # pairs: games both rows played
    first_wins: int
    second_wins: int
    only_first: int  # pairs the first row won and the second did not
    only_second: int
    first_better_margin: int  # Go: pairs where the first row's referee margin was larger
    second_better_margin: int



def sign_test(first: int, second: int) -> float:
    """Two-sided exact binomial p of ``first`` against ``second`` pairs, each side equally
    likely to take a pair under the null hypothesis (ties left out beforehand)."""
    n, k = first + second, min(first, second)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def read_games(folder: Path) -> dict[int, GameResult]:
    """A match folder's finished games by number."""
    path = folder / "games.jsonl"
    try:
        return {r.game: r for r in (GameResult(**json.loads(line)) for line in path.read_text().splitlines())}
    except (OSError, ValueError, TypeError) as error:
        raise ValueError(f"{folder}: no readable games.jsonl ({error})") from None


def compare(first: Path, second: Path) -> Paired:
    """The game-by-game comparison of two match folders (see the module docstring)."""
    a, b = read_games(first), read_games(second)
    common = sorted(set(a) & set(b))
    for number in common:
        if (a[number].opening, a[number].first) != (b[number].opening, b[number].first):
            raise ValueError(f"game {number} started from another opening or colour in {first} and {second}")
    won_a = {n for n in common if a[n].winner == 0}
    won_b = {n for n in common if b[n].winner == 0}
    margins = [(game_margin(a[n]), game_margin(b[n])) for n in common]
    scored = [(x, y) for x, y in margins if x is not None and y is not None]
    return Paired(len(common), len(won_a), len(won_b), len(won_a - won_b), len(won_b - won_a),
                  sum(x > y for x, y in scored), sum(y > x for x, y in scored))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench paired", description=__doc__.split("\n")[0])
    parser.add_argument("first", type=Path, help="a klent match folder")
    parser.add_argument("second", type=Path, help="a klent match folder from the same openings")
    args = parser.parse_args(argv)
    try:
        result = compare(args.first, args.second)
    except ValueError as error:
        parser.error(str(error))
    if result.games == 0:
        parser.error("the two matches have no game number in common")
    print(f"{result.games} games both played: {args.first.name} won {result.first_wins}, "
          f"{args.second.name} won {result.second_wins}")
    print(f"won by one of them only: {result.only_first} by {args.first.name}, {result.only_second} by "
          f"{args.second.name} (two-sided sign test p = {sign_test(result.only_first, result.only_second):.3f})")
    if result.first_better_margin or result.second_better_margin:
        print(f"better referee margin: {result.first_better_margin} games {args.first.name}, "
              f"{result.second_better_margin} games {args.second.name} "
              f"(p = {sign_test(result.first_better_margin, result.second_better_margin):.3f})")
    return 0
