"""The UCI arena: chess, Gardner chess and Animal Shogi between two UCI engines.

* Our rules (`klent.engine.games`) judge every move and end the game, with the draws an engine
  leaves to the arbiter (threefold repetition and the fifty-move rule claimed, the move cap,
  counted from the end of the opening, adjudicated).  Gardner chess and Animal Shogi are
  Fairy-Stockfish's variants ``gardner`` and ``dobutsu``: both engines are set to the variant
  (``setoption name UCI_Variant``; an engine that does not offer it cannot play).
* Each engine gets ``go movetime`` of the time per move, or a search limit of its own
  (``uci_go``: ``depth 2``, ``nodes 400``): a fixed-depth or fixed-node opponent plays the same
  strength however loaded the machine is, which a time per move does not (the anchor of
  `klent.training.anchor` relies on it).  The time per move then only bounds how long such a
  move may take.  A crash, a timeout or an illegal move loses the game.
* The records are PGN: in SAN for chess (python-chess), with the moves in UCI text for the
  variants.
"""

from __future__ import annotations

import time

import klent.engine.games
from klent.engine.files import write_text_atomically
from klent.engine.games.base import GameFormatError, IllegalMoveError, State
from klent.engine.games.board_games import PieceState
from klent.engine.games.chess import ChessState
from klent.matchplay.arena import Clock, ProcessArena, short_error
from klent.matchplay.config import MatchConfig
from klent.matchplay.engine_process import EngineError, EngineTimeout, UciProcess
from klent.matchplay.opening_files import chess_opening
from klent.matchplay.results import GameResult, game_digest
from klent.protocols.uci_variants import uci_variant


class UciArena(ProcessArena[UciProcess]):
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
        clock = Clock()
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
                return finish(1 - who, f"setup failed: {short_error(error)}")
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
