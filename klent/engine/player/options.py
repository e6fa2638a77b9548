"""How a player decides (`PlayOptions`: the mode, the budget, Go's move rules) and the play defaults
the protocols share."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from klent.engine.search.td import TdConfig

Mode = Literal["reactive", "search", "td", "dyna2"]
PLAY_RESCALE_FLOOR = 2.0  # the Gumbel search's rescaling floor at play for Go and chess (`PlayOptions.rescale_floor`)
CHESS_WAVE_SIZE = 4  # the Gumbel search's waves at play for chess (`PlayOptions.wave_size`)
TD_MODES = ("td", "dyna2")  # the modes of `klent.engine.search.td`, which need no network
FIRST_ANALYSIS_SEARCH = 64  # simulations of the first search of an analysis
# The search tree's memory in MB where a protocol's user sets none (UCI Hash, GTP --memory):
# about 87 000 nodes of chess or 185 000 of 9x9 Go (klent/bench/tree_memory.py).
DEFAULT_MEMORY_MB = 768


@dataclass(frozen=True)
class PlayOptions:
    """How the player decides: reactively, by Gumbel search or by TD search, and within which budget.

    ``mode``: "reactive" (one network call), "search" (Gumbel MCTS), "td" (TD search: Go only,
    no network; ``simulations`` counts simulated games) or "dyna2" (TD search on the player's
    permanent memory, `load_td_weights`).  ``gumbel_scale``, ``temperature`` and ``ponder`` do
    not apply to the TD modes.

    ``gumbel_scale`` is the root Gumbel noise at play time (0: deterministic, the strongest
    choice; 1: varied play as in self-play).  ``temperature`` applies to reactive play only
    (0: argmax of the policy, the paper's reactive player).  ``candidates``, when not empty,
    are the only actions the decision may choose and list (UCI ``searchmoves``; the search
    still looks at every move, as the opponent's replies need them).  ``ponder``: find the
    reply to expect even where the search did not reach it, at the cost of one more network
    call (UCI's ``ponder`` move, asked for only when the GUI ponders).

    Go only: ``go_rules`` applies Go's move rules (`klent.engine.go_rules`) to the network's move;
    ``cleanup`` plays as GTP's ``kgs-genmove_cleanup`` asks (capture the dead stones, do not
    end the game by passing while any can be attacked); ``judge_dead_stones`` judges dead
    stones by the model's ownership head (when it has one) where the rules and `Player.judged`
    count a position, False counts every stone alive (GTP's ``--all-stones-alive``).

    ``memory``: bytes the Gumbel search tree may take (None: unbounded; UCI ``Hash``, GTP
    ``--memory``); a search whose tree is full stops growing it and answers from it.

    ``rescale_floor``: the Gumbel search's floor on the span of completed Q that its min-max
    rescaling divides by (`klent.engine.search.qtransforms`); None: `PLAY_RESCALE_FLOOR` for Go and
    chess, mctx's 1e-8 for the other games.  With mctx's floor, differences of 1e-6 between
    children decide once the value head calls a game won or lost; the whole range of values (2)
    makes the search lean on the policy wherever the values barely differ.  Measured with the
    shipped models (benchmarks/RESULTS.md): on 9x9 Go against GNU Go level 10, 2 beat 1e-8 at
    200 and at 1,000 simulations; in chess head to head, at 64 and at 256 simulations.  The
    small games have not been measured, so they keep mctx's.

    ``wave_size``: the most descents the Gumbel search makes from the root before their leaves
    are evaluated together (`GumbelConfig.wave_size`); None: `CHESS_WAVE_SIZE` for chess,
    `GumbelConfig`'s 32 for the other games.  Larger waves make larger network batches, but
    every descent of a wave chooses its path from the statistics as they were before the wave.
    Measured on a CPU with the shipped models (benchmarks/RESULTS.md): in chess, against
    Stockfish Skill Level 0, waves of 4 beat 32 at 64 and 256 simulations and at equal time
    (0.3 s a move: 0.535 against 0.355); on 9x9 Go against GNU Go level 10 they won a few more
    games at 64 and 200 simulations, within the noise, at 1.2 to 1.4 times the time a move (Go's
    batches pay more), so Go keeps 32.  On a GPU, where a batch of 32 costs little more than
    one, larger waves may pay: unmeasured.

    ``td_root_moves``: the TD modes with a network (Sect. 4 of the TD search paper asks how
    to combine a search with prior knowledge): the greedy choice is made among the network
    policy's ``td_root_moves`` most probable moves, so that the network's sense of shape picks
    the candidates and the position's simulated games pick among them (0: no network, every
    move).  ``td_root_policy``: with ``td_root_moves``, each simulated game's first move is
    also drawn from the network's policy over those candidates (the other way the issue
    names of putting the network in the loop: its policy plays the simulations' first ply, so
    the simulations spend themselves on its candidates), instead of epsilon-greedily on the
    learnt values.  ``td``: the TD modes' parameters (`klent.engine.search.td.TdConfig`: epsilon,
    alpha, lambda, the shapes and their sharing, the greedy moves T; the paper's defaults); its
    ``seed``, when None, is the player's.  A move asked with other parameters than the last
    starts a new transient memory.
    """

    mode: Mode = "search"
    simulations: int | None = 200
    time: float | None = None
    gumbel_scale: float = 0.0
    temperature: float = 0.0
    top_moves: int = 10
    candidates: tuple[int, ...] = ()
    ponder: bool = False
    go_rules: bool = True
    cleanup: bool = False
    judge_dead_stones: bool = True
    memory: int | None = None
    td_root_moves: int = 0
    td_root_policy: bool = False
    td: TdConfig = TdConfig()
    rescale_floor: float | None = None
    wave_size: int | None = None

    def __post_init__(self) -> None:
        if self.rescale_floor is not None and not 0.0 < self.rescale_floor <= 2.0:
            raise ValueError(f"rescale_floor must be within (0, 2], got {self.rescale_floor}")
        if self.wave_size is not None and self.wave_size < 1:
            raise ValueError(f"wave_size must be >= 1, got {self.wave_size}")
        if self.td_root_moves < 0:
            raise ValueError(f"td_root_moves must be >= 0, got {self.td_root_moves}")
        if self.td_root_policy and not self.td_root_moves:
            raise ValueError("td_root_policy draws from the network's candidates: it needs td_root_moves")
        if self.mode not in ("reactive", "search", *TD_MODES):
            raise ValueError(f"mode must be 'reactive', 'search', 'td' or 'dyna2', got {self.mode!r}")
        if self.cleanup and not self.go_rules:
            raise ValueError("cleanup is one of Go's move rules: it needs go_rules")
        if self.mode != "reactive" and self.simulations is None and self.time is None:
            raise ValueError(f"{self.mode} needs a number of simulations or a time budget")

    def within(self, budget: float | None) -> PlayOptions:
        """These options for a move that may think ``budget`` seconds (a clock's, None: no
        limit): a search within the budget (and within ``time``); out of time, the network's one
        call, or TD search's choice on what its memory already knows.  Reactive play is not
        timed."""
        if self.mode == "reactive" or budget is None:
            return self
        if budget <= 0:
            return replace(self, simulations=0) if self.mode in TD_MODES else replace(self, mode="reactive")
        return replace(self, time=budget if self.time is None else min(budget, self.time))


DEFAULT_OPTIONS = PlayOptions()  # a player's options where none are given
