"""The one facade every protocol calls: a position and limits in, a move and its analysis out.

GTP, UCI, the HTTP server and the lichess bridge all play through a `Player`, so reactive
play, Gumbel search, tree reuse and the move analysis behave the same everywhere.  A player
holds the current position as an initial state plus the actions played from it; setting a
position that extends the previous one by a few actions keeps the search tree of the moves in
between (tree reuse), anything else starts a fresh tree.  `Player.decide` chooses one move;
`Player.analyse` keeps searching the same tree and reports as it goes (UCI ``go infinite``,
GTP ``lz-analyze``).  In Go the player applies Go's move rules to every move it decides
(`klent.engine.go_rules`: pass only when passing cannot lose, no filling of its own eyes, cleanup),
so every protocol plays Go the same way, and `Player.judged` counts a position as a referee
would (GTP's ``final_score``).

Go can also be played by TD search and Dyna-2 (modes "td" and "dyna2", `klent.engine.search.td`),
which learn a value function from games simulated during the move and need no network: a
player keeps one `TdSearch` per mode, so that its transient memory is carried from move to
move of a game (the paper's condition for its strength) and forgotten at a new game.

Protocols reach the engine through this module and `klent.engine.games` only: besides the player,
it offers the few engine services a protocol needs (`read_model_info`, `ResignTracker`,
`move_budget`, `clock_budget`, `go_board_sizes`, `default_threads`, `MAX_THREADS`,
`ModelOutputError`, `write_text_atomically`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from time import perf_counter
from typing import Literal

import numpy as np

from klent.engine.files import write_text_atomically
from klent.engine.games.base import Game, IllegalMoveError, State
from klent.engine.games.go import MAX_SIZE, MIN_SIZE, GoGame, GoState
from klent.engine.go_rules import Judgement, MoveRule, MoveRules, judge
from klent.engine.network import (
    DEVICE_CHOICES,
    MAX_THREADS,
    PRECISIONS,
    Evaluator,
    ModelInfo,
    ModelOutputError,
    OnnxEvaluator,
    default_threads,
    model_at_precision,
    read_model_info,
    softmax,
)
from klent.engine.resign import ResignTracker
from klent.engine.search.gumbel import GumbelConfig, UniformEvaluator, search, warm_up
from klent.engine.search.limits import SearchLimits
from klent.engine.search.qtransforms import RESCALE_EPSILON
from klent.engine.search.reactive import reactive
from klent.engine.search.result import SearchResult
from klent.engine.search.td import ShapeWeights, TdConfig, TdResult, TdSearch
from klent.engine.search.td import warm_up as warm_up_td
from klent.engine.search.tree import SearchTree
from klent.engine.tablebase import MAX_PIECES as SYZYGY_MAX_PIECES
from klent.engine.tablebase import RootProbe, Tablebase, TablebaseEvaluator, default_syzygy_path, probe_root
from klent.engine.timecontrol import GameClock, TimeSettings, clock_budget, move_budget

__all__ = [
    "DEFAULT_WEIGHTS_DIR", "DEVICE_CHOICES", "PRECISIONS", "Decision", "GameClock", "Judgement", "ModelInfo",
    "MAX_THREADS", "ModelOutputError",
    "MoveRule", "MoveStat", "Ownership", "PlayOptions", "Player", "ResignTracker", "ShapeWeights", "TD_MODES",
    "TimeSettings", "SYZYGY_MAX_PIECES", "Tablebase", "default_syzygy_path",
    "clock_budget", "default_threads", "go_board_sizes", "load_td_weights", "model_path_for", "move_budget",
    "read_model_info", "td_weights_path_for", "write_text_atomically",
]

Mode = Literal["reactive", "search", "td", "dyna2"]
PLAY_RESCALE_FLOOR = 2.0  # the Gumbel search's rescaling floor at play for Go and chess (`PlayOptions.rescale_floor`)
CHESS_WAVE_SIZE = 4  # the Gumbel search's waves at play for chess (`PlayOptions.wave_size`)
TD_MODES = ("td", "dyna2")  # the modes of `klent.engine.search.td`, which need no network


def _shipped_weights_dir() -> Path:
    """Where the shipped models are: ``klent/weights`` after a regular install (pyproject's
    package data), else ``weights/`` at the root of the source tree (a checkout, and editable
    installs, which run from it)."""
    package_dir = Path(__file__).resolve().parent.parent
    installed = package_dir / "weights"
    return installed if installed.is_dir() else package_dir.parent / "weights"


DEFAULT_WEIGHTS_DIR = _shipped_weights_dir()
FIRST_ANALYSIS_SEARCH = 64  # simulations of the first search of an analysis
JUDGE_SIMULATIONS = 400  # simulated games that judge dead stones for a player without a network
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


@dataclass(frozen=True)
class MoveStat:
    """One candidate move of an analysis, seen from the side to move."""

    action: int
    move: str
    prior: float  # network policy probability
    q: float  # action value in [-1, 1] (searched value when visited)
    visits: int  # visits in the search tree, including those kept from earlier searches
    policy: float  # improved policy probability (the engine's preference after search)
    pv: list[str] = field(default_factory=list)
    outcome: float | None = None  # the result ``pv`` reaches, +1 won to -1 lost; None: the game goes on
    pv_visits: list[int] = field(default_factory=list)  # visits of each move of ``pv`` in the tree
    proven: bool = False  # ``q`` is the endgame tables' exact win, draw or loss, not an estimate

    @property
    def winrate(self) -> float:
        """``q`` mapped to [0, 1] (what Go GUIs call the win rate)."""
        return _winrate(self.q)


@dataclass(frozen=True)
class Decision:
    """A chosen move with the analysis behind it."""

    action: int
    move: str
    value: float  # value of the position for the side to move, in [-1, 1]
    top_moves: list[MoveStat]  # the chosen move first, then by visits
    pv: list[str]  # the chosen move's principal variation
    simulations: int
    elapsed: float
    result: SearchResult
    ponder: str | None  # the reply to expect (the PV's second move, else the policy's choice)
    seldepth: int  # plies to the deepest position searched, at least the PV's length
    visits: int  # visits of the searched tree, inherited ones included (0 for reactive play)
    rule: MoveRule | None = None  # the Go move rule that chose the move instead of the network
    outcome: float | None = None  # the result ``pv`` reaches, +1 won to -1 lost; None: the game goes on

    @property
    def depth(self) -> int:
        """Plies of the principal variation (UCI's ``depth``)."""
        return len(self.pv)

    @property
    def winrate(self) -> float:
        """Value mapped to [0, 1] (what Go GUIs call the win rate)."""
        return _winrate(self.value)


@dataclass(frozen=True)
class Ownership:
    """The network's view of how a Go game ends from a position: each point's owner
    (float32[H, W] in [-1, 1], +1 = the side to move's) and the final score in points for the
    side to move (None for a model without a score head)."""

    owner: np.ndarray
    score: float | None


def model_path_for(game: Game, weights_dir: str | Path = DEFAULT_WEIGHTS_DIR) -> Path:
    """Where the shipped model of ``game`` lives: ``weights/<game name>.onnx``."""
    return Path(weights_dir) / f"{game.name}.onnx"


def td_weights_path_for(game: Game, weights_dir: str | Path = DEFAULT_WEIGHTS_DIR) -> Path:
    """Where Dyna-2's permanent memory for ``game`` lives: ``weights/<game name>-td.npz``."""
    return Path(weights_dir) / f"{game.name}-td.npz"


def load_td_weights(
    game: Game, path: str | Path | None = None, weights_dir: str | Path = DEFAULT_WEIGHTS_DIR
) -> ShapeWeights:
    """Dyna-2's permanent memory for ``game``, from ``path`` or `td_weights_path_for`.

    Raises FileNotFoundError when the file does not exist, and ValueError when it is not a
    TD weights file or holds weights for another game.
    """
    path = Path(path) if path is not None else td_weights_path_for(game, weights_dir)
    if not path.is_file():
        raise FileNotFoundError(
            f"no Dyna-2 weights for {game.name}: {path} does not exist (`klent train --algo td-learning` makes them)"
        )
    weights = ShapeWeights.load(path)
    if f"go{weights.size}" != game.name:
        raise ValueError(f"{path} holds Dyna-2 weights for go{weights.size}, not for {game.name}")
    return weights


def go_board_sizes(
    options: PlayOptions = PlayOptions(),
    model: str | Path | None = None,
    weights_dir: str | Path = DEFAULT_WEIGHTS_DIR,
    td_weights: str | Path | None = None,
) -> list[int]:
    """The Go board sizes `Player.load` can play with these arguments, smallest first.

    A front end that plays Go on any board (GTP's ``boardsize``) must refuse a size before the
    game starts, not fail at its first move, so it asks which files `Player.load` would find:
    the sizes of the model (its own, and those a model with dynamic board axes lists) or the
    one of the Dyna-2 weights file given, else each size whose model (or in
    mode "dyna2", whose Dyna-2 weights) is in ``weights_dir``; every size for TD search, which
    needs no file.  Raises ValueError when the file given is not for Go.
    """
    if options.mode == "dyna2" and td_weights is not None:
        sizes = [ShapeWeights.load(td_weights).size]
    elif model is not None and (options.mode not in TD_MODES or options.td_root_moves):
        info = read_model_info(model)
        if not info.game.startswith("go") or not info.game[2:].isdigit():
            raise ValueError(f"{model} is a model for {info.game}, not for Go")
        sizes = sorted({int(info.game[2:]), *info.board_sizes})
    elif options.mode == "td":
        sizes = list(range(MIN_SIZE, MAX_SIZE + 1))
    else:
        path_for = td_weights_path_for if options.mode == "dyna2" else model_path_for
        sizes = [size for size in range(MIN_SIZE, MAX_SIZE + 1) if path_for(GoGame(size), weights_dir).is_file()]
    return [size for size in sizes if MIN_SIZE <= size <= MAX_SIZE]


class Player:
    """Holds a position and the model of its game, and decides moves in it."""

    def __init__(
        self,
        evaluator: Evaluator | None,
        options: PlayOptions = PlayOptions(),
        seed: int | None = None,
        *,
        game: Game | None = None,
        permanent: ShapeWeights | None = None,
    ) -> None:
        """``evaluator`` is the game's network; without one (None, with the ``game``) the player
        plays the TD modes only.  ``permanent`` is Dyna-2's permanent memory (mode "dyna2")."""
        game = evaluator.game if evaluator is not None else game
        if game is None:
            raise ValueError("a player without a network needs its game")
        if evaluator is None and options.mode not in TD_MODES:
            raise ValueError(f"mode {options.mode!r} needs a network: only the TD modes play without one")
        self.evaluator = evaluator
        self.game: Game = game
        self.options = options
        self.permanent = permanent
        self._seed = seed
        self._td: dict[str, TdSearch] = {}  # by mode: each keeps its transient memory for the game
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()
        self._initial: State = self.game.initial_state()
        self._actions: list[int] = []
        self._state: State = self._initial
        self._tree: SearchTree | None = None
        self._tree_actions: list[int] = []
        # Chess endgame tables (`klent.engine.tablebase`): WDL in the search's leaves, DTZ at the root.
        self.tablebase: Tablebase | None = None
        # Once per process each, so that no move's time budget pays for loading the kernels.
        if evaluator is not None:
            warm_up()
        if options.mode in TD_MODES:
            self._td_search(options.mode)  # a game or weights it cannot play are refused now
            warm_up_td()

    @property
    def value_scale(self) -> str:
        """What the model's values in [-1, 1] measure: "outcome" (an expected result, W - L:
        self-play, or a teacher's WDL) or "centipawns" (a teacher's centipawn score squashed,
        tanh(cp / 543): chess distilled with ``klent distill label --value cp``), as its
        training info says.  A protocol that shows centipawns converts back by it."""
        info = getattr(self.evaluator, "info", None)
        return str(info.training.get("value_scale", "outcome")) if info is not None else "outcome"

    @classmethod
    def load(
        cls,
        game: Game,
        model: str | Path | None = None,
        weights_dir: str | Path = DEFAULT_WEIGHTS_DIR,
        options: PlayOptions = PlayOptions(),
        threads: int | None = None,
        seed: int | None = None,
        td_weights: str | Path | None = None,
        precision: str = "float32",
        device: str = "auto",
    ) -> Player:
        """A player for ``game`` with the model at ``model`` or the shipped one in ``weights_dir``,
        or, at ``precision`` "int8", that model's quantized sibling (`model_at_precision`), run
        on ``device`` (`klent.engine.network.DEVICE_CHOICES`; default: the GPU when there is one).

        Raises FileNotFoundError when there is no model, and a ValueError subclass when the
        model cannot play (trained for another game or encoder version, not a klent model, one
        ONNX Runtime cannot load or evaluate; `klent.engine.network.OnnxEvaluator`).  The TD modes load no model
        (unless ``td_root_moves`` asks for the network's candidates); "dyna2" loads its
        permanent memory from ``td_weights`` or ``weights_dir`` (`load_td_weights`).
        """
        permanent = load_td_weights(game, td_weights, weights_dir) if options.mode == "dyna2" else None
        if options.mode in TD_MODES and not options.td_root_moves:
            return cls(None, options=options, seed=seed, game=game, permanent=permanent)
        path = Path(model) if model is not None else model_path_for(game, weights_dir)
        if not path.is_file():
            raise FileNotFoundError(f"no model for {game.name}: {path} does not exist")
        path = Path(model_at_precision(path, precision))
        evaluator = OnnxEvaluator(path, game=game, device=device, threads=threads)
        return cls(evaluator, options=options, seed=seed, permanent=permanent)

    @classmethod
    def without_model(cls, game: Game, options: PlayOptions = PlayOptions(), seed: int | None = None) -> Player:
        """A player for a game that has no model yet: its search sees a uniform policy and a
        value of 0 wherever the game goes on, so only the game ends within its reach guide it.

        Weak, but it plays legal moves and takes (or avoids) a mate in sight, which is what a
        front end needs to stay in a game (a UCI GUI switching to a variant that ships no
        model) rather than having no move to give.
        """
        return cls(UniformEvaluator(game), options=options, seed=seed)

    @property
    def state(self) -> State:
        """The current position."""
        return self._state

    @property
    def initial_state(self) -> State:
        return self._initial

    @property
    def actions(self) -> list[int]:
        """Actions played from the initial state to the current position."""
        return list(self._actions)

    def set_position(self, initial: State, actions: Sequence[int] = (), state: State | None = None) -> State:
        """Make ``initial`` followed by ``actions`` the current position and return it.

        Raises `IllegalMoveError` (and changes nothing) if an action is illegal.  The search
        tree is kept when the new position extends the one the tree was built for.  ``state``,
        when given, is the position after ``actions``, which a caller that read the moves
        already has (UCI's ``position``): a long record is then not played again.
        """
        if state is None:
            state = initial
            for action in actions:
                state = state.play_in_record(int(action))
        with self._lock:
            if initial is not self._initial:  # a new game or another position: nothing carries over
                self._tree = None
                for td_search in self._td.values():
                    td_search.new_game()
            self._initial = initial
            self._actions = [int(a) for a in actions]
            self._state = state
        return state

    def play(self, action: int) -> State:
        """Play ``action`` in the current position (tree kept)."""
        return self.set_position(self._initial, [*self._actions, int(action)])

    def undo(self, count: int = 1) -> State:
        """Take back the last ``count`` actions; raises IndexError if there are not enough."""
        if count > len(self._actions):
            raise IndexError(f"cannot undo {count} moves: only {len(self._actions)} played")
        return self.set_position(self._initial, self._actions[: len(self._actions) - count])

    def ownership_after(self, actions: Sequence[int]) -> list[Ownership] | None:
        """The model's ownership and score of the position after each of ``actions`` (moves in
        the current position), seen from the current side to move, in one batched network call;
        None for a model without an ownership head or a player without a network.  An analysis
        reports them beside each candidate move (KataGo's per-move ``ownership`` and score)."""
        if self.evaluator is None or not actions:
            return None
        evaluation = self.evaluator.evaluate([self._state.play(int(a)) for a in actions])
        if evaluation.ownership is None:
            return None
        scores = [None] * len(actions) if evaluation.score is None else [-float(v) for v in evaluation.score]
        return [Ownership(owner=-owner, score=score) for owner, score in zip(evaluation.ownership, scores)]

    def counted_lead(self) -> float | None:
        """The points the side to move leads by when the game ends as the ownership head
        predicts it (each point counted for its predicted owner), with this game's komi; None
        without an ownership or outside Go.  The network's values do not see the komi (handicap
        games are played at komi 0.5, the models were trained at 7.5); this count does."""
        ownership = self.ownership() if isinstance(self._state, GoState) else None
        if ownership is None:
            return None
        komi = self._state.game.komi
        return float(ownership.owner.sum()) + (-komi if self._state.to_play == 0 else komi)

    def ownership(self) -> Ownership | None:
        """The model's ownership (and score) of the current position, one network call; None
        for a model without an ownership head.  Dead stones are judged by it (`judged`), and
        the web page and GTP's ``kata-analyze`` show it.  A player without a network simulates
        games instead (`_simulated_ownership`)."""
        return self._ownership(self._state)

    def judged(self) -> Judgement:
        """The current Go position as a referee counts it (GTP's ``final_score`` and
        ``final_status_list``): the chains the model's ownership head calls dead removed; every
        stone alive for a model without that head or without ``judge_dead_stones``.  One
        network call (none without judging)."""
        return self._judgement(_go_state(self._state), self.options)

    def _ownership(self, state: State) -> Ownership | None:
        if self.evaluator is None:
            return self._simulated_ownership(_go_state(state))
        evaluation = self.evaluator.evaluate([state])  # a finished game's too
        if evaluation.ownership is None:
            return None
        score = None if evaluation.score is None else float(evaluation.score[0])
        return Ownership(owner=evaluation.ownership[0], score=score)

    def _simulated_ownership(self, state: GoState) -> Ownership | None:
        """Each point's mean final owner over `JUDGE_SIMULATIONS` games simulated from ``state``
        (from its board, with the same side to move, once the game is over): dead stones judged
        by playouts, as Monte-Carlo programs judge them.  A search of its own runs them, so the
        game's transient memory is left as it was."""
        if state.is_terminal:
            state = state.game.board_position(state, state.to_play)
        judge_search = TdSearch(state.game, TdConfig(seed=self._seed), self.permanent)
        owner = judge_search.choose(state, simulations=JUDGE_SIMULATIONS).ownership
        return None if owner is None else Ownership(owner=owner, score=None)

    def _owner(self, state: State) -> np.ndarray | None:
        ownership = self._ownership(state)
        return None if ownership is None else ownership.owner

    def _judgement(self, state: GoState, opts: PlayOptions) -> Judgement:
        return judge(state, self._owner(state) if opts.judge_dead_stones else None)

    def decide(
        self,
        options: PlayOptions | None = None,
        stop: threading.Event | None = None,
    ) -> Decision:
        """Choose a move in the current position (which stays unchanged).

        ``options`` overrides the player's defaults for this call; ``stop`` ends a search
        early (within one network batch, or one simulated game of TD search) with the best move
        found so far.  In Go, Go's move rules may replace the network's move (``Decision.rule``
        says which did); a pass that ends a won game is decided without a search, its analysis
        then the reactive one.  TD search always searches, since its simulated games judge the
        dead stones for those rules (and teach the transient memory the position).
        """
        opts = options or self.options
        state = self._state
        if state.is_terminal:
            raise IllegalMoveError("the game is over: there is no move to choose")
        table = probe_root(self.tablebase, state) if self.tablebase is not None else None
        if table is not None:  # the endgame tables choose the moves; the search, among them
            best = [a for a in table.best if a in opts.candidates] if opts.candidates else table.best
            opts = replace(opts, candidates=tuple(best) or opts.candidates)
            return _with_table_values(self._decide(state, opts, stop), table)
        return self._decide(state, opts, stop)

    def _decide(self, state: State, opts: PlayOptions, stop: threading.Event | None) -> Decision:
        if opts.mode in TD_MODES:
            result = self._td_choose(state, opts, stop)
            rules = self._go_rules(state, opts, lambda: result.ownership)
        else:
            rules = self._go_rules(state, opts, lambda: self._owner(state))
            result = self._network_choose(state, opts, stop, quick=rules is not None and rules.passes_at_once())
        if rules is not None and rules.passes_at_once():
            return self._decision(state, result, opts, rules.state.game.pass_action, MoveRule.PASS_WINS)
        action, rule = (result.action, None) if rules is None else rules.choose(result)
        return self._decision(state, result, opts, action, rule)

    def analyse(
        self,
        on_update: Callable[[Decision], bool],
        stop: threading.Event,
        options: PlayOptions | None = None,
        *,
        simulations: int | None = None,
        time: float | None = None,
        interval: float = 1.0,
        first: int = FIRST_ANALYSIS_SEARCH,
    ) -> Decision:
        """Search the current position again and again on one tree, reporting after each search.

        Sequential Halving plans a search from its budget, so an open-ended analysis is a
        series of searches on the same tree (tree reuse makes each continue where the last
        stopped): the first of ``first`` simulations (a smaller one reports sooner), each next
        one twice as large until one takes about ``interval`` seconds.  ``on_update`` gets each search's
        decision (whose visits are the tree's, so they grow) and returns False to end the
        analysis.  It also ends once ``stop`` is set, after ``simulations`` simulations in all,
        after ``time`` seconds, after the one network call of reactive play, or when a search
        made fewer simulations than asked for otherwise: its tree is full (``memory``).  ``options``
        (the player's by default) say how each search decides; their own budget is replaced by
        the analysis's, and Go's move rules are off: an analysis shows the search's view, and
        a pass decided without a search would never end it.  Returns the last decision.
        """
        opts = replace(options or self.options, go_rules=False, cleanup=False)
        start = perf_counter()
        done, size = 0, max(1, first)
        while True:
            budget = size if simulations is None else max(0, min(size, simulations - done))
            remaining = None if time is None else max(0.0, start + time - perf_counter())
            began = perf_counter()
            decision = self.decide(replace(opts, simulations=budget, time=remaining), stop=stop)
            took = perf_counter() - began
            done += decision.simulations
            if (
                not on_update(decision)
                or opts.mode == "reactive"
                or stop.is_set()
                or (simulations is not None and done >= simulations)
                or (time is not None and perf_counter() >= start + time)
                or decision.simulations < budget
            ):
                return decision
            rate = decision.simulations / max(took, 1e-3)
            size = max(first, min(2 * size, int(rate * interval)))

    def _go_rules(
        self, state: State, opts: PlayOptions, owner: Callable[[], np.ndarray | None]
    ) -> MoveRules | None:
        """Go's move rules for a move in ``state`` (None: not Go, or the rules are off); ``owner``
        gives the ownership map that judges dead stones, asked only when a rule needs it."""
        if not opts.go_rules or not isinstance(state, GoState):
            return None

        def judged() -> GoState:
            return judge(state, owner() if opts.judge_dead_stones else None).judged

        return MoveRules(state, judged, cleanup=opts.cleanup)

    def _network(self) -> Evaluator:
        if self.evaluator is None:
            raise ValueError("this player has no network: it plays only TD search (modes 'td' and 'dyna2')")
        return self.evaluator

    def _network_choose(
        self, state: State, opts: PlayOptions, stop: threading.Event | None, quick: bool
    ) -> SearchResult:
        """Reactive play or the Gumbel search, as ``opts`` say; the policy's one call when
        ``quick`` (a pass that wins needs no search)."""
        if quick:
            return reactive(state, self._network())
        if opts.mode == "reactive":
            return reactive(state, self._network(), temperature=opts.temperature, rng=self._rng)
        limits = SearchLimits(simulations=opts.simulations, time=opts.time, stop=stop, memory=opts.memory)
        return self._search(state, limits, opts)

    def _td_search(self, mode: str, config: TdConfig | None = None) -> TdSearch:
        """The TD search of ``mode`` with ``config`` (default: the player's options'), made on
        first use and kept for the following moves while the parameters stay the same."""
        config = config or self.options.td
        if config.seed is None:
            config = replace(config, seed=self._seed)
        td_search = self._td.get(mode)
        if td_search is None or td_search.config != config:
            if not isinstance(self.game, GoGame):
                raise ValueError(f"TD search plays Go, not {self.game.name}")
            if mode == "dyna2" and self.permanent is None:
                raise ValueError("Dyna-2 needs permanent weights (go<N>-td.npz, from `klent train --algo td-learning`)")
            permanent = self.permanent if mode == "dyna2" else None
            td_search = self._td[mode] = TdSearch(self.game, config, permanent)
        return td_search

    def _td_choose(self, state: State, opts: PlayOptions, stop: threading.Event | None) -> SearchResult:
        """TD search's choice, among the network policy's most probable moves with
        ``td_root_moves`` (its prior then the network's), the simulations' first moves drawn
        from that policy over them with ``td_root_policy``."""
        prior = None
        candidates: list[int] = []
        first_moves = None
        if opts.td_root_moves:
            prior = softmax(self._network().evaluate([state]).policy_logits[0])
            candidates = np.argsort(-prior, kind="stable")[: opts.td_root_moves].tolist()
            if opts.td_root_policy:
                first_moves = np.zeros_like(prior)
                first_moves[candidates] = prior[candidates]
        chosen = self._td_search(opts.mode, opts.td).choose(
            _go_state(state), opts.simulations, opts.time, stop, candidates, first_moves)
        return _search_result(chosen, prior)

    def _search(self, state: State, limits: SearchLimits, opts: PlayOptions) -> SearchResult:
        # chess by its name: importing its kernels here would slow every Go engine's start
        chess = self.game.name == "chess"
        floor = opts.rescale_floor
        if floor is None:
            floor = PLAY_RESCALE_FLOOR if chess or isinstance(self.game, GoGame) else RESCALE_EPSILON
        wave = opts.wave_size or (CHESS_WAVE_SIZE if chess else GumbelConfig.wave_size)
        config = GumbelConfig(gumbel_scale=opts.gumbel_scale, rescale_floor=floor, wave_size=wave)
        network = self._network()
        if self.tablebase is not None:
            network = TablebaseEvaluator(network, self.tablebase)
        result = search(state, network, limits, config=config, rng=self._rng, trees=self._take_tree())
        with self._lock:
            self._tree = result.tree
            self._tree_actions = list(self._actions)
        return result

    def _take_tree(self) -> SearchTree | None:
        """`_reusable_tree`, detached (the rest of the tree let go) and forgotten by the player:
        the search continues in its forest, so that only one tree is ever in memory, and gives
        back the tree to keep."""
        with self._lock:
            tree = self._reusable_tree()
            self._tree = None
        return None if tree is None else tree.detached()

    def _reusable_tree(self) -> SearchTree | None:
        """The cached tree advanced to the current position, if the position extends it."""
        tree, played = self._tree, self._tree_actions
        if tree is None or self._actions[: len(played)] != played:
            return None
        return tree.advance(self._actions[len(played):])

    def _decision(
        self, state: State, result: SearchResult, opts: PlayOptions, chosen: int, rule: MoveRule | None
    ) -> Decision:
        game = self.game
        tree = result.tree
        # Visits in the whole tree (moves searched before a tree reuse included): that is what
        # an analysis shows.  Reactive play has no tree and no visits.
        visits = tree.child_visits() if tree is not None else {}
        legal = np.flatnonzero(state.legal_mask()).tolist()
        allowed = [a for a in legal if a in opts.candidates] or legal

        def preference(a: int) -> tuple[int, float]:
            return -visits.get(a, 0), -float(result.improved_policy[a])

        def line(first: int) -> list[int]:
            return tree.principal_variation(first=first) if tree is not None else [first]

        def stat(a: int) -> MoveStat:
            actions = line(a)
            pv, outcome = _played_out(state, actions)
            return MoveStat(
                action=a,
                move=game.action_to_text(state, a),
                prior=float(result.prior[a]),
                q=float(result.q[a]),
                visits=visits.get(a, 0),
                policy=float(result.improved_policy[a]),
                pv=pv,
                outcome=outcome,
                pv_visits=tree.line_visits(actions[: len(pv)]) if tree is not None else [],
            )

        action = chosen if chosen in allowed else min(allowed, key=preference)
        # The chosen move first, then by visits and by the improved policy.
        order = sorted(allowed, key=lambda a: (a != action, *preference(a)))
        top = [stat(a) for a in order[: opts.top_moves]]
        pv = line(action)
        pv_text, outcome = _played_out(state, pv)
        return Decision(
            action=action,
            move=game.action_to_text(state, action),
            value=float(result.value),
            top_moves=top,
            pv=pv_text,
            simulations=result.simulations,
            elapsed=result.elapsed,
            result=result,
            ponder=self._expected_reply(state, pv, tree, opts.ponder),
            seldepth=max(tree.depth() if tree is not None else 0, len(pv)),
            visits=tree.visits if tree is not None else 0,
            rule=rule if action == chosen else None,
            outcome=outcome,
        )

    def _expected_reply(self, state: State, pv: list[int], tree: SearchTree | None, evaluate: bool) -> str | None:
        """The opponent's expected reply to ``pv[0]``: the PV's second move; after a search too
        short to have one, the policy's favourite reply, read from the tree if the search
        evaluated that position, else (only when ``evaluate``: it costs a network call) from a
        reactive evaluation.  None after a move that ends the game."""
        after = state.play(pv[0])
        if after.is_terminal:
            return None
        if len(pv) > 1:
            reply = pv[1]
        elif tree is not None and (node := tree.advance(pv[:1])) is not None:
            reply = node.policy_action()
        elif evaluate and self.evaluator is not None:
            reply = reactive(after, self.evaluator).action
        else:
            return None
        return self.game.action_to_text(after, reply)


def _go_state(state: State) -> GoState:
    if not isinstance(state, GoState):
        raise TypeError(f"only a Go position can be judged, not one of {state.game.name}")
    return state


def _search_result(chosen: TdResult, prior: np.ndarray | None = None) -> SearchResult:
    """A TD search's choice in the facade's terms.  Its afterstate values are ``q``; it has no
    visits, and its ``prior`` is the network's when one chose the candidates, else uniform over
    the legal moves; it prefers moves by their value, so ``improved_policy`` (which orders the
    listed moves and the choices of Go's move rules) is their winning probability (q + 1) / 2,
    normalised."""
    legal = chosen.legal.astype(np.float64)
    uniform = legal / legal.sum()
    winning = np.where(chosen.legal, (chosen.q.astype(np.float64) + 1.0) / 2.0, 0.0)
    policy = winning / winning.sum() if winning.sum() > 0 else uniform
    return SearchResult(
        action=chosen.action,
        improved_policy=policy.astype(np.float32),
        visits=np.zeros(chosen.q.shape, dtype=np.int32),
        q=chosen.q,
        value=chosen.value,
        pv=[chosen.action],
        simulations=chosen.simulations,
        elapsed=chosen.elapsed,
        prior=(uniform if prior is None else prior).astype(np.float32),
        ownership=chosen.ownership,
    )


def _with_table_values(decision: Decision, table: RootProbe) -> Decision:
    """``decision`` valued as the endgame tables value its position and moves, not as the
    search estimated them: a drawn ending reads as a draw (0), and each move's value is ``proven``."""
    top = [replace(stat, q=table.values.get(stat.action, stat.q), proven=stat.action in table.values)
           for stat in decision.top_moves]
    return replace(decision, value=table.value, top_moves=top)


def _winrate(value: float) -> float:
    return (value + 1.0) / 2.0


def _played_out(state: State, actions: Sequence[int]) -> tuple[list[str], float | None]:
    """Move texts of a principal variation played out from ``state``, and the result it reaches
    for ``state``'s side to move (None: the game goes on): a protocol reports a mate from it.
    A line the search ended in a claimable draw (`State.is_claimable_draw`) reaches a draw."""
    side, texts = state.to_play, []
    for action in actions:
        if state.is_terminal:
            break
        texts.append(state.game.action_to_text(state, int(action)))
        state = state.play(int(action))
        if state.is_claimable_draw:
            return texts, 0.0
    return texts, state.reward_for(side) if state.is_terminal else None
