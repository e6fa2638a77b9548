"""GTP (Go Text Protocol, version 2) engine: text commands in, `Player` calls, text out.

GUIs, opponents and bridges drive the engine through `GtpEngine.run`; a bad command gets a
``? message`` reply and changes nothing.  What it supports and why it plays as it does
(positions, resigning, Go's move rules, time, scoring, analysis, TD search): docs/gtp.md.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO, TextIO

from klent.engine.games.base import GameFormatError, IllegalMoveError
from klent.engine.games.go import GoGame, GoState
from klent.engine.games.sgf import result_text, write_sgf
from klent.engine.player import (
    DEFAULT_WEIGHTS_DIR,
    TD_MODES,
    Decision,
    GameClock,
    Judgement,
    ModelOutputError,
    MoveRule,
    Player,
    PlayOptions,
    ResignTracker,
    go_board_sizes,
)
from klent.protocols.go_text import board_text
from klent.protocols.gtp_analysis import analysis_request, info_line
from klent.protocols.gtp_clock import gtp_time_settings, kgs_time_settings
from klent.protocols.gtp_input import TOO_LONG, LineReader
from klent.protocols.gtp_records import load_record, save_record
from klent.protocols.gtp_wire import (
    COLOUR_NAMES,
    Command,
    GtpError,
    format_reply,
    gtp_float,
    gtp_int,
    one_arg,
    parse,
    parse_colour,
    reply_head,
)

log = logging.getLogger("klent.gtp")

PROTOCOL_VERSION = "2"
DEFAULT_SIZE = 19
MAX_KOMI = 150.0  # |komi| accepted, as by the HTTP API


@dataclass
class GtpConfig:
    """How `klent gtp` was started."""

    model: Path | None = None  # one model for its board size; None: weights_dir/go{N}.onnx
    weights_dir: Path = DEFAULT_WEIGHTS_DIR
    options: PlayOptions = field(default_factory=PlayOptions)
    resign_threshold: float = 0.05  # win rate; 0 disables resigning
    resign_moves: int = 3
    time_margin: float = 0.2  # seconds of lag kept per move
    threads: int | None = None
    device: str = "auto"  # klent.engine.network.DEVICE_CHOICES
    seed: int | None = None
    name: str = "klent"
    version: str = "0"
    # Judge dead stones by the model's ownership head (when it has one); False counts every
    # stone alive as a model without the head does -- the "before" of a measurement.  It
    # becomes the players' `PlayOptions.judge_dead_stones`.
    judge_dead_stones: bool = True
    # Dyna-2's permanent memory (mode "dyna2"); its board size is then the only one accepted.
    # None: weights_dir/go{N}-td.npz.
    td_weights: Path | None = None


class GtpEngine:
    """The GTP command set over one `Player` per board size."""

    def __init__(self, config: GtpConfig, out: TextIO = sys.stdout) -> None:
        self.config = config
        self.options = replace(config.options, judge_dead_stones=config.judge_dead_stones)
        self.out = out
        self.clock = GameClock(margin=config.time_margin)
        self._players: dict[int, Player] = {}
        self._seed = config.seed  # `set_random_seed` replaces it for every board size
        self._input_ready = threading.Event()  # set while an input line waits to be handled
        self._stream_begun = False  # the streaming command being answered has written its `=` line
        # The board sizes there are files for, fixed for the session (`boardsize` refuses the others).
        self._sizes = go_board_sizes(self.options, config.model, config.weights_dir, config.td_weights)
        self.handlers: dict[str, Callable[[list[str]], str]] = {
            "protocol_version": lambda args: PROTOCOL_VERSION,
            "name": lambda args: config.name,
            "version": lambda args: config.version,
            "known_command": self.cmd_known_command,
            "list_commands": lambda args: "\n".join([*self.handlers, *self.streaming]),
            "quit": lambda args: "",
            "boardsize": self.cmd_boardsize,
            "clear_board": self.cmd_clear_board,
            "komi": self.cmd_komi,
            "play": self.cmd_play,
            "genmove": lambda args: self.cmd_genmove(args, commit=True),
            "reg_genmove": lambda args: self.cmd_genmove(args, commit=False),
            "kgs-genmove_cleanup": lambda args: self.cmd_genmove(args, commit=True, cleanup=True),
            "undo": self.cmd_undo,
            "showboard": lambda args: board_text(self.state),
            "fixed_handicap": lambda args: self.cmd_handicap(args, self.game.fixed_handicap_points),
            "place_free_handicap": lambda args: self.cmd_handicap(args, self.game.free_handicap_points),
            "set_free_handicap": self.cmd_set_free_handicap,
            "set_random_seed": self.cmd_set_random_seed,
            "time_settings": self.cmd_time_settings,
            "kgs-time_settings": self.cmd_kgs_time_settings,
            "time_left": self.cmd_time_left,
            "final_score": lambda args: result_text(self._judged(self.state).judged),
            "final_status_list": self.cmd_final_status_list,
            "loadsgf": self.cmd_loadsgf,
            "printsgf": self.cmd_printsgf,
        }
        # Commands whose reply is written while they run (analysis streams).
        self.streaming: dict[str, Callable[[str, list[str]], None]] = {
            "lz-analyze": lambda cid, args: self.stream_analyze(cid, args, "lz"),
            "kata-analyze": lambda cid, args: self.stream_analyze(cid, args, "kata"),
            "lz-genmove_analyze": lambda cid, args: self.stream_genmove_analyze(cid, args, "lz"),
            "kata-genmove_analyze": lambda cid, args: self.stream_genmove_analyze(cid, args, "kata"),
        }
        # set when the controller closed its end mid-session (`run`)
        self.controller_gone = False
        self.game = GoGame(self._default_size())
        self._new_game(self.game.initial_state())

    # --- session --------------------------------------------------------------------------

    def run(self, stdin: BinaryIO) -> int:
        """Serve commands from ``stdin`` until ``quit`` or end of input; returns the exit status."""
        lines = LineReader(stdin, self._input_ready)
        try:
            while (line := lines.get()) is not None:
                if self.handle_line(line) == "quit":
                    break
        except BrokenPipeError:  # the controller closed its end: nobody is left to answer
            log.info("the controller closed the connection; session ended")
            self.controller_gone = True
        return 0

    def handle_line(self, line: str) -> str | None:
        """Answer one input line on ``self.out``; returns the command name (None if ignored).

        Nothing a command raises ends the engine.  A `GtpError` is the command's refusal, its
        ``? message``; any other exception is a fault of ours (or of a model), which is logged
        on stderr with its traceback and answered ``? message`` all the same.  A streaming
        command that fails after its ``=`` line has begun cannot turn into ``?``: its reply is
        ended with the empty line, and the error logged.
        """
        if line.endswith(TOO_LONG):
            command = parse(line[: -len(TOO_LONG)])
            self._write(format_reply(command.id if command else "", "command line too long", ok=False))
            return ""
        command = parse(line)
        if command is None:
            return None
        self._stream_begun = False
        try:
            if command.name in self.streaming:
                self.streaming[command.name](command.id, command.args)
            else:
                self._write(self.execute(command))
        except BrokenPipeError:
            raise  # not the command's fault: the controller is gone, and `run` ends the session
        except Exception as error:  # noqa: BLE001 - whatever goes wrong, the engine keeps serving
            message = " ".join(str(error).split()) or type(error).__name__
            if not isinstance(error, GtpError):
                log.exception("%s failed", command.name)
            if self._stream_begun:
                if isinstance(error, GtpError):
                    log.error("%s failed: %s", command.name, message)
                self._write("\n")
            else:
                self._write(format_reply(command.id, message, ok=False))
        return command.name

    def execute(self, command: Command) -> str:
        """The complete reply to a non-streaming command; raises what its handler raises."""
        handler = self.handlers.get(command.name)
        if handler is None:
            return format_reply(command.id, "unknown command", ok=False)
        return format_reply(command.id, handler(command.args))

    def _begin_stream(self, cid: str) -> None:
        """Write a streaming command's ``=`` line: from here on it cannot answer ``?``."""
        self._stream_begun = True
        self._write(reply_head(cid) + "\n")

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    # --- game, position and model ---------------------------------------------------------

    def _default_size(self) -> int:
        """19 if there is a model for it, else 9 if there is one for 9, else the smallest (the
        files are Dyna-2's weights in mode "dyna2"; TD search needs none)."""
        if not self._sizes or DEFAULT_SIZE in self._sizes:
            return DEFAULT_SIZE
        return 9 if 9 in self._sizes else self._sizes[0]

    def _new_game(self, state: GoState) -> None:
        """Start afresh from ``state`` (an empty board, or a position read from an SGF record)."""
        self.game = state.game
        self.state = state
        self.history: list[GoState] = []  # states before each change, for `undo`
        resign = self.config.resign_threshold, self.config.resign_moves
        self._resign = {colour: ResignTracker.from_winrate(*resign) for colour in (0, 1)}

    def _commit(self, state: GoState) -> None:
        """Make ``state`` current, remembering the old one for `undo`."""
        self.history.append(self.state)
        self.state = state

    def _line_for(self, colour: int) -> GoState:
        """The position from which ``colour`` moves next.

        The current game line when it is ``colour``'s turn in a game not over; otherwise a
        set-up position of the current board with ``colour`` to move.
        """
        state = self.state
        if state.to_play == colour and not state.is_terminal:
            return state
        return self.game.board_position(state, colour)

    def _play(self, colour: int, action: int) -> None:
        """Play ``action`` for ``colour``; raises `IllegalMoveError` before anything changes."""
        self._commit(self._line_for(colour).play(action))

    def player(self, state: GoState) -> Player:
        """The player for this board size, loaded on first use, set to ``state``'s line."""
        player = self._players.get(self.game.size)
        if player is None:
            try:
                player = Player.load(
                    self.game,
                    model=self.config.model,
                    weights_dir=self.config.weights_dir,
                    options=self.options,
                    threads=self.config.threads,
                    device=self.config.device,
                    seed=self._seed,
                    td_weights=self.config.td_weights,
                )
            except (OSError, ValueError) as error:  # every load failure (`Player.load`)
                raise GtpError(f"cannot load model: {error}") from None
            self._players[self.game.size] = player
        player.set_position(state.start(), state.moves())
        return player

    def _vertex(self, text: str) -> int:
        try:
            return self.game.parse_vertex(text)
        except GameFormatError:
            raise GtpError("invalid coordinate") from None

    # --- commands: administration and setup -----------------------------------------------

    def cmd_known_command(self, args: list[str]) -> str:
        name = one_arg(args).lower()
        return "true" if name in self.handlers or name in self.streaming else "false"

    def cmd_boardsize(self, args: list[str]) -> str:
        try:
            size = gtp_int(one_arg(args))
        except ValueError:
            raise GtpError("syntax error") from None
        if size not in self._sizes:
            raise GtpError("unacceptable size")
        self._new_game(GoGame(size, self.game.komi).initial_state())
        return ""

    def cmd_clear_board(self, args: list[str]) -> str:
        self._new_game(self.game.initial_state())
        return ""

    def cmd_komi(self, args: list[str]) -> str:
        try:
            komi = gtp_float(one_arg(args))
        except ValueError:
            raise GtpError("syntax error") from None
        if abs(komi) > MAX_KOMI:
            raise GtpError(f"syntax error (komi must be between {-MAX_KOMI:g} and {MAX_KOMI:g})")
        if komi != self.game.komi:
            self.game = self.game.with_komi(komi)
            self.state = self.game.replay(self.state)
            self.history = [self.game.replay(state) for state in self.history]
        return ""

    def cmd_play(self, args: list[str]) -> str:
        if len(args) != 2:
            raise GtpError("syntax error")
        colour = parse_colour(args[0])
        action = self._vertex(args[1])
        try:
            self._play(colour, action)
        except IllegalMoveError:
            raise GtpError("illegal move") from None
        return ""

    def cmd_undo(self, args: list[str]) -> str:
        if args:
            raise GtpError("syntax error")
        if not self.history:
            raise GtpError("cannot undo")
        self.state = self.history.pop()
        return ""

    def cmd_handicap(self, args: list[str], layout: Callable[[int], list[int]]) -> str:
        """``fixed_handicap`` and ``place_free_handicap``: the stones where ``layout`` puts them."""
        self._check_empty_board()
        try:
            count = gtp_int(one_arg(args))
        except ValueError:
            raise GtpError("syntax error") from None
        try:
            points = layout(count)
        except ValueError:
            raise GtpError("invalid number of stones") from None
        return self._place_handicap(points)

    def cmd_set_free_handicap(self, args: list[str]) -> str:
        self._check_empty_board()
        try:
            points = [self.game.parse_vertex(text) for text in args]
        except GameFormatError:
            raise GtpError("bad vertex list") from None
        distinct = len(set(points)) == len(points)
        if len(points) < 2 or not distinct or len(points) >= self.game.pass_action or self.game.pass_action in points:
            raise GtpError("bad vertex list")
        self._place_handicap(points)
        return ""

    def _check_empty_board(self) -> None:
        if self.state.board().any():
            raise GtpError("board not empty")

    def _place_handicap(self, points: list[int]) -> str:
        self._commit(self.game.setup_state(black=points, to_play=1))
        return " ".join(self.game.vertex(p) for p in points)

    def cmd_set_random_seed(self, args: list[str]) -> str:
        """GNU Go's command: the seed of the random choices (``--gumbel-scale`` noise, TD
        search), so that a match that sends each game's seed replays its games."""
        try:
            seed = gtp_int(one_arg(args))
        except ValueError:
            raise GtpError("syntax error") from None
        self._seed = seed
        for player in self._players.values():
            player.reseed(seed)
        return ""

    # --- commands: time -------------------------------------------------------------------

    def cmd_time_settings(self, args: list[str]) -> str:
        if len(args) != 3:
            raise GtpError("syntax error")
        try:
            settings = gtp_time_settings(gtp_float(args[0]), gtp_float(args[1]), gtp_int(args[2]))
        except ValueError:
            raise GtpError("syntax error") from None
        self.clock.reset(settings)
        return ""

    def cmd_kgs_time_settings(self, args: list[str]) -> str:
        try:
            settings = kgs_time_settings(args)
        except ValueError as error:
            raise GtpError(f"syntax error ({error})") from None
        self.clock.reset(settings)
        return ""

    def cmd_time_left(self, args: list[str]) -> str:
        if len(args) != 3:
            raise GtpError("syntax error")
        colour = parse_colour(args[0])
        try:
            self.clock.time_left(colour, gtp_float(args[1]), gtp_int(args[2]))
        except ValueError:
            raise GtpError("syntax error") from None
        return ""

    # --- commands: moves ------------------------------------------------------------------

    def cmd_genmove(self, args: list[str], commit: bool, cleanup: bool = False) -> str:
        colour = parse_colour(one_arg(args))
        _, action = self._choose(colour, cleanup=cleanup)
        return self._finish_move(colour, action, commit)

    def _finish_move(self, colour: int, action: int | None, commit: bool) -> str:
        """Play the chosen action (None = resign) and return its GTP text."""
        if action is None:
            return "resign"
        if commit:
            self._play(colour, action)
        return self.game.vertex(action)

    def _choose(self, colour: int, cleanup: bool = False, analysed: bool = False) -> tuple[Decision, int | None]:
        """The decision for ``colour``'s move now (Go's move rules applied by the `Player`) and
        the move to play (None: resign).

        ``analysed``: the decision lists every legal move (for an analysis line), not the top few.
        """
        state = self._line_for(colour)
        player = self.player(state)
        budget = self.clock.budget(colour, empty_points=int((state.board() == 0).sum()))
        options = replace(self.options.within(budget), cleanup=cleanup)
        if analysed:
            options = replace(options, top_moves=self.game.num_actions)
        try:
            decision = player.decide(options)
        except ModelOutputError as error:
            raise GtpError(f"cannot choose a move: {error}") from None
        self.clock.spend(colour, decision.elapsed)
        if (decision.rule is not MoveRule.PASS_WINS and self._resign[colour].should_resign(decision.value)
                and not self._ahead_on_count(player)):
            return decision, None
        return decision, decision.action

    def _ahead_on_count(self, player: Player) -> bool:
        """Whether the ownership head's count, with this game's komi, has the side to move
        ahead: then a value that reads as lost is not trusted to resign (a handicap game at komi
        0.5, which the network's values do not see)."""
        try:
            lead = player.counted_lead()
        except ModelOutputError:
            return False
        return lead is not None and lead > 0

    def _judged(self, state: GoState) -> Judgement:
        """``state`` as a referee counts it (`Player.judged`); every stone alive when no model
        loads or the model fails on ``state``, so that the scoring commands still answer then."""
        try:
            return self.player(state).judged()
        except (GtpError, ModelOutputError):
            return Judgement.all_alive(state)

    # --- commands: scoring and records ----------------------------------------------------

    def cmd_final_status_list(self, args: list[str]) -> str:
        status = one_arg(args).lower()
        if status not in ("alive", "dead", "seki"):
            raise GtpError("syntax error")
        if status == "seki":
            return ""
        chains = self._judged(self.state).chains(dead=status == "dead")
        return "\n".join(" ".join(self.game.vertex(p) for p in chain) for chain in chains)

    def cmd_loadsgf(self, args: list[str]) -> str:
        if not 1 <= len(args) <= 2:
            raise GtpError("syntax error")
        try:
            move_number = gtp_int(args[1]) if len(args) == 2 else None
        except ValueError:
            raise GtpError("syntax error") from None
        record = load_record(args[0])
        if record.game.size not in self._sizes:
            raise GtpError("cannot load file (unacceptable size)")
        # "loadsgf file n": the position before move n is played, i.e. after n - 1 moves.
        played = len(record.states) - 1 if move_number is None else min(max(move_number - 1, 0), len(record.states) - 1)
        self._new_game(record.states[played])
        return COLOUR_NAMES[self.state.to_play].lower()

    def cmd_printsgf(self, args: list[str]) -> str:
        if len(args) > 1:
            raise GtpError("syntax error")
        text = write_sgf(self.state)
        if not args:
            return text
        save_record(args[0], text)
        return ""

    # --- analysis -------------------------------------------------------------------------

    def stream_analyze(self, cid: str, args: list[str], style: str) -> None:
        request = analysis_request(args)
        state = self.state if request.colour is None else self._line_for(request.colour)
        if state.is_terminal:
            raise GtpError("the game is over")
        if self.options.mode in TD_MODES:
            raise GtpError("analysis needs a network; this engine plays TD search")
        player = self.player(state)
        self._begin_stream(cid)
        options = replace(self.options, mode="search", gumbel_scale=0.0, top_moves=self.game.num_actions)

        def update(decision: Decision) -> bool:
            self._write(info_line(decision, style, request, player) + "\n")
            return True

        if not self._input_ready.is_set():
            try:
                player.analyse(update, self._input_ready, options, interval=request.interval)
            except ModelOutputError as error:
                raise GtpError(f"cannot analyse: {error}") from None
        self._input_ready.wait()  # with the tree full, the analysis waits for input
        self._write("\n")

    def stream_genmove_analyze(self, cid: str, args: list[str], style: str) -> None:
        request = analysis_request(args)
        if request.colour is None:
            raise GtpError("syntax error (missing colour)")
        self.player(self.state)  # load the model before the reply starts: a failure is then `? ...`
        self._begin_stream(cid)
        decision, action = self._choose(request.colour, analysed=True)
        self._write(info_line(decision, style, request, self.player(self.state)) + "\n")
        self._write(f"play {self._finish_move(request.colour, action, commit=True)}\n\n")
