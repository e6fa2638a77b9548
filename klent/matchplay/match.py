"""Matches between two engines given as command lines: GTP engines for Go, UCI for chess,
Gardner chess and Animal Shogi.

`run_match` plays ``games`` games, the engines taking the first move in turn (engine 1 starts
game 1), in the arena of the game: `klent.matchplay.go_arena` (GNU Go referees the score) or
`klent.matchplay.uci_arena`, whose docstrings hold the rules.  Both engines start before the
first game: one that cannot (a misspelt program or flag) stops the match with an error, and no
game is recorded; an engine that crashes in a game loses it and is restarted for the next.

Every game is written to the output folder (`klent.matchplay.records`) as it finishes: its
record (SGF for Go, PGN otherwise), its line in ``games.jsonl``, and the summary so far (from
engine 1's view: wins, losses, draws, win rate with its Wilson 95% interval, Elo difference,
distinct games) in ``summary.json``.  A match of hundreds of games outlives a working session:
given the games of an interrupted one (`klent.matchplay.records.load_results`), `run_match`
plays the games it lacks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from klent.matchplay.config import MatchConfig
from klent.matchplay.go_arena import GoArena
from klent.matchplay.records import append_game, start_games, write_summary
from klent.matchplay.results import GameResult, summarise
from klent.matchplay.stats import MatchSummary
from klent.matchplay.uci_arena import UciArena
from klent.protocols.uci_variants import uci_variant


def run_match(
    config: MatchConfig,
    on_game: Callable[[GameResult, MatchSummary, list[str]], None] | None = None,
    previous: list[GameResult] | None = None,
    concurrency: int = 1,
) -> tuple[MatchSummary, list[GameResult]]:
    """Play the match; ``on_game(result, summary so far, engine names)`` follows every game.

    ``previous`` are the finished games of an interrupted match (`load_results`): play goes on
    with the games it lacks, each game's colours and opening those of its number, as if the
    match had never stopped.  ``concurrency`` games are played at once, each worker with its
    own engine processes (and referee); games finish out of order, and ``games.jsonl`` holds
    them in the order they finished.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    config.out.mkdir(parents=True, exist_ok=True)
    results = list(previous or [])
    done = {result.game for result in results}
    todo = iter([index for index in range(config.games) if index + 1 not in done])
    arenas: list[UciArena | GoArena] = []
    try:  # each may refuse an engine, before anything is written
        for _ in range(min(concurrency, config.games - len(done))):
            arenas.append(_arena(config))
    except BaseException:
        for play in arenas:
            play.close()
        raise
    if not results:
        start_games(config)
    lock = threading.Lock()
    failed = threading.Event()  # a worker's error stops the others after their current game

    def worker(play: UciArena | GoArena) -> None:
        try:
            while not failed.is_set():
                with lock:
                    index = next(todo, None)
                if index is None:
                    return
                result = play.game(index)
                with lock:
                    results.append(result)
                    append_game(config, result)
                    write_summary(config, play.names, sorted(results, key=lambda r: r.game))
                    if on_game is not None:
                        on_game(result, summarise(results), play.names)
        except BaseException:
            failed.set()
            raise
        finally:
            play.close()

    if len(arenas) == 1:
        worker(arenas[0])
    elif arenas:
        with ThreadPoolExecutor(len(arenas), thread_name_prefix="match") as pool:
            futures = [pool.submit(worker, play) for play in arenas]
        for future in futures:
            future.result()  # a worker's error (EngineError, ...) reaches the caller
    results.sort(key=lambda r: r.game)
    return summarise(results), results


def _arena(config: MatchConfig) -> UciArena | GoArena:
    """The arena of ``config``'s game, with engines of its own."""
    if uci_variant(config.game) is not None:
        return UciArena(config)
    return GoArena(config)
