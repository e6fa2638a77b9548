"""A finished game (`GameResult`) and what a list of them says: the score from engine 1's view,
the distinct games, Go's score margins and dead stones, the results per opening.

Two engines that choose their moves deterministically replay the same game whenever they meet
with the same colours, and a Wilson interval over such repeats claims more than the games show.
Each result therefore carries a digest of its move sequence, and a summary counts the distinct
games.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field

from klent.matchplay.stats import MatchSummary
from klent.protocols.go_text import score_points


@dataclass
class GameResult:
    """One finished game; ``winner`` is the engine index (0 or 1) or None for a draw."""

    game: int
    first: int  # engine index that moved first (Black in Go, White in chess)
    winner: int | None
    reason: str
    result: str  # "B+3.5", "W+R", "1-0", "1/2-1/2", ...
    moves: int
    record: str  # file name of the SGF / PGN
    seconds_per_move: list[float] = field(default_factory=lambda: [0.0, 0.0])
    digest: str = ""  # of who moved first and the moves: equal digests are the same game
    opening: int | None = None  # number of the opening the game started from (--openings)
    dead_stones: list[int] | None = None  # Go, a scored game: each engine's stones the referee removed


def game_digest(first: int, moves: list[str]) -> str:
    """A short fingerprint of a game: which engine moved first and the moves in order."""
    text = f"{first} " + " ".join(moves)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def summarise(results: list[GameResult]) -> MatchSummary:
    """The games' score and intervals from engine 1's view."""
    wins = sum(r.winner == 0 for r in results)
    losses = sum(r.winner == 1 for r in results)
    return MatchSummary.from_counts(wins, losses, len(results) - wins - losses)


def distinct_games(results: list[GameResult]) -> int:
    """How many of the games differ in who moved first or in any move."""
    return len({r.digest for r in results})


def game_margin(result: GameResult) -> float | None:
    """Go: engine 1's referee score margin in points in one game; None when nobody counted the
    board (a forfeit or a resignation) or the game is not Go."""
    black_ahead = score_points(result.result)
    if black_ahead is None or (result.result == "0" and "referee score" not in result.reason):
        return None
    return black_ahead if result.first == 0 else -black_ahead


def score_margin(results: list[GameResult]) -> dict[str, float | int] | None:
    """Go: engine 1's mean referee score margin in points over the games the referee scored.

    Win rates say nothing while an engine loses every game; the margin still moves as it gets
    stronger (losing by 80 points, then by 20), so a learning run can be followed against a
    real opponent long before it wins.  None when no game was scored (chess, or all forfeits
    and resignations).
    """
    margins = [m for m in map(game_margin, results) if m is not None]
    if not margins:
        return None
    return {"games": len(margins), "mean": sum(margins) / len(margins)}


def dead_stones(results: list[GameResult]) -> dict[str, float | int | list[int]] | None:
    """Go: of the games the referee scored, how many ended with dead stones of engine 1 on the
    board (stones it left to be removed: a player that passes with a dead group there has
    misjudged the end of the game), and engine 1's dead stones per scored game; None when no
    game was scored with a dead-stone count."""
    counted = [r.dead_stones for r in results if r.dead_stones is not None]
    if not counted:
        return None
    return {
        "games": len(counted),
        "games_with_dead_stones": sum(1 for d in counted if d[0] > 0),
        "mean": sum(d[0] for d in counted) / len(counted),
    }


def per_opening(results: list[GameResult]) -> dict[str, dict[str, float]]:
    """Engine 1's games and score (a draw counts half) from each opening, by opening number."""
    openings: dict[str, list[GameResult]] = {}
    for r in results:
        openings.setdefault(str(r.opening), []).append(r)
    return {number: {"games": len(games), "score": summarise(games).score} for number, games in openings.items()}


def mean_seconds(results: list[GameResult]) -> list[float]:
    """Each engine's mean thinking time per move, over the games' own means."""
    return [sum(r.seconds_per_move[i] for r in results) / len(results) if results else 0.0 for i in (0, 1)]


def reasons(results: list[GameResult]) -> dict[str, int]:
    """How many games ended for each reason."""
    return dict(Counter(r.reason for r in results))


def format_result_line(result: GameResult, names: list[str]) -> str:
    """One line per finished game for the progress display."""
    winner = "draw" if result.winner is None else names[result.winner]
    return f"game {result.game}: {result.result} ({result.reason}), winner {winner}, {result.moves} moves"
