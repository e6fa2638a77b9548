"""UCI (Universal Chess Interface) front end: text commands in, `Player` calls, text out.

Chess GUIs (cutechess, Arena, BanksiaGUI, Nibbler) and the lichess-bot bridge drive engines
over UCI and expect the conventions Stockfish and Leela Chess Zero follow; this module follows
them.  The main thread reads commands and never waits for a search: a ``go`` starts a search
thread, so ``stop``, ``ponderhit``, ``isready`` and ``quit`` are answered while it thinks, and
``stop`` or ``quit`` end any search within one network batch.  A ``go`` that comes while a
search still runs (after a ponder miss a GUI sends ``stop``, ``position`` and ``go`` at once)
is queued with its position and clock and starts when that search has answered its
``bestmove``: every ``go`` gets one ``bestmove``, in order, and a ``position`` sent during a
search is the next ``go``'s.  A search queued behind one that would never end by itself
(``infinite``, or pondering) stops that one first: the GUI forgot ``stop``.  ``go infinite``
and ``go ponder`` answer only after ``stop`` / ``ponderhit``, also where there is no move to
search (a finished game: ``bestmove (none)``).  Nothing the GUI sends can end the process: a
malformed or unknown command, or a line longer than `MAX_LINE` bytes, is answered with
``info string <reason>`` and the engine keeps its state (an illegal move in ``position`` keeps
the previous position).

Beside chess it plays Gardner chess and Animal Shogi, chosen as Fairy-Stockfish chooses its
variants, by ``setoption name UCI_Variant value gardner`` (or ``dobutsu``), in Fairy-Stockfish's
FENs and move text (the games' own notation: "a4a5q", "b3b4+", "C@b2"), so that GUIs and
``klent match`` can pit klent against Fairy-Stockfish there.  A switch starts from the
variant's initial position and, unless another model was chosen, loads its shipped model
(``weights/<game>.onnx``); a game with no model file plays by the rules alone
(`klent.engine.player.Player.without_model`), which an ``info string`` says.

How a ``go`` is searched (all through `klent.engine.player.Player.decide` and ``analyse``):

* a time budget comes from ``movetime`` (minus ``Move Overhead``) and from the clock
  (``wtime``/``btime``/``winc``/``binc``/``movestogo``, see `klent.engine.timecontrol`); with both,
  the smaller one;
* ``nodes`` is the number of simulations; the ``Simulations`` option, when not 0, caps every
  search, and a ``go`` with no limit at all runs `DEFAULT_SIMULATIONS` (or ``Simulations``);
* a limited search of up to `LONG_SEARCH` seconds (or of ``nodes``) is one Gumbel search
  planned for its budget;
* ``depth``, ``infinite``, ``ponder`` and longer timed searches are an analysis
  (`klent.engine.player.Player.analyse`): successive searches on the same tree with growing budgets
  (doubling until one takes about `INFO_INTERVAL` seconds), printing ``info`` after each, until
  the PV is ``depth`` plies long, the time is up, or ``stop`` / ``ponderhit`` arrive.
  ``go infinite`` and ``go ponder`` never answer before ``stop`` / ``ponderhit``;
* on ``ponderhit`` the budget of the ``go ponder`` clock counts from the ``go ponder`` command,
  as in Stockfish: the time spent pondering was thinking about this very move, so the engine
  answers at once when it pondered longer than the budget;
* ``Hash`` is the memory for the search tree in MB, as in other engines
  (`klent.engine.player.PlayOptions.memory`, which the tree counts in bytes: about 9.2 KB a chess
  node, most of it the position): every ``go`` stops growing the tree when it is full, and an
  open-ended search then waits for ``stop``;
* ``searchmoves`` chooses among the listed moves from the search's analysis
  (`klent.engine.player.PlayOptions.candidates`);
* ``SyzygyPath`` (folders separated by ":", by default the tables ``make setup`` unpacks) and
  ``SyzygyProbeLimit``: chess endgame tables, WDL in the search's leaves and DTZ at the root
  (`klent.engine.tablebase`); a tablebase draw is reported as ``cp 0`` (``wdl 0 1000 0``), a
  win or loss with a certain WDL (``wdl 1000 0 0``, ``wdl 0 0 1000``).  A path without
  tables is reported and play goes on without them.

Scores: the value v in [-1, 1] of a move (its searched Q) becomes centipawns through
`centipawns` (read back exactly from a model distilled on centipawns, else Leela's monotone
map: a one-pawn advantage is v = 0.47) and, with
``UCI_ShowWDL``, a win/draw/loss estimate through `wdl`.  A PV that ends in checkmate is
reported as ``score mate N`` (N moves, negative when the side to move is mated).
``info depth`` is the PV length in plies and ``seldepth`` the depth of the search tree.  The
``ponder`` move is the player's expected reply (`klent.engine.player.Decision.ponder`).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO, Literal, TextIO

from klent.engine.games.animal_shogi import AnimalShogiGame
from klent.engine.games.base import FenGame, GameFormatError, IllegalMoveError, State
from klent.engine.games.chess import ChessGame
from klent.engine.games.gardner import GardnerGame
from klent.engine.player import (
    DEFAULT_MEMORY_MB,
    DEFAULT_WEIGHTS_DIR,
    PRECISIONS,
    SYZYGY_MAX_PIECES,
    Decision,
    MoveStat,
    Player,
    PlayOptions,
    Tablebase,
    clock_budget,
    default_syzygy_path,
    default_threads,
    model_path_for,
)
from klent.protocols.uci_value import value_centipawns

DEFAULT_SIMULATIONS = 800  # a `go` without any limit
MAX_SIMULATIONS = 10_000_000  # the largest Simulations setting
INFO_INTERVAL = 1.0  # seconds an iteration of an open-ended search aims at
LONG_SEARCH = 5.0  # timed searches longer than this are iterated (info lines, memory cap)
MAX_CENTIPAWNS = 12_800  # |cp| of a certain win; mate scores are reported as `mate`
QUIT_JOIN_SECONDS = 5.0
# Bytes of one command line (about 170,000 moves of a `position`); a longer line is skipped
# without being kept in memory.
MAX_LINE = 1 << 20

Kind = Literal["check", "spin", "combo", "string"]

# The games `klent uci` plays, by the UCI_Variant names Fairy-Stockfish gives them, each made
# without the rules a GUI applies itself (move cap, draw claims, repetition): the GUI ends
# games, the engine only has to know the moves.
UCI_VARIANTS: dict[str, Callable[[], FenGame]] = {
    "chess": lambda: ChessGame(max_moves=None, claim_draws=False),
    "gardner": lambda: GardnerGame(max_moves=None, claim_draws=False),
    "dobutsu": lambda: AnimalShogiGame(max_moves=None, repetition_rule=False),
}


def uci_variant(game_id: str) -> str | None:
    """The UCI_Variant name of the klent game ``game_id``; None for a game UCI does not play."""
    return next((variant for variant, make in UCI_VARIANTS.items() if make().name == game_id), None)


@dataclass(frozen=True)
class UciOption:
    """One engine option as the ``uci`` command declares it."""

    name: str
    kind: Kind
    default: bool | int | str
    minimum: int = 0
    maximum: int = 0
    choices: tuple[str, ...] = ()

    def declaration(self) -> str:
        default = str(self.default).lower() if self.kind == "check" else str(self.default)
        text = f"option name {self.name} type {self.kind} default {default or '<empty>'}"
        if self.kind == "spin":
            text += f" min {self.minimum} max {self.maximum}"
        text += "".join(f" var {choice}" for choice in self.choices)
        return text

    def parse(self, text: str) -> bool | int | str:
        """The value of ``setoption ... value <text>``; ValueError saying why it is refused."""
        if self.kind == "string":
            return "" if text == "<empty>" else text
        if self.kind == "check":
            if text.lower() not in ("true", "false"):
                raise ValueError(f"{self.name} takes true or false, not {text!r}")
            return text.lower() == "true"
        if self.kind == "combo":
            for choice in self.choices:
                if choice.lower() == text.lower():
                    return choice
            raise ValueError(f"{self.name} takes one of {', '.join(self.choices)}, not {text!r}")
        try:
            number = int(text)
        except ValueError:
            raise ValueError(f"{self.name} takes an integer, not {text!r}") from None
        if not self.minimum <= number <= self.maximum:
            raise ValueError(f"{self.name} must be within {self.minimum}..{self.maximum}, not {number}")
        return number


def uci_options(model: str, precision: str = "float32") -> list[UciOption]:
    """The options ``uci`` declares, with ``model`` as the default model file and ``precision``
    the default precision (int8 plays the model's quantized sibling <stem>.int8.onnx)."""
    return [
        UciOption("ModelFile", "string", model),
        UciOption("Precision", "combo", precision, choices=PRECISIONS),
        UciOption("Threads", "spin", default_threads(), 1, 64),
        UciOption("MultiPV", "spin", 1, 1, 256),
        UciOption("Ponder", "check", False),
        UciOption("UCI_ShowWDL", "check", False),
        UciOption("Move Overhead", "spin", 100, 0, 10_000),
        UciOption("SearchMode", "combo", "gumbel", choices=("gumbel", "reactive")),
        UciOption("Simulations", "spin", 0, 0, MAX_SIMULATIONS),
        UciOption("Hash", "spin", DEFAULT_MEMORY_MB, 1, 1 << 20),
        UciOption("UCI_Variant", "combo", "chess", choices=tuple(UCI_VARIANTS)),
        UciOption("SyzygyPath", "string", default_syzygy_path()),
        UciOption("SyzygyProbeLimit", "spin", SYZYGY_MAX_PIECES, 0, SYZYGY_MAX_PIECES),
    ]


def centipawns(value: float, scale: str = "outcome") -> int:
    """Centipawns of a value in [-1, 1] from the side to move's view, on the model's value
    ``scale`` (`klent.engine.player.Player.value_scale`).

    "centipawns": the model learnt a teacher's centipawns squashed, so they are read back
    exactly (`klent.protocols.uci_value.value_centipawns`).  An expected outcome ("outcome") has no
    centipawns of its own; it goes through cp = 111.714640912 * tan(1.5620688421 * v), the
    mapping Leela Chess Zero used for its value head: strictly increasing on [-1, 1] (1.562 <
    pi/2), odd, 100 cp (a pawn) at v = 0.47, 36 cp at v = 0.2, reaching +-12 800 at v = +-1.
    Either is clamped to +-12 800.
    """
    v = min(1.0, max(-1.0, float(value)))
    cp = value_centipawns(v) if scale == "centipawns" else 111.714640912 * math.tan(1.5620688421 * v)
    return int(round(min(MAX_CENTIPAWNS, max(-MAX_CENTIPAWNS, cp))))


def wdl(value: float, proven: bool = False) -> tuple[int, int, int]:
    """Win/draw/loss in permille for a value in [-1, 1] (expected score (1 + v) / 2).

    The networks predict the expected outcome only, so the draw share is a convention: half of
    the probability mass that the value leaves undecided, D = (1 - |v|) / 2, and W - L = v.
    W, D and L are never negative and sum to 1000.  A ``proven`` value (the endgame tables',
    `klent.engine.player.MoveStat.proven`) is certain: a win 1000 0 0, a draw 0 1000 0 (as its
    ``cp 0`` says), a loss 0 0 1000.
    """
    if proven:
        return (1000, 0, 0) if value > 0 else (0, 0, 1000) if value < 0 else (0, 1000, 0)
    v = min(1.0, max(-1.0, float(value)))
    draw = (1.0 - abs(v)) / 2.0
    win = round(1000 * (1.0 + v - draw) / 2.0)
    d = round(1000 * draw)
    return win, d, 1000 - win - d


@dataclass
class GoCommand:
    """The limits of one ``go`` (times in milliseconds, as sent)."""

    wtime: int | None = None
    btime: int | None = None
    winc: int | None = None
    binc: int | None = None
    movestogo: int | None = None
    depth: int | None = None
    nodes: int | None = None
    movetime: int | None = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: list[int] = field(default_factory=list)


_GO_NUMBERS = ("wtime", "btime", "winc", "binc", "movestogo", "depth", "nodes", "movetime")
_GO_CLOCKS = ("wtime", "btime", "winc", "binc")  # may be negative (a lagging server): read as 0
_GO_KEYWORDS = frozenset((*_GO_NUMBERS, "infinite", "ponder", "searchmoves", "mate"))


def parse_go(tokens: list[str], state: State, complain: Callable[[str], None]) -> GoCommand:
    """Read the arguments of ``go``; bad parts are reported through ``complain`` and skipped.

    A GUI waits for ``bestmove`` after any ``go``, so a partly malformed ``go`` still searches
    with the limits that could be read.
    """
    go = GoCommand()
    game = state.game
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token in _GO_NUMBERS:
            text = tokens[i] if i < len(tokens) else ""
            try:
                number = int(text)
            except ValueError:
                complain(f"go: {token} needs an integer, got {text or 'nothing'!r}; ignored")
                continue
            i += 1
            if number < 0 and token not in _GO_CLOCKS:
                complain(f"go: {token} must not be negative, got {number}; ignored")
                continue
            setattr(go, token, max(0, number))
        elif token in ("infinite", "ponder"):
            setattr(go, token, True)
        elif token == "mate":
            complain("go: mate searches are not supported; searching normally")
            if i < len(tokens) and tokens[i].lstrip("-").isdigit():
                i += 1
        elif token == "searchmoves":
            while i < len(tokens) and tokens[i] not in _GO_KEYWORDS:
                try:
                    go.searchmoves.append(game.text_to_action(state, tokens[i]))
                except (GameFormatError, IllegalMoveError) as error:
                    complain(f"go searchmoves: {error}; ignored")
                i += 1
        else:
            complain(f"go: unknown token {token!r}; ignored")
    return go


class _Job:
    """One ``go``: the position it searches, its limits, the events the main thread signals it
    with, and (once it starts) its player.

    ``options`` are how each of its searches decides, from the option values when the ``go``
    came (the budget is set where a search runs); ``cap`` is the simulations of the whole
    ``go``: ``nodes`` or the Simulations option, the smaller.  ``interrupt`` ends the running
    ``decide`` call (stop, quit, ponderhit); ``stopped`` says the whole search must end;
    ``ponderhit`` that the pondered move was played.  A job queued behind a running search
    keeps its position and its clock (``start``) from the ``go`` command.
    """

    def __init__(self, go: GoCommand, options: PlayOptions, cap: int | None, show_wdl: bool,
                 start: float, budget: float | None, initial: State, actions: list[int], state: State) -> None:
        self.go = go
        self.options = options
        self.cap = cap
        self.show_wdl = show_wdl
        self.start = start
        self.budget = budget
        self.initial = initial
        self.actions = actions
        self.state = state
        self.value_scale = "outcome"  # the player's (`Player.value_scale`), once it starts
        self.interrupt = threading.Event()
        self.stopped = threading.Event()
        self.ponderhit = threading.Event()
        self.simulations = 0

    def stop(self) -> None:
        self.stopped.set()
        self.interrupt.set()

    def resume(self) -> None:
        """Clear the interrupt after a ponderhit, unless a stop came meanwhile."""
        self.interrupt.clear()
        if self.stopped.is_set():
            self.interrupt.set()

    @property
    def waits_for_stop(self) -> bool:
        """Whether the search would never end by itself: ``infinite``, or pondering before
        the ``ponderhit``."""
        return not self.stopped.is_set() and (
            self.go.infinite or (self.go.ponder and not self.ponderhit.is_set())
        )

    @property
    def deadline(self) -> float | None:
        return None if self.budget is None else self.start + self.budget


class UciEngine:
    """A UCI engine over one `Player`; `run` serves a command stream until ``quit``.

    ``weights_dir`` holds the shipped models, ``<game>.onnx``.  While ``ModelFile`` names the
    shipped model of the game being played, a variant switch makes it name the new game's; a
    model given as ``model`` or set through ``ModelFile`` stays.
    """

    def __init__(self, output: TextIO, model: str | Path | None = None,
                 name: str = "klent", author: str = "the klent authors",
                 weights_dir: str | Path = DEFAULT_WEIGHTS_DIR, precision: str = "float32",
                 tuning: PlayOptions | None = None, device: str = "auto") -> None:
        self.output = output
        self.device = device  # klent.engine.network.DEVICE_CHOICES (`klent uci --device`)
        # what every `go` starts from: the search's tuning (`klent uci --rescale-floor --wave-size`)
        self.tuning = tuning or PlayOptions()
        self.name = name
        self.author = author
        self.weights_dir = weights_dir
        self.game: FenGame = UCI_VARIANTS["chess"]()
        default_model = str(model) if model is not None else str(model_path_for(self.game, weights_dir))
        self.options = {option.name.lower(): option for option in uci_options(default_model, precision)}
        self.values: dict[str, bool | int | str] = {key: o.default for key, o in self.options.items()}
        self._player: Player | None = None
        self._player_key: tuple[str, str, int, str] | None = None
        self._tables: Tablebase | None = None  # chess endgame tables: SyzygyPath, SyzygyProbeLimit
        self._open_tables()
        self._position_key = "startpos"
        self._initial: State = self.game.initial_state()
        self._actions: list[int] = []
        self._moves: list[str] = []  # the actions as the last `position` wrote them
        self._state = self._initial  # after the actions
        self._lock = threading.Lock()  # guards _job and _queue, and keeps output lines whole
        self._job: _Job | None = None  # the search running (or about to start)
        self._queue: deque[_Job] = deque()  # the ``go``s that came while it runs, in order
        self._thread: threading.Thread | None = None
        self._handlers: dict[str, Callable[[list[str]], None]] = {
            "uci": self._uci,
            "debug": lambda args: None,
            "isready": self._isready,
            "setoption": self._setoption,
            "register": lambda args: None,
            "ucinewgame": self._ucinewgame,
            "position": self._position,
            "go": self._go,
            "stop": self._stop,
            "ponderhit": self._ponderhit,
        }

    # --- the command loop ------------------------------------------------------------------

    def run(self, stream: BinaryIO) -> int:
        """Serve commands from ``stream`` until ``quit`` or end of input; returns 0.  A line
        longer than `MAX_LINE` bytes is read to its end in pieces, dropped and reported."""
        while raw := stream.readline(MAX_LINE + 1):
            if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
                while (rest := stream.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                    pass
                head = raw[:40].decode("utf-8", errors="replace")
                self._info(f"command line longer than {MAX_LINE} bytes ignored: {head!r}...")
                continue
            if not self.handle(raw.decode("utf-8", errors="replace")):
                break
        self.shutdown()
        return 0

    def handle(self, line: str) -> bool:
        """Execute one command line; False once it was ``quit``.

        As the UCI specification asks, unknown tokens before a command are skipped (and
        reported), so "joho debug on" is "debug on".
        """
        tokens = line.split()
        if not tokens:
            return True
        skipped = 0
        while skipped < len(tokens) and tokens[skipped] not in self._handlers and tokens[skipped] != "quit":
            skipped += 1
        if skipped:
            self._info(f"unknown command {' '.join(tokens[:skipped])[:80]!r}; ignored")
        if skipped == len(tokens):
            return True
        command, args = tokens[skipped], tokens[skipped + 1 :]
        if command == "quit":
            return False
        try:
            self._handlers[command](args)
        except Exception as error:  # noqa: BLE001 - whatever goes wrong, the engine keeps serving
            self._info(f"{command} failed: {type(error).__name__}: {error}")
        return True

    def shutdown(self) -> None:
        """Drop the queued searches, stop the running one and wait (briefly) for its thread."""
        with self._lock:
            self._queue.clear()
            job, thread = self._job, self._thread
        if job is not None:
            job.stop()
        if thread is not None:
            thread.join(QUIT_JOIN_SECONDS)

    # --- output ------------------------------------------------------------------------------

    def _write(self, line: str) -> None:
        try:
            self.output.write(line + "\n")
            self.output.flush()
        except (OSError, ValueError):  # the GUI went away; the end of input will follow
            pass

    def _send(self, line: str) -> None:
        with self._lock:
            self._write(line)

    def _info(self, message: str) -> None:
        self._send("info string " + " ".join(str(message).split()))

    # --- commands ----------------------------------------------------------------------------

    def _uci(self, args: list[str]) -> None:
        lines = [f"id name {self.name}", f"id author {self.author}"]
        lines += [option.declaration() for option in self.options.values()]
        for line in [*lines, "uciok"]:
            self._send(line)

    def _isready(self, args: list[str]) -> None:
        """Load the model if it changed, and answer ``readyok`` whatever happened: a GUI waits
        for it before anything else, and a model that cannot load is reported by its own
        ``info string`` (`_load_player`)."""
        try:
            if not self._searching():
                self._load_player()
        finally:
            self._send("readyok")

    def _setoption(self, args: list[str]) -> None:
        if not args or args[0] != "name":
            self._info("setoption: expected 'setoption name <name> [value <value>]'")
            return
        rest = args[1:]
        split = rest.index("value") if "value" in rest else len(rest)
        name, value = " ".join(rest[:split]), " ".join(rest[split + 1 :])
        option = self.options.get(name.lower())
        if option is None:
            self._info(f"setoption: no option {name!r}; options: {', '.join(o.name for o in self.options.values())}")
            return
        if split == len(rest) and option.kind != "string":
            self._info(f"setoption: {option.name} needs a value")
            return
        try:
            self.values[option.name.lower()] = option.parse(value)
        except ValueError as error:
            self._info(f"setoption: {error}; unchanged")
            return
        if option.name == "UCI_Variant":
            self._switch_variant(str(self.values["uci_variant"]))
        if option.name in ("SyzygyPath", "SyzygyProbeLimit"):
            self._open_tables()

    def _open_tables(self) -> None:
        """The endgame tables SyzygyPath names, up to SyzygyProbeLimit pieces (0: none); a path
        without tables is reported and play goes on without them, as lichess-bot's default
        SyzygyPath may name a folder that does not exist."""
        path, limit = str(self.values["syzygypath"]), int(self.values["syzygyprobelimit"])
        try:
            self._tables = Tablebase.from_path(path, limit) if limit else None
        except ValueError as error:
            self._tables = None
            self._info(f"SyzygyPath: {error}; playing without endgame tables")

    def _switch_variant(self, variant: str) -> None:
        """Play ``variant`` from its initial position on, with its shipped model unless another
        model was chosen; a missing model is reported now rather than at the first ``go``."""
        shipped = self.values["modelfile"] == self._shipped_model()
        self.game = UCI_VARIANTS[variant]()
        self._ucinewgame([])
        if shipped:
            self.values["modelfile"] = self._shipped_model()
        if not Path(str(self.values["modelfile"])).is_file():
            self._load_player()

    def _ucinewgame(self, args: list[str]) -> None:
        # A fresh initial state: the player drops its search tree of the previous game.
        self._position_key = "startpos"
        self._initial = self._state = self.game.initial_state()
        self._actions, self._moves = [], []

    def _position(self, args: list[str]) -> None:
        """``position startpos|fen <FEN> [moves m1 m2 ...]``; nothing changes on any error."""
        if not args or args[0] not in ("startpos", "fen"):
            self._info("position: expected 'position startpos|fen <fen> [moves ...]'; position unchanged")
            return
        split = args.index("moves") if "moves" in args else len(args)
        if args[0] == "startpos":
            key, extra = "startpos", args[1:split]
            if extra:
                self._info(f"position: unexpected {' '.join(extra)[:80]!r} after startpos; position unchanged")
                return
        else:
            key = "fen " + " ".join(args[1:split])
        moves = args[split + 1 :]
        try:
            if key == self._position_key:
                initial = self._initial
            elif key == "startpos":
                initial = self.game.initial_state()
            else:
                initial = self.game.from_fen(key[4:])
        except GameFormatError as error:
            self._info(f"position: {error}; position unchanged")
            return
        # A GUI sends the whole game at every move: only the moves after the last position's are played.
        done = len(self._moves) if initial is self._initial and moves[: len(self._moves)] == self._moves else 0
        actions, state = (list(self._actions), self._state) if done else ([], initial)
        for number, text in enumerate(moves[done:], start=done + 1):
            try:
                action = self.game.text_to_action(state, text)
            except (GameFormatError, IllegalMoveError) as error:
                self._info(f"position: move {number} of the list: {error}; position unchanged")
                return
            state = state.play_in_record(action)
            actions.append(action)
        self._position_key, self._initial, self._actions, self._state = key, initial, actions, state
        self._moves = moves

    def _go(self, args: list[str]) -> None:
        """Start a search of the current position, or queue it behind the running one."""
        start = time.perf_counter()  # the GUI's clock runs from here, waiting included
        state = self._state
        go = parse_go(args, state, self._info)
        values = self.values
        options = replace(
            self.tuning,
            mode="reactive" if values["searchmode"] == "reactive" else "search",
            top_moves=int(values["multipv"]),
            candidates=tuple(go.searchmoves),
            ponder=bool(values["ponder"]),
            memory=int(values["hash"]) * 2**20,
        )
        caps = [cap for cap in (go.nodes, int(values["simulations"]) or None) if cap is not None]
        clock, increment = (go.wtime, go.winc) if state.to_play == 0 else (go.btime, go.binc)
        budget = clock_budget(clock, increment, go.movestogo, go.movetime, int(values["move overhead"]) / 1000.0)
        job = _Job(go, options, min(caps) if caps else None, bool(values["uci_showwdl"]), start, budget,
                   self._initial, list(self._actions), state)
        with self._lock:
            ahead = [queued for queued in (self._job, *self._queue) if queued is not None]
            if not ahead:
                self._job = job
                self._thread = threading.Thread(target=self._work, args=(job,), name="uci-search", daemon=True)
                self._thread.start()
                return
            self._queue.append(job)
        if any(queued.waits_for_stop for queued in ahead):
            self._info("go: stopping the running search first (send stop before go)")
            for queued in ahead:
                if queued.waits_for_stop:
                    queued.stop()

    def _stop(self, args: list[str]) -> None:
        """End the running search and those queued behind it: each answers its bestmove now."""
        with self._lock:
            jobs = [job for job in (self._job, *self._queue) if job is not None]
        for job in jobs:
            job.stop()

    def _ponderhit(self, args: list[str]) -> None:
        with self._lock:
            job = next((j for j in (self._job, *self._queue) if j is not None and j.go.ponder
                        and not j.ponderhit.is_set()), None)
        if job is None:
            self._info("ponderhit: not pondering; ignored")
            return
        job.ponderhit.set()
        if not job.go.infinite:
            job.interrupt.set()

    # --- state helpers -----------------------------------------------------------------------

    def _searching(self) -> bool:
        with self._lock:
            return self._job is not None

    def _shipped_model(self) -> str:
        return str(model_path_for(self.game, self.weights_dir))

    def _load_player(self) -> Player | None:
        """The player for the current game, ModelFile and Threads, loading it when they changed.

        A chosen model that cannot be loaded leaves no player (``go`` answers ``bestmove
        (none)`` until the GUI fixes the option); a game without a shipped model gets a player
        that searches by the rules alone, so that a GUI can still play it.
        """
        model = str(self.values["modelfile"])
        key = (self.game.name, model, int(self.values["threads"]), str(self.values["precision"]))
        if self._player is not None and self._player_key == key:
            return self._player
        self._player, self._player_key = None, None
        if not model:
            self._info(f"no model: set the ModelFile option to an .onnx model for {self.game.name}")
            return None
        try:
            self._player = Player.load(self.game, model=model, threads=key[2], precision=key[3], device=self.device)
        except FileNotFoundError as error:
            if model != self._shipped_model() or Path(model).is_file():  # or its int8 sibling is missing
                self._info(f"cannot load model {model}: {error}")
                return None
            self._info(f"{error}; playing by the rules alone (no network) until the ModelFile option "
                       f"names an .onnx model for {self.game.name}")
            self._player = Player.without_model(self.game)
        except (OSError, ValueError) as error:
            self._info(f"cannot load model {model}: {error}")
            return None
        self._player_key = key
        return self._player

    # --- the search thread ---------------------------------------------------------------------

    def _work(self, job: _Job) -> None:
        """Answer ``job``, then each search queued behind it, in order (the search thread)."""
        next_job: _Job | None = job
        while next_job is not None:
            answer = self._answer(next_job)
            with self._lock:
                self._write(answer)
                next_job = self._job = self._queue.popleft() if self._queue else None

    def _answer(self, job: _Job) -> str:
        """Search, report, and return the ``bestmove`` line (always, even if the search failed).

        With no move to search (a finished game, or no model), ``go infinite`` and ``go ponder``
        still answer only after ``stop`` / ``ponderhit``, as UCI asks of them."""
        try:
            player = self._load_player()
            state = job.state
            if player is None or state.is_terminal:
                if job.go.infinite or job.go.ponder:
                    job.interrupt.wait()
                if state.is_terminal:
                    self._send(f"info depth 0 score {'mate 0' if state.outcome() != 0 else 'cp 0'}")
                return "bestmove (none)"
            player.set_position(job.initial, job.actions, job.state)
            player.tablebase = self._tables
            job.value_scale = player.value_scale
            decision = self._search(job, player)
            answer = f"bestmove {decision.move}"
            if decision.ponder is not None:
                answer += f" ponder {decision.ponder}"
            return answer
        except Exception as error:  # noqa: BLE001 - the GUI must get its bestmove regardless
            self._info(f"search failed: {type(error).__name__}: {error}")
            return "bestmove (none)"

    def _search(self, job: _Job, player: Player) -> Decision:
        go = job.go
        if go.infinite or go.ponder:
            decision = self._analyse(job, player, deadline=None, depth=None)
            job.interrupt.wait()
            if job.stopped.is_set() or go.infinite:
                return decision
            job.resume()
            if job.deadline is not None and time.perf_counter() >= job.deadline:
                return decision  # pondered for longer than this move's whole budget
        long_search = go.nodes is None and job.budget is not None and job.budget > LONG_SEARCH
        if go.depth is not None or job.options.mode == "reactive" or long_search:
            return self._analyse(job, player, deadline=job.deadline, depth=go.depth)
        simulations = DEFAULT_SIMULATIONS if job.cap is None and job.deadline is None else job.cap
        options = replace(job.options, simulations=simulations, time=_seconds_until(job.deadline))
        decision = player.decide(options, stop=job.interrupt)
        job.simulations += decision.simulations
        self._report(job, decision)
        return decision

    def _analyse(self, job: _Job, player: Player, deadline: float | None, depth: int | None) -> Decision:
        """Successive searches on one tree with growing budgets, reporting after each.

        Ends when interrupted, at ``deadline``, once the PV is ``depth`` plies long or ends the
        game, when the simulation cap (``nodes``, ``Simulations``) is spent, or when the tree
        holds ``Hash`` MB.
        """
        cap = job.cap

        def update(decision: Decision) -> bool:
            job.simulations += decision.simulations
            self._report(job, decision)
            return depth is None or (decision.depth < depth and decision.outcome is None)

        return player.analyse(
            update, job.interrupt, job.options,
            simulations=None if cap is None else max(0, cap - job.simulations),
            time=_seconds_until(deadline),
            interval=INFO_INTERVAL,
        )

    # --- reporting -----------------------------------------------------------------------------

    def _report(self, job: _Job, decision: Decision) -> None:
        """One ``info`` line per analysed move, best first (``multipv`` of them)."""
        elapsed = time.perf_counter() - job.start
        nodes = job.simulations
        for rank, line in enumerate(decision.top_moves, start=1):
            mate = _mate_in(line)
            score = f"mate {mate}" if mate is not None else f"cp {centipawns(line.q, job.value_scale)}"
            if job.show_wdl:
                score += " wdl {} {} {}".format(*wdl(line.q, line.proven))
            self._send(
                f"info depth {len(line.pv)} seldepth {max(decision.seldepth, len(line.pv))} multipv {rank} "
                f"score {score} nodes {nodes} nps {int(nodes / max(elapsed, 1e-3))} "
                f"time {int(elapsed * 1000)} pv {' '.join(line.pv)}"
            )


def _seconds_until(deadline: float | None) -> float | None:
    """The time left to a search that must end at ``deadline`` (None: no deadline)."""
    return None if deadline is None else max(0.0, deadline - time.perf_counter())


def _mate_in(line: MoveStat) -> int | None:
    """Moves to the won or lost end the PV reaches (checkmate in chess), counted the UCI way:
    N > 0 if the side to move wins in N of its moves, -N if it loses after N of its moves."""
    if not line.outcome:  # the game goes on, or ends drawn
        return None
    moves = (len(line.pv) + 1) // 2
    return moves if line.outcome > 0 else -moves
