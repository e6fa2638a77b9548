"""Compile every numba kernel into numba's on-disk cache: `python -m klent.engine.kernels`.

The rules, the Gumbel search and TD search run numba kernels compiled at their first call and
cached next to their source (``cache=True``).  A fresh checkout has no cache, so every process
that plays (each test worker, each `klent gtp` a test starts) compiled the kernels it met, some
of them at once; `make test` runs this once before the suite instead.  Plays a short random game
of every game, a whole one of 9x9 Go under the shipped models' encoder, and runs both searches'
warm-ups.
"""

from __future__ import annotations

import time

import numpy as np

import klent.engine.games
from klent.engine.games.base import Game
from klent.engine.games.go import GoGame
from klent.engine.search.gumbel import warm_up
from klent.engine.search.td import warm_up as warm_up_td

RANDOM_PLIES = 40  # enough plies of each game to reach its captures, promotions and drops
GO_ENCODER = 3  # the shipped Go models' (liberty planes: their own kernel)


def compile_kernels() -> None:
    """Run every kernel once: random plies of every game (its rules and encoder), a whole game
    of 9x9 Go (the count at its end), then the Gumbel search's and TD search's warm-ups."""
    rng = np.random.default_rng(0)
    for name in klent.engine.games.GAME_IDS:
        _play(klent.engine.games.get(name), RANDOM_PLIES, rng)
    _play(GoGame(9, encoder=GO_ENCODER), None, rng)
    warm_up()
    warm_up_td()


def _play(game: Game, plies: int | None, rng: np.random.Generator) -> None:
    """Random moves of ``game`` for ``plies`` plies (None: to its end), encoded at both ends."""
    state = game.initial_state()
    game.encode_batch([state])
    while not state.is_terminal and (plies is None or state.move_number < plies):
        state = state.play(int(rng.choice(state.legal_actions())))
    game.encode_batch([state])


if __name__ == "__main__":
    started = time.perf_counter()
    compile_kernels()
    print(f"numba kernels compiled and cached in {time.perf_counter() - started:.1f} s")
