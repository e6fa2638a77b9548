"""The Go arena: two GTP engines and a referee, kept across games (restarted after a crash).

* Our own rules (`klent.engine.games.go`: positional superko, suicide illegal) judge every
  move; GNU Go, given every move as well, is the referee of the score (``final_score``, Chinese
  area counting, its own dead-stone judgement) when the game ends by two passes or by the move
  cap.  A move the referee refuses, or the opponent refuses, is reported in the game's reason.
* An illegal or unreadable move, a crash, a protocol failure, or a move slower than the time
  per move plus ``grace`` loses the game for the engine at fault.  ``resign`` loses.
* Each engine gets ``time_settings 0 T 1`` (T seconds per move, Canadian byo-yomi of one stone)
  and a ``time_left`` before each move, T in GTP's whole seconds (`gtp_seconds`).
* Each engine and the referee get ``set_random_seed N`` for game N (0-based) where they know the
  command: GNU Go otherwise seeds itself from the clock and chooses among moves it values alike
  at random, so a replayed match would play other games (an engine without the command plays on).
  Without a clock (``time_per_move`` 0) GNU Go then plays game N alike in every match, and
  `klent bench paired` compares two models against the same opponent game by game.
* The record is an SGF.
"""

from __future__ import annotations

import time

import klent.engine.games
from klent.engine.files import write_text_atomically
from klent.engine.games.base import GameFormatError, IllegalMoveError
from klent.engine.games.go import GoGame
from klent.engine.games.sgf import write_sgf
from klent.matchplay.arena import Clock, ProcessArena, short_error
from klent.matchplay.config import DEFAULT_MOVE_TIMEOUT, MatchConfig
from klent.matchplay.engine_process import EngineCrashed, EngineError, EngineTimeout, GtpFailure, GtpProcess
from klent.matchplay.results import GameResult, game_digest


class GoArena(ProcessArena[GtpProcess]):
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
        """The engine's `gtp_engine_name` from its ``name`` and ``version`` (either may be
        missing); its first answer, so a process that cannot play GTP fails here."""
        replies = []
        for command in ("name", "version"):
            try:
                replies.append(process.send(command))
            except GtpFailure:
                replies.append("")
        return gtp_engine_name(*replies)

    def close(self) -> None:
        super().close()
        self.referee.close()

    def game(self, index: int) -> GameResult:
        config = self.config
        rules = self.rules
        first = index % 2
        seat = (first, 1 - first)  # seat[colour] = engine index
        clock = Clock()
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
                self._setup(self._engine(seat[colour]), index, timed=True)
            except EngineError as error:
                return forfeit(colour, f"setup failed: {short_error(error)}", failed=True)
        self._setup(self.referee, index, timed=False)
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
                    return forfeit(who, f"refused the opening's {vertex}: {short_error(error)}",
                                   failed=not isinstance(error, GtpFailure))

        while not state.is_terminal:
            colour = state.to_play
            mover = self._engine(seat[colour])
            colour_word = "bw"[colour]
            if config.time_per_move:
                seconds = gtp_seconds(config.time_per_move)
                try:
                    mover.send_optional(f"time_left {colour_word} {seconds} 1", timeout=timeout)
                except EngineError as error:
                    return forfeit(colour, short_error(error), failed=True)
            start = time.monotonic()
            try:
                reply = mover.send(f"genmove {colour_word}", timeout=timeout).strip().lower()
            except EngineTimeout:
                return forfeit(colour, "timeout", failed=True)
            except EngineCrashed:
                return forfeit(colour, "crash", failed=True)
            except EngineError as error:
                return forfeit(colour, f"genmove failed: {short_error(error)}",
                               failed=not isinstance(error, GtpFailure))
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
                return forfeit(1 - colour, f"refused the opponent's {vertex}: {short_error(error)}",
                               failed=not isinstance(error, GtpFailure))
        score = self.referee.send("final_score", timeout=120.0).strip()
        winner = None if score == "0" else seat[0] if score.upper().startswith("B") else seat[1]
        reason = "move cap" if state.is_truncated else "two passes"
        dead = [0, 0]  # per engine: its stones the referee calls dead
        board = state.board().ravel()
        for vertex in self.referee.send("final_status_list dead", timeout=120.0).split():
            dead[seat[0] if board[rules.parse_vertex(vertex)] == 1 else seat[1]] += 1
        return finish(winner, f"{reason}, referee score", score, dead)

    def _setup(self, process: GtpProcess, index: int, timed: bool) -> None:
        process.send(f"boardsize {self.rules.size}")
        process.send("clear_board")
        process.send(f"komi {self.rules.komi:g}")
        process.send_optional(f"set_random_seed {index}")  # without it an engine keeps its own randomness
        if timed and self.config.time_per_move:
            # an engine without a clock still has to answer in time
            process.send_optional(f"time_settings 0 {gtp_seconds(self.config.time_per_move)} 1")


def gtp_engine_name(name: str, version: str) -> str:
    """The name a GTP engine goes by in records and summaries: its ``name`` and ``version``
    replies, the version's first line up to a ": ".  Pachi's version goes on with a greeting
    for its opponents on KGS ("11.99 (Genjo-devel): If you believe you have won but I am still
    playing, ... Have a nice game!"), which is no part of its name."""
    version = version.strip().partition("\n")[0].partition(": ")[0]
    return f"{name.strip()} {version}".strip()


def gtp_seconds(seconds: float) -> int:
    """A time per move as GTP's time commands take it, whole seconds: rounded down, at least 1
    (within the default grace of a shorter one).  Pachi reads ``1.5`` as 1, and ``0.5`` as a
    byo-yomi of 0 seconds, on which it aborts."""
    return max(1, int(seconds))

