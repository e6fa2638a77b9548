"""Matches between two engines given as command lines: GTP engines for Go, UCI for chess,
Gardner chess and Animal Shogi.

`run_match` plays ``games`` games, the engines taking the first move in turn (engine 1 starts
game 1).  Every game is written as a record (SGF for Go, PGN otherwise) in the output folder,
one JSON line per finished game goes to ``games.jsonl``, and the summary (from engine 1's
view: wins, losses, draws, win rate with its Wilson 95% interval, Elo difference) to
``summary.json``.

Rules of the arena:

* Go: our own rules (`klent.engine.games.go`: positional superko, suicide illegal) judge every move;
  GNU Go, given every move as well, is the referee of the score (``final_score``, Chinese
  area counting, its own dead-stone judgement) when the game ends by two passes or by the move
  cap.  A move the referee refuses, or the opponent refuses, is reported in the game's reason.
* An illegal or unreadable move, a crash, a protocol failure, or a move slower than the time
  per move plus ``grace`` loses the game for the engine at fault.  ``resign`` loses.
* Each engine gets ``time_settings 0 T 1`` (T seconds per move, Canadian byo-yomi of one stone)
  and a ``time_left`` before each move; UCI engines get ``go movetime``.  A crashed engine is
  restarted for the next game.  Both engines start before the first game: one that cannot
  (a misspelt program or flag) stops the match with an error, and no game is recorded.
* A UCI engine may be given a search limit of its own instead (``uci_go``: ``depth 2``,
  ``nodes 400``): a fixed-depth or fixed-node opponent plays the same strength however loaded
  the machine is, which a time per move does not (the anchor of `klent.training.anchor` relies on
  it).  The time per move then only bounds how long such a move may take.
* UCI games: our rules (`klent.engine.games`) judge every move and end the game, with the draws an
  engine leaves to the arbiter (threefold repetition and the fifty-move rule claimed, the move
  cap, counted from the end of the opening, adjudicated).  Gardner chess and Animal Shogi are
  Fairy-Stockfish's variants ``gardner`` and ``dobutsu``: both engines are set to the variant
  (``setoption name UCI_Variant``; an engine that does not offer it cannot play).  The records
  are PGN: in SAN for chess (python-chess), with the moves in UCI text for the variants.

Two engines that choose their moves deterministically replay the same game whenever they meet
with the same colours, and a Wilson interval over such repeats claims more than the games show.
Each result therefore carries a digest of its move sequence, and the summary counts the
distinct games.

A match of hundreds of games outlives a working session.  ``summary.json`` is rewritten after
every game, so an interrupted match still tells where it stood, and `load_results` reads an
interrupted match back so that `run_match` can play the games it lacks; it refuses a folder
whose match was played with other settings, since mixing them would make one summary of two
different matches.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

import klent.engine.games
from klent.engine.files import write_text_atomically
from klent.engine.games.base import GameFormatError, IllegalMoveError, State
from klent.engine.games.board_games import PieceState
from klent.engine.games.chess import ChessGame, ChessState
from klent.engine.games.go import GoGame
from klent.engine.games.sgf import write_sgf
from klent.matchplay.engine_process import (
    EngineCrashed,
    EngineError,
    EngineProcess,
    EngineTimeout,
    GtpFailure,
    GtpProcess,
    UciProcess,
)
from klent.matchplay.stats import MatchSummary
from klent.protocols.go_text import score_points
from klent.protocols.uci import uci_variant

DEFAULT_MOVE_TIMEOUT = 60.0  # seconds per move when no time per move is set
E = TypeVar("E", bound=EngineProcess)


GO_LIMITS = ("depth", "nodes", "movetime")  # the `MatchConfig.uci_go` words, each with a count


def go_limits(text: str) -> dict[str, int]:
    """The limits of a UCI ``go`` argument string (``"depth 2 nodes 400"`` -> ``{"depth": 2,
    "nodes": 400}``); ``""`` is none.  Raises ValueError on any other word or a count that is
    not a positive integer: an engine would ignore such a word and search without end."""
    words = text.split()
    pairs = list(zip(words[::2], words[1::2]))
    if len(words) % 2 or any(name not in GO_LIMITS or not count.isdigit() or int(count) < 1 for name, count in pairs):
        raise ValueError(f"UCI search limit {text!r} is not {' / '.join(f'{w} N' for w in GO_LIMITS)} (N >= 1)")
    return {name: int(count) for name, count in pairs}


def check_first_opening(first: int, count: int) -> None:
    """ValueError unless ``first`` (`MatchConfig.first_opening`) numbers one of ``count`` openings;
    0 is also the default without openings."""
    if first and not 0 < first < count:
        raise ValueError(f"the first opening must be from 0 to {count - 1}, not {first}" if count
                         else f"a first opening ({first}) needs --openings")


@dataclass(frozen=True)
class MatchConfig:
    engines: tuple[str, str]
    game: str = "go9"
    games: int = 2
    out: Path = Path("match")
    referee: str = "gnugo --mode gtp --chinese-rules"
    time_per_move: float | None = None
    grace: float = 1.0  # seconds a move may exceed the time per move (pipes, process lag)
    max_moves: int | None = None  # moves (plies) before adjudication; None: the game's own cap
    komi: float = 7.5
    # UCI options per engine (e.g. {"Skill Level": "0"}), set once each engine has started.
    uci_options: tuple[dict[str, str], dict[str, str]] = ({}, {})
    # UCI search limit per engine, the arguments of its ``go`` ("depth 2", "nodes 400"; see
    # `go_limits`); "": ``go movetime`` of the time per move.
    uci_go: tuple[str, str] = ("", "")
    # Start positions (`read_openings`): games 2k and 2k + 1 both start from opening
    # first_opening + k (cycling), engine 1 moving first in one and engine 2 in the other.
    # Empty: the initial position.  A first opening past 0 goes on with a match that another
    # run (another machine, a session that ended) played from the file's start, as
    # cutechess-cli's ``-openings start=N`` does: its games start where that one stopped, and
    # each game's record keeps the file's opening number, so the two runs' games add up.
    openings: tuple[str, ...] = ()
    first_opening: int = 0

    def __post_init__(self) -> None:
        for limit in self.uci_go:
            go_limits(limit)  # a misspelt limit fails now, not as a hung engine mid-match
        check_first_opening(self.first_opening, len(self.openings))

    def move_timeout(self, who: int) -> float:
        """Seconds a UCI engine's move may take before it loses: the time per move (1 s if
        none) plus the grace, or with a search limit of its own the time per move (else
        `DEFAULT_MOVE_TIMEOUT`) plus the grace."""
        if self.uci_go[who]:
            return (self.time_per_move or DEFAULT_MOVE_TIMEOUT) + self.grace
        return (self.time_per_move or 1.0) + self.grace

    def opening(self, index: int) -> tuple[int, str] | None:
        """(opening number, its text) of game ``index`` (0-based), or None without openings."""
        if not self.openings:
            return None
        number = (self.first_opening + index // 2) % len(self.openings)
        return number, self.openings[number]


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


class _Clock:
    """Thinking time per engine (to report seconds per move)."""

    def __init__(self) -> None:
        self.total = [0.0, 0.0]
        self.moves = [0, 0]

    def add(self, who: int, seconds: float) -> None:
        self.total[who] += seconds
        self.moves[who] += 1

    def per_move(self) -> list[float]:
        return [t / m if m else 0.0 for t, m in zip(self.total, self.moves)]


class MatchFolderError(Exception):
    """The output folder cannot hold this match (a resume that does not fit what is there)."""


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
    arenas: list[_UciArena | _GoArena] = []
    try:  # each may refuse an engine, before anything is written
        for _ in range(min(concurrency, config.games - len(done))):
            arenas.append(_arena(config))
    except BaseException:
        for play in arenas:
            play.close()
        raise
    log_path = config.out / "games.jsonl"
    if not results:
        log_path.write_text("")
    lock = threading.Lock()
    failed = threading.Event()  # a worker's error stops the others after their current game

    def worker(play: _UciArena | _GoArena) -> None:
        try:
            while not failed.is_set():
                with lock:
                    index = next(todo, None)
                if index is None:
                    return
                result = play.game(index)
                with lock:
                    results.append(result)
                    with open(log_path, "a", encoding="utf-8") as log:
                        log.write(json.dumps(asdict(result)) + "\n")
                    summary = summarise(results)
                    _write_summary(config, play.names, sorted(results, key=lambda r: r.game), summary)
                    if on_game is not None:
                        on_game(result, summary, play.names)
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


def _arena(config: MatchConfig) -> _UciArena | _GoArena:
    """The arena of ``config``'s game, with engines of its own."""
    if uci_variant(config.game) is not None:
        return _UciArena(config)
    return _GoArena(config)


def _config_json(config: MatchConfig) -> dict:
    """The settings as ``summary.json`` records them (tuples as lists), to compare on resume."""
    return json.loads(json.dumps({k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()}))


def _write_summary(config: MatchConfig, names: list[str], results: list[GameResult], summary: MatchSummary) -> None:
    report = {
        "config": _config_json(config),
        "engine_names": names,
        "summary": summary.to_json(),
        "seconds_per_move": _mean_seconds(results),
        "reasons": _reasons(results),
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
    write_text_atomically(config.out / "summary.json", json.dumps(report, indent=2) + "\n")


# What may differ between the folders of one row played in parts (in other sessions, or from
# further openings with ``--first-opening``): the rest of their settings is equal.
PART_FIELDS = ("games", "out", "openings", "first_opening")


def row_settings(config: dict) -> str:
    """A recorded configuration (``summary.json``'s ``config``) without PART_FIELDS, as canonical
    JSON: folders with equal row settings are parts of one row, the same two engines playing
    the same way, so their games pool (`klent plot --strength`, `klent bench paired`)."""
    return json.dumps({k: v for k, v in config.items() if k not in PART_FIELDS}, sort_keys=True)


def load_results(config: MatchConfig) -> list[GameResult]:
    """The finished games of the interrupted match in ``config.out``, to be resumed.

    The settings recorded in its ``summary.json`` must equal ``config`` in everything but the
    number of games, which may grow; each game number (from 1 to ``config.games``) may appear
    once, in any order (concurrent games finish out of order), and some must be missing.
    """
    log_path = config.out / "games.jsonl"
    if not log_path.is_file():
        raise MatchFolderError(f"nothing to resume: {log_path} does not exist")
    summary_path = config.out / "summary.json"
    if summary_path.is_file():
        try:
            recorded = json.loads(summary_path.read_text(encoding="utf-8"))["config"]
        except (ValueError, KeyError) as error:
            raise MatchFolderError(f"{summary_path} is not a match summary: {error}") from None
        wanted = _config_json(config)
        # A setting newer than the folder's match had its default there.
        defaults = _config_json(MatchConfig(engines=config.engines))
        # The folder may be named another way (relative, absolute); the games may grow.
        differing = sorted(k for k in wanted
                           if k not in ("games", "out") and recorded.get(k, defaults[k]) != wanted[k])
        if differing:
            raise MatchFolderError(f"{config.out} holds a match with other settings ({', '.join(differing)}); "
                                   "resume it with the same ones or choose another --out")
    results: list[GameResult] = []
    for number, line in enumerate(log_path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            result = GameResult(**json.loads(line))
        except (ValueError, TypeError) as error:
            raise MatchFolderError(f"{log_path} line {number} is not a game result: {error}") from None
        if not 1 <= result.game <= config.games or any(r.game == result.game for r in results):
            raise MatchFolderError(f"{log_path} line {number} is game {result.game}: a repeat, or beyond "
                                   f"the {config.games} games asked for")
        if not result.digest:
            raise MatchFolderError(f"{log_path} line {number} has no digest (an older klent wrote it)")
        results.append(result)
    if len(results) >= config.games:
        raise MatchFolderError(f"{config.out} already has {len(results)} games; ask for more with --games")
    return results


def summarise(results: list[GameResult]) -> MatchSummary:
    wins = sum(r.winner == 0 for r in results)
    losses = sum(r.winner == 1 for r in results)
    return MatchSummary.from_counts(wins, losses, len(results) - wins - losses)


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


def game_margin(result: GameResult) -> float | None:
    """Go: engine 1's referee score margin in points in one game; None when nobody counted the
    board (a forfeit or a resignation) or the game is not Go."""
    black_ahead = score_points(result.result)
    if black_ahead is None or (result.result == "0" and "referee score" not in result.reason):
        return None
    return black_ahead if result.first == 0 else -black_ahead


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
    table: dict[str, dict[str, float]] = {}
    for r in results:
        row = table.setdefault(str(r.opening), {"games": 0, "score": 0.0})
        row["games"] += 1
        row["score"] += 1.0 if r.winner == 0 else 0.5 if r.winner is None else 0.0
    return table


def read_openings(path: str | Path, game: str) -> tuple[str, ...]:
    """The openings in a file, one per line, checked against the rules now (not mid-match).

    Chess: an EPD/FEN line, optionally followed by ``moves`` and UCI moves (``FEN moves e2e4
    e7e5``), or a PGN file of games whose moves are the openings.  Go: a line of moves in GTP
    vertices, Black first (``C3 G7 pass``).  Blank lines and lines starting with ``#`` are
    skipped.  Raises ValueError naming the first bad line.
    """
    text = Path(path).read_text(encoding="utf-8")
    if game == "chess" and str(path).lower().endswith(".pgn"):
        return _pgn_openings(text, path)
    openings = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            opening_state(game, line)
        except (GameFormatError, IllegalMoveError, ValueError) as error:
            raise ValueError(f"{path} line {number}: {error}") from None
        openings.append(line)
    if not openings:
        raise ValueError(f"{path} holds no openings")
    return tuple(openings)


def _pgn_openings(text: str, path: str | Path) -> tuple[str, ...]:
    import io

    import chess.pgn

    openings: list[str] = []
    handle = io.StringIO(text)
    while (parsed := chess.pgn.read_game(handle)) is not None:
        if parsed.errors:
            raise ValueError(f"{path}: game {len(openings) + 1}: {parsed.errors[0]}")
        moves = " ".join(move.uci() for move in parsed.mainline_moves())
        openings.append(f"{parsed.board().fen()} moves {moves}".rstrip() if moves else parsed.board().fen())
    if not openings:
        raise ValueError(f"{path} holds no games")
    return tuple(openings)


def opening_state(game: str, opening: str) -> State:
    """The position an opening line stands for: a `ChessState` or a Go state."""
    if game == "chess":
        return chess_opening(opening)
    rules = klent.engine.games.get(game, max_moves=None)
    state = rules.initial_state()
    for text in opening.split():
        state = state.play(rules.text_to_action(state, text))
    return state


def chess_opening(opening: str, max_moves: int | None = None) -> ChessState:
    """The chess position of an opening line: a FEN (or an EPD's four fields), then optionally
    `` moves `` and the moves in UCI or SAN; ``max_moves`` caps the game from the FEN on."""
    fen, _, moves = opening.partition(" moves ")
    fields = fen.split()
    fen = " ".join(fields[:4] + ["0", "1"]) if len(fields) == 4 else fen  # EPD: no counters
    return ChessGame(max_moves=max_moves).from_fen(fen, moves.split())


def distinct_games(results: list[GameResult]) -> int:
    """How many of the games differ in who moved first or in any move."""
    return len({r.digest for r in results})


def _mean_seconds(results: list[GameResult]) -> list[float]:
    return [
        sum(r.seconds_per_move[i] for r in results) / len(results) if results else 0.0
        for i in (0, 1)
    ]


def _reasons(results: list[GameResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.reason] = counts.get(r.reason, 0) + 1
    return counts


# --- Go ---------------------------------------------------------------------------------------


class _ProcessArena(Generic[E]):
    """Two engines as our own protocol processes, each started on first use, kept across
    games and restarted after it failed, its stderr appended to ``engine<N>.stderr.log``."""

    def __init__(self, config: MatchConfig) -> None:
        self.config = config
        self.logs = [open(config.out / f"engine{i + 1}.stderr.log", "a", encoding="utf-8") for i in (0, 1)]
        self.engines: list[E | None] = [None, None]
        self.names = [f"engine{who + 1}" for who in (0, 1)]  # each engine's own, once it has started

    def _start(self, who: int) -> E:
        """A new process of engine ``who``, ready to play, its name in ``names[who]``."""
        raise NotImplementedError

    def _start_both(self) -> None:
        """Start both engines before any game: one that cannot start or answer (a misspelt
        command or flag, a missing UCI variant or option) fails the match in one error, where
        a game would only record a forfeit, and a whole match of them, for it.  An engine that
        fails later, in a game, forfeits that game and restarts for the next."""
        for who in (0, 1):
            try:
                self._engine(who)
            except EngineError as error:
                self.close()
                raise EngineError(f"engine {who + 1}: {error}") from None

    def _engine(self, who: int) -> E:
        process = self.engines[who]
        if process is None or process.process.poll() is not None:
            process = self.engines[who] = self._start(who)
        return process

    def _drop(self, who: int) -> None:
        """Stop an engine that failed (it may still be thinking); the next game restarts it."""
        process = self.engines[who]
        self.engines[who] = None
        if process is not None:
            process.process.kill()
            process.close(timeout=1.0)

    def close(self) -> None:
        for process in self.engines:
            if process is not None:
                process.close()
        for log in self.logs:
            log.close()


class _GoArena(_ProcessArena[GtpProcess]):
    """Two GTP engines and the referee, kept across games (restarted after a crash)."""

    def __init__(self, config: MatchConfig) -> None:
        rules = klent.engine.games.get(config.game, komi=config.komi)
        if not isinstance(rules, GoGame):
            raise ValueError(f"{config.game!r} is not a Go game")
        if any(config.uci_go):
            raise ValueError("UCI search limits (uci_go) apply to UCI games, not to Go")
        super().__init__(config)
        # The match's move cap is the game's, so a capped game is an ordinary truncated one.
        self.rules = rules if config.max_moves is None else GoGame(rules.size, rules.komi, config.max_moves)
        self.referee = GtpProcess(config.referee)
        self._start_both()

    def _start(self, who: int) -> GtpProcess:
        process = GtpProcess(self.config.engines[who], stderr=self.logs[who])
        try:
            self.names[who] = self._name(process) or self.names[who]
        except EngineError:
            process.close(timeout=1.0)
            raise
        return process

    @staticmethod
    def _name(process: GtpProcess) -> str:
        """The engine's ``name`` and ``version`` (either may be missing); its first answer, so a
        process that cannot play GTP fails here."""
        words = []
        for command in ("name", "version"):
            try:
                words.append(process.send(command))
            except GtpFailure:
                pass
        return " ".join(words).strip()

    def close(self) -> None:
        super().close()
        self.referee.close()

    def game(self, index: int) -> GameResult:
        config = self.config
        rules = self.rules
        first = index % 2
        seat = (first, 1 - first)  # seat[colour] = engine index
        clock = _Clock()
        state = rules.initial_state()
        timeout = (config.time_per_move + config.grace) if config.time_per_move else DEFAULT_MOVE_TIMEOUT
        opening = config.opening(index)

        def finish(winner: int | None, reason: str, result: str, dead: list[int] | None = None) -> GameResult:
            name = f"game-{index + 1:03d}.sgf"
            text = write_sgf(state, result=result, black=self.names[seat[0]], white=self.names[seat[1]])
            write_text_atomically(config.out / name, text)
            digest = game_digest(first, [str(action) for action in state.moves()])
            return GameResult(index + 1, first, winner, reason, result, state.move_number, name,
                              clock.per_move(), digest, None if opening is None else opening[0], dead)

        def forfeit(colour: int, reason: str, failed: bool = False) -> GameResult:
            if failed:
                self._drop(seat[colour])
            return finish(seat[1 - colour], reason, f"{'WB'[colour]}+F")

        # Set up both engines and the referee; an engine failing here forfeits.
        for colour in (0, 1):
            try:
                self._setup(self._engine(seat[colour]), timed=True)
            except EngineError as error:
                return forfeit(colour, f"setup failed: {_short(error)}", failed=True)
        self._setup(self.referee, timed=False)
        # The opening's moves go to everyone as if played; an engine refusing one forfeits.
        for text in [] if opening is None else opening[1].split():
            colour = state.to_play
            action = rules.text_to_action(state, text)
            state = state.play(action)
            vertex = rules.vertex(action)
            self.referee.send(f"play {'bw'[colour]} {vertex}", timeout=30.0)
            for who in (0, 1):
                try:
                    self._engine(seat[who]).send(f"play {'bw'[colour]} {vertex}", timeout=timeout)
                except EngineError as error:
                    return forfeit(who, f"refused the opening's {vertex}: {_short(error)}",
                                   failed=not isinstance(error, GtpFailure))

        while not state.is_terminal:
            colour = state.to_play
            mover = self._engine(seat[colour])
            colour_word = "bw"[colour]
            if config.time_per_move:
                try:
                    mover.send(f"time_left {colour_word} {config.time_per_move:g} 1", timeout=timeout)
                except GtpFailure:
                    pass  # time_left is optional for an engine
                except EngineError as error:
                    return forfeit(colour, _short(error), failed=True)
            start = time.monotonic()
            try:
                reply = mover.send(f"genmove {colour_word}", timeout=timeout).strip().lower()
            except EngineTimeout:
                return forfeit(colour, "timeout", failed=True)
            except EngineCrashed:
                return forfeit(colour, "crash", failed=True)
            except EngineError as error:
                return forfeit(colour, f"genmove failed: {_short(error)}", failed=not isinstance(error, GtpFailure))
            elapsed = time.monotonic() - start
            clock.add(seat[colour], elapsed)
            if config.time_per_move and elapsed > config.time_per_move + config.grace:
                return forfeit(colour, f"time: {elapsed:.2f}s for one move")
            if reply == "resign":
                return finish(seat[1 - colour], "resignation", f"{'WB'[colour]}+R")
            try:
                action = rules.text_to_action(state, reply)
            except (GameFormatError, IllegalMoveError) as error:
                return forfeit(colour, f"illegal move {reply!r}: {error}")
            state = state.play(action)
            vertex = rules.vertex(action)
            try:
                self.referee.send(f"play {colour_word} {vertex}", timeout=30.0)
            except GtpFailure:
                return forfeit(colour, f"referee refused {vertex}")
            try:
                self._engine(seat[1 - colour]).send(f"play {colour_word} {vertex}", timeout=timeout)
            except EngineError as error:
                return forfeit(1 - colour, f"refused the opponent's {vertex}: {_short(error)}",
                               failed=not isinstance(error, GtpFailure))
        score = self.referee.send("final_score", timeout=120.0).strip()
        winner = None if score == "0" else seat[0] if score.upper().startswith("B") else seat[1]
        reason = "move cap" if state.is_truncated else "two passes"
        dead = [0, 0]  # per engine: its stones the referee calls dead
        board = state.board().ravel()
        for vertex in self.referee.send("final_status_list dead", timeout=120.0).split():
            dead[seat[0] if board[rules.parse_vertex(vertex)] == 1 else seat[1]] += 1
        return finish(winner, f"{reason}, referee score", score, dead)

    def _setup(self, process: GtpProcess, timed: bool) -> None:
        process.send(f"boardsize {self.rules.size}")
        process.send("clear_board")
        process.send(f"komi {self.rules.komi:g}")
        if timed and self.config.time_per_move:
            try:
                process.send(f"time_settings 0 {self.config.time_per_move:g} 1")
            except GtpFailure:
                pass  # an engine without a clock still has to answer in time


def _short(error: Exception) -> str:
    return str(error).splitlines()[0][:200]


# --- UCI games: chess, Gardner chess, Animal Shogi -------------------------------------------


class _UciArena(_ProcessArena[UciProcess]):
    """Two UCI engines playing chess or one of Fairy-Stockfish's variants (each engine set to
    it by ``UCI_Variant``): our rules judge every move and end the game (chess with draws by
    threefold repetition and the fifty-move rule claimed, as an arbiter would), and each engine
    is told the whole game at every move (``position ... moves ...``, then ``go``).  The move
    cap counts the moves played after the opening."""

    def __init__(self, config: MatchConfig) -> None:
        if uci_variant(config.game) is None:
            raise ValueError(f"{config.game!r} is no UCI game")
        # Fairy-Stockfish's variant; chess engines play chess without being told (None)
        self.variant = None if config.game == "chess" else uci_variant(config.game)
        super().__init__(config)
        self.move_time = config.time_per_move or 1.0
        self._start_both()

    def _start(self, who: int) -> UciProcess:
        process = UciProcess(self.config.engines[who], stderr=self.logs[who])
        variant = {} if self.variant is None else {"UCI_Variant": self.variant}
        try:
            self.names[who] = process.start({**self.config.uci_options[who], **variant})
        except EngineError:
            process.close(timeout=1.0)
            raise
        return process

    def _start_position(self, opening: str | None) -> tuple[PieceState, str, list[str]]:
        """The state after ``opening`` (its move cap counting from there), the ``position``
        command's start (``startpos`` or ``fen ...``) and the opening's moves."""
        if opening is not None and self.variant is None:  # chess: a FEN, then maybe moves
            played = opening.partition(" moves ")[2].split()
            position = chess_opening(opening, **self._cap(len(played)))
            return position, f"fen {position.board.root().fen()}", played
        played = [] if opening is None else opening.split()
        rules = klent.engine.games.get(self.config.game, **self._cap(len(played)))
        state = rules.initial_state()
        for text in played:
            state = state.play(rules.text_to_action(state, text))
        assert isinstance(state, PieceState)
        return state, "startpos", played

    def _cap(self, opening_moves: int) -> dict[str, int]:
        """The rules' move cap for a game whose opening has ``opening_moves`` moves (none
        given: the game's own)."""
        limit = self.config.max_moves
        return {} if limit is None else {"max_moves": limit + opening_moves}

    def game(self, index: int) -> GameResult:
        config = self.config
        first = index % 2
        seat = (first, 1 - first)  # seat[colour] = engine index; colour 0 moves first
        clock = _Clock()
        opening = config.opening(index)
        state: State
        state, start, moves = self._start_position(None if opening is None else opening[1])

        def finish(winner: int | None, reason: str) -> GameResult:
            result = "1/2-1/2" if winner is None else "1-0" if winner == seat[0] else "0-1"
            tags = {"Event": "klent match", "Round": str(index + 1), "White": self.names[seat[0]],
                    "Black": self.names[seat[1]], "Result": result, "Termination": reason}
            name = f"game-{index + 1:03d}.pgn"
            write_text_atomically(config.out / name, self._record(state, moves, tags))
            digest = game_digest(first, moves if start == "startpos" else [start, *moves])
            return GameResult(index + 1, first, winner, reason, result, len(moves), name, clock.per_move(),
                              digest, None if opening is None else opening[0])

        for who in (0, 1):
            try:
                self._engine(who).new_game()
            except EngineError as error:
                self._drop(who)
                return finish(1 - who, f"setup failed: {_short(error)}")
        go = [f"go {limit or f'movetime {round(self.move_time * 1000)}'}" for limit in config.uci_go]
        while not state.is_terminal:
            who = seat[state.to_play]
            begun = time.monotonic()
            try:
                position = f"position {start}" + (" moves " + " ".join(moves) if moves else "")
                reply = self._engine(who).best_move(position, go[who], timeout=config.move_timeout(who))
            except EngineError as error:
                self._drop(who)
                return finish(1 - who, "timeout" if isinstance(error, EngineTimeout) else "crash")
            clock.add(who, time.monotonic() - begun)
            try:
                state = state.play(state.game.text_to_action(state, reply))
            except (GameFormatError, IllegalMoveError):
                return finish(1 - who, f"illegal move {reply!r}")
            moves.append(reply)
        assert isinstance(state, PieceState)
        outcome = state.outcome()
        winner = None if outcome == 0 else seat[0] if outcome > 0 else seat[1]
        reason = "move cap (adjudicated draw)" if state.is_truncated else str(state.termination).replace("_", " ")
        return finish(winner, reason)

    def _record(self, state: State, moves: list[str], tags: dict[str, str]) -> str:
        """The game as PGN: python-chess's for chess (moves in SAN, a ``FEN`` tag for a set-up
        start), else the moves in UCI text under a ``Variant`` tag."""
        if isinstance(state, ChessState):
            import chess.pgn

            game = chess.pgn.Game.from_board(state.board)
            game.headers.update(tags)
            return str(game) + "\n"
        tags = {"Variant": str(self.variant), **tags}
        numbered = (f"{i // 2 + 1}. {move}" if i % 2 == 0 else move for i, move in enumerate(moves))
        text = "".join('[{} "{}"]\n'.format(tag, str(value).replace('"', "'")) for tag, value in tags.items())
        return f"{text}\n{' '.join([*numbered, tags['Result']])}\n"


def format_result_line(result: GameResult, names: list[str]) -> str:
    """One line per finished game for the progress display."""
    winner = "draw" if result.winner is None else names[result.winner]
    return f"game {result.game}: {result.result} ({result.reason}), winner {winner}, {result.moves} moves"
