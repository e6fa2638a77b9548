"""The match folder, read and written here only: ``games.jsonl`` (one `GameResult` a line, in
the order the games finished), ``summary.json`` (the settings, the engines' names and what the
games say) and a record per game (SGF or PGN, written by the arenas).

``summary.json`` is rewritten after every game, so an interrupted match still tells where it
stood, and `load_results` reads an interrupted match back so that it can be resumed; it refuses
a folder whose match was played with other settings, since mixing them would make one summary
of two different matches.  A row played in parts (in other sessions, or from further openings
with ``--first-opening``) is several folders whose settings are equal but for `PART_FIELDS`:
`group_rows` finds them, and their games pool (`klent plot --strength`, `klent bench paired`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from klent.engine.files import parse_json, read_json, read_text, write_text_atomically
from klent.matchplay.config import MatchConfig
from klent.matchplay.results import (
    GameResult,
    dead_stones,
    distinct_games,
    mean_seconds,
    per_opening,
    reasons,
    score_margin,
    summarise,
)

GAMES = "games.jsonl"
SUMMARY = "summary.json"
# What may differ between the folders of one row played in parts: the rest of their settings is equal.
PART_FIELDS = ("games", "out", "openings", "first_opening")
# The largest games.jsonl read: a line is about 300 bytes (under 1 KB with a long chess opening),
# so a match of 10,000 games is a few MB and this is room for 200,000.
MAX_GAMES_BYTES = 64 << 20
# The largest summary.json read: a real one is 2 KB, a few MB with per-opening scores of
# 10,000 openings.
MAX_SUMMARY_BYTES = 16 << 20


class MatchFolderError(ValueError):
    """A folder that holds no readable match, or cannot hold this one (a resume that does not
    fit what is there)."""


def config_json(config: MatchConfig) -> dict:
    """The settings as ``summary.json`` records them (tuples as lists), to compare on resume."""
    return json.loads(json.dumps({k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()}))


def start_games(config: MatchConfig) -> None:
    """An empty ``games.jsonl`` for a match that starts afresh."""
    (config.out / GAMES).write_text("")


def append_game(config: MatchConfig, result: GameResult) -> None:
    """One finished game's line at the end of ``games.jsonl``."""
    with open(config.out / GAMES, "a", encoding="utf-8") as log:
        log.write(json.dumps(asdict(result)) + "\n")


def write_summary(config: MatchConfig, names: list[str], results: list[GameResult]) -> None:
    """``summary.json`` of the games so far (in game order), from engine 1's view."""
    report = {
        "config": config_json(config),
        "engine_names": names,
        "summary": summarise(results).to_json(),
        "seconds_per_move": mean_seconds(results),
        "reasons": reasons(results),
        "distinct_games": distinct_games(results),
    }
    if config.openings:
        report["per_opening"] = per_opening(results)
    margin = score_margin(results)
    if margin is not None:
        report["score_margin"] = margin
    dead = dead_stones(results)
    if dead is not None:
        report["dead_stones"] = dead
    write_text_atomically(config.out / SUMMARY, json.dumps(report, indent=2) + "\n")


def read_results(folder: Path) -> list[GameResult]:
    """A match folder's finished games, in the order they finished."""
    path = folder / GAMES
    try:
        lines = read_text(path, MAX_GAMES_BYTES).splitlines()
    except OSError as error:
        raise MatchFolderError(f"{folder}: not a klent match folder: no readable {GAMES} ({error})") from None
    except ValueError as error:
        raise MatchFolderError(str(error)) from None
    results = []
    for number, line in enumerate(lines, start=1):
        try:
            results.append(GameResult(**parse_json(line)))
        except (ValueError, TypeError) as error:
            raise MatchFolderError(f"{path} line {number} is not a game result: {error}") from None
    return results


def recorded_config(folder: Path) -> dict | None:
    """The settings a folder's ``summary.json`` records, or None without one."""
    path = folder / SUMMARY
    if not path.is_file():
        return None
    try:
        summary = read_json(path, MAX_SUMMARY_BYTES)
    except OSError as error:
        raise MatchFolderError(f"{path} is not a match summary ({error})") from None
    except ValueError as error:
        raise MatchFolderError(str(error)) from None
    config = summary.get("config") if isinstance(summary, dict) else None
    if not isinstance(config, dict):
        raise MatchFolderError(f"{path} is not a match summary (no config)")
    return config


def load_results(config: MatchConfig) -> list[GameResult]:
    """The finished games of the interrupted match in ``config.out``, to be resumed.

    The settings recorded in its ``summary.json`` must equal ``config`` in everything but the
    number of games, which may grow; each game number (from 1 to ``config.games``) may appear
    once, in any order (concurrent games finish out of order), and some must be missing.
    """
    log_path = config.out / GAMES
    if not log_path.is_file():
        raise MatchFolderError(f"nothing to resume: {log_path} does not exist")
    recorded = recorded_config(config.out)
    if recorded is not None:
        wanted = config_json(config)
        # A setting newer than the folder's match had its default there.
        defaults = config_json(MatchConfig(engines=config.engines))
        # The folder may be named another way (relative, absolute); the games may grow.
        differing = sorted(k for k in wanted
                           if k not in ("games", "out") and recorded.get(k, defaults[k]) != wanted[k])
        if differing:
            raise MatchFolderError(f"{config.out} holds a match with other settings ({', '.join(differing)}); "
                                   "resume it with the same ones or choose another --out")
    results: list[GameResult] = []
    for number, result in enumerate(read_results(config.out), start=1):
        if not 1 <= result.game <= config.games or any(r.game == result.game for r in results):
            raise MatchFolderError(f"{log_path} line {number} is game {result.game}: a repeat, or beyond "
                                   f"the {config.games} games asked for")
        if not result.digest:
            raise MatchFolderError(f"{log_path} line {number} has no digest (an older klent wrote it)")
        results.append(result)
    if len(results) >= config.games:
        raise MatchFolderError(f"{config.out} already has {len(results)} games; ask for more with --games")
    return results


def row_settings(config: dict) -> str:
    """A recorded configuration (``summary.json``'s ``config``) without PART_FIELDS, as canonical
    JSON: folders with equal row settings are parts of one row, the same two engines playing
    the same way, so their games pool."""
    return json.dumps({k: v for k, v in config.items() if k not in PART_FIELDS}, sort_keys=True)


def group_rows(folders: Sequence[Path]) -> list[list[Path]]:
    """Match folders grouped into rows by the `row_settings` their ``summary.json`` records, in
    the order of each row's first folder."""
    rows: dict[str, list[Path]] = {}
    for folder in folders:
        config = recorded_config(folder)
        if config is None:
            raise MatchFolderError(f"{folder}: no {SUMMARY}, so it cannot be grouped with other folders into a row")
        rows.setdefault(row_settings(config), []).append(folder)
    return list(rows.values())
