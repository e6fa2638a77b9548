"""UCI (Universal Chess Interface) front end: text commands in, `Player` calls, text out.

The main thread reads commands and never waits for a search: ``go`` hands its position and
limits to the search thread (`klent.protocols.uci_search`).  The manual (options, searches,
scores, tablebases, variants) is docs/uci.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO, TextIO

from klent.engine.games.base import FenGame, GameFormatError, IllegalMoveError, State
from klent.engine.player import (
    DEFAULT_WEIGHTS_DIR,
    Player,
    PlayOptions,
    StrengthCurve,
    Tablebase,
    clock_budget,
    curve_for,
    model_path_for,
)
from klent.protocols.uci_go import parse_go
from klent.protocols.uci_options import uci_options
from klent.protocols.uci_search import Output, Searches, SearchJob
from klent.protocols.uci_variants import UCI_VARIANTS

# Bytes of one command line (about 170,000 moves of a `position`); a longer line is skipped
# without being kept in memory.
MAX_LINE = 1 << 20


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
        self.output = Output(output)
        self.device = device  # klent.engine.network.DEVICE_CHOICES (`klent uci --device`)
        # what every `go` starts from: the search's tuning (`klent uci --rescale-floor --wave-size`)
        self.tuning = tuning or PlayOptions()
        self.name = name
        self.author = author
        self.weights_dir = weights_dir
        self.game: FenGame = UCI_VARIANTS["chess"]()
        default_model = str(model) if model is not None else str(model_path_for(self.game, weights_dir))
        # the strength curve of the model being played (UCI_LimitStrength), by model file
        self._strength: tuple[str, StrengthCurve | None] | None = None
        self._level: tuple[str, int, int] | None = None  # the last (model, UCI_Elo, simulations) said
        declared = uci_options(default_model, precision, self._strength_curve(default_model, report=False))
        self.options = {option.name.lower(): option for option in declared}
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
        self._searches = Searches(self.output, self._load_player, lambda: self._tables)
        self._handlers: dict[str, Callable[[list[str]], None]] = {
            "uci": self._uci,
            "debug": lambda args: None,
            "isready": self._isready,
            "setoption": self._setoption,
            "register": lambda args: None,
            "ucinewgame": self._ucinewgame,
            "position": self._position,
            "go": self._go,
            "stop": lambda args: self._searches.stop(),
            "ponderhit": lambda args: self._searches.ponderhit(),
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
                self.output.info(f"command line longer than {MAX_LINE} bytes ignored: {head!r}...")
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
            self.output.info(f"unknown command {' '.join(tokens[:skipped])[:80]!r}; ignored")
        if skipped == len(tokens):
            return True
        command, args = tokens[skipped], tokens[skipped + 1 :]
        if command == "quit":
            return False
        try:
            self._handlers[command](args)
        except Exception as error:  # noqa: BLE001 - whatever goes wrong, the engine keeps serving
            self.output.info(f"{command} failed: {type(error).__name__}: {error}")
        return True

    def shutdown(self) -> None:
        """Drop the queued searches, stop the running one and wait (briefly) for its thread."""
        self._searches.shutdown()

    # --- commands ----------------------------------------------------------------------------

    def _uci(self, args: list[str]) -> None:
        lines = [f"id name {self.name}", f"id author {self.author}"]
        lines += [option.declaration() for option in self.options.values()]
        for line in [*lines, "uciok"]:
            self.output.send(line)

    def _isready(self, args: list[str]) -> None:
        """Load the model if it changed, and answer ``readyok`` whatever happened: a GUI waits
        for it before anything else, and a model that cannot load is reported by its own
        ``info string`` (`_load_player`)."""
        try:
            if not self._searches.busy():
                self._load_player()
        finally:
            self.output.send("readyok")

    def _setoption(self, args: list[str]) -> None:
        if not args or args[0] != "name":
            self.output.info("setoption: expected 'setoption name <name> [value <value>]'")
            return
        rest = args[1:]
        split = rest.index("value") if "value" in rest else len(rest)
        name, value = " ".join(rest[:split]), " ".join(rest[split + 1 :])
        option = self.options.get(name.lower())
        if option is None:
            names = ", ".join(o.name for o in self.options.values())
            self.output.info(f"setoption: no option {name!r}; options: {names}")
            return
        if split == len(rest) and option.kind != "string":
            self.output.info(f"setoption: {option.name} needs a value")
            return
        try:
            self.values[option.name.lower()] = option.parse(value)
        except ValueError as error:
            self.output.info(f"setoption: {error}; unchanged")
            return
        if option.name == "UCI_Variant":
            self._switch_variant(str(self.values["uci_variant"]))
        if option.name in ("SyzygyPath", "SyzygyProbeLimit"):
            self._open_tables()
        if option.name in ("UCI_LimitStrength", "UCI_Elo", "ModelFile") and self.values.get("uci_limitstrength"):
            self._strength_limit()  # says what the level plays, or why it cannot

    def _open_tables(self) -> None:
        """The endgame tables SyzygyPath names, up to SyzygyProbeLimit pieces (0: none); a path
        without tables is reported and play goes on without them, as lichess-bot's default
        SyzygyPath may name a folder that does not exist."""
        path, limit = str(self.values["syzygypath"]), int(self.values["syzygyprobelimit"])
        try:
            self._tables = Tablebase.from_path(path, limit) if limit else None
        except ValueError as error:
            self._tables = None
            self.output.info(f"SyzygyPath: {error}; playing without endgame tables")

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
            self.output.info("position: expected 'position startpos|fen <fen> [moves ...]'; position unchanged")
            return
        split = args.index("moves") if "moves" in args else len(args)
        if args[0] == "startpos":
            key, extra = "startpos", args[1:split]
            if extra:
                self.output.info(f"position: unexpected {' '.join(extra)[:80]!r} after startpos; position unchanged")
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
            self.output.info(f"position: {error}; position unchanged")
            return
        # A GUI sends the whole game at every move: only the moves after the last position's are played.
        done = len(self._moves) if initial is self._initial and moves[: len(self._moves)] == self._moves else 0
        actions, state = (list(self._actions), self._state) if done else ([], initial)
        for number, text in enumerate(moves[done:], start=done + 1):
            try:
                action = self.game.text_to_action(state, text)
            except (GameFormatError, IllegalMoveError) as error:
                self.output.info(f"position: move {number} of the list: {error}; position unchanged")
                return
            state = state.play_in_record(action)
            actions.append(action)
        self._position_key, self._initial, self._actions, self._state = key, initial, actions, state
        self._moves = moves

    def _go(self, args: list[str]) -> None:
        """Start a search of the current position, or queue it behind the running one."""
        start = time.perf_counter()  # the GUI's clock runs from here, waiting included
        state = self._state
        go = parse_go(args, state, self.output.info)
        values = self.values
        limit = self._strength_limit()
        reactive = values["searchmode"] == "reactive" if limit is None else limit == 1
        options = replace(
            self.tuning,
            mode="reactive" if reactive else "search",
            top_moves=int(values["multipv"]),
            candidates=tuple(go.searchmoves),
            ponder=bool(values["ponder"]),
            memory=int(values["hash"]) * 2**20,
        )
        caps = [cap for cap in (go.nodes, int(values["simulations"]) or None, limit) if cap is not None]
        clock, increment = (go.wtime, go.winc) if state.to_play == 0 else (go.btime, go.binc)
        budget = clock_budget(clock, increment, go.movestogo, go.movetime, int(values["move overhead"]) / 1000.0)
        job = SearchJob(go, options, min(caps) if caps else None, bool(values["uci_showwdl"]), start, budget,
                        self._initial, list(self._actions), state)
        self._searches.submit(job)

    # --- state helpers -----------------------------------------------------------------------

    def _shipped_model(self) -> str:
        return str(model_path_for(self.game, self.weights_dir))

    def _strength_curve(self, model: str, report: bool = True) -> StrengthCurve | None:
        """The strength curve of ``model``, read once per model file; a curve that cannot be
        used is said in an ``info string`` (when ``report``) and counts as none."""
        if self._strength is not None and self._strength[0] == model:
            return self._strength[1]
        curve = None
        try:
            curve = curve_for(model) if Path(model).is_file() else None
        except ValueError as error:
            if report:
                self.output.info(f"UCI_LimitStrength: {error}")
        if curve is None and report:
            self.output.info(f"UCI_LimitStrength: no strength curve for {model}; playing at full strength")
        self._strength = (model, curve)
        return curve

    def _strength_limit(self) -> int | None:
        """The simulations a move that play at ``UCI_Elo`` while ``UCI_LimitStrength`` is on
        (1: reactive play), else None.  The level is said in an ``info string`` when it changes."""
        if not self.values.get("uci_limitstrength"):
            return None
        model = str(self.values["modelfile"])
        curve = self._strength_curve(model)
        if curve is None:
            return None
        elo = int(self.values["uci_elo"])
        simulations = curve.simulations(elo)
        if self._level != (model, elo, simulations):
            play = "reactive play (one network call)" if simulations == 1 else f"{simulations} simulations a move"
            self.output.info(f"UCI_Elo {elo}: {play}, measured against {curve.scale}")
            self._level = (model, elo, simulations)
        return simulations

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
            self.output.info(f"no model: set the ModelFile option to an .onnx model for {self.game.name}")
            return None
        try:
            self._player = Player.load(self.game, model=model, threads=key[2], precision=key[3], device=self.device)
        except FileNotFoundError as error:
            if model != self._shipped_model() or Path(model).is_file():  # or its int8 sibling is missing
                self.output.info(f"cannot load model {model}: {error}")
                return None
            self.output.info(f"{error}; playing by the rules alone (no network) until the ModelFile option "
                       f"names an .onnx model for {self.game.name}")
            self._player = Player.without_model(self.game)
        except (OSError, ValueError) as error:
            self.output.info(f"cannot load model {model}: {error}")
            return None
        self._player_key = key
        return self._player
