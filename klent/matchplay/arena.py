"""What the Go and the UCI arena share: two engines as subprocesses (`ProcessArena`), the
thinking time each spends (`Clock`), and how an engine's error reads in a game's reason."""

from __future__ import annotations

from typing import Generic, TypeVar

from klent.matchplay.config import MatchConfig
from klent.matchplay.engine_process import EngineError, EngineProcess

E = TypeVar("E", bound=EngineProcess)


class Clock:
    """Thinking time per engine (to report seconds per move)."""

    def __init__(self) -> None:
        self.total = [0.0, 0.0]
        self.moves = [0, 0]

    def add(self, who: int, seconds: float) -> None:
        self.total[who] += seconds
        self.moves[who] += 1

    def per_move(self) -> list[float]:
        return [t / m if m else 0.0 for t, m in zip(self.total, self.moves)]


class ProcessArena(Generic[E]):
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


def short_error(error: Exception) -> str:
    """An engine's error as a game's reason: its first line, at most 200 characters."""
    return str(error).splitlines()[0][:200]
