"""The one facade every protocol calls: a position and limits in, a move and its analysis out.

GTP, UCI, the HTTP server and the lichess bridge all play through a `Player`, so reactive
play, Gumbel search, tree reuse and the move analysis behave the same everywhere.  A player
holds the current position as an initial state plus the actions played from it; setting a
position that extends the previous one by a few actions keeps the search tree of the moves in
between (tree reuse), anything else starts a fresh tree.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from engine.games.base import Game, IllegalMoveError, State
from engine.network import Evaluator, OnnxEvaluator
from engine.search.gumbel import GumbelConfig, search
from engine.search.limits import SearchLimits
from engine.search.reactive import reactive
from engine.search.result import SearchResult
from engine.search.tree import SearchTree

Mode = Literal["reactive", "search"]

DEFAULT_WEIGHTS_DIR = Path(__file__).resolve().parent.parent / "weights"


@dataclass(frozen=True)
class PlayOptions:
    """How the player decides: reactively or by Gumbel search, and within which budget.

    ``gumbel_scale`` is the root Gumbel noise at play time (0: deterministic, the strongest
    choice; 1: varied play as in self-play).  ``temperature`` applies to reactive play only
    (0: argmax of the policy, the paper's reactive player).
    """

    mode: Mode = "search"
    simulations: int | None = 200
    time: float | None = None
    gumbel_scale: float = 0.0
    temperature: float = 0.0
    top_moves: int = 10

    def __post_init__(self) -> None:
        if self.mode not in ("reactive", "search"):
            raise ValueError(f"mode must be 'reactive' or 'search', got {self.mode!r}")
        if self.mode == "search" and self.simulations is None and self.time is None:
            raise ValueError("search needs a number of simulations or a time budget")


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


@dataclass(frozen=True)
class Decision:
    """A chosen move with the analysis behind it."""

    action: int
    move: str
    value: float  # value of the position for the side to move, in [-1, 1]
    top_moves: list[MoveStat]  # the chosen move first, then by visits
    pv: list[str]
    simulations: int
    elapsed: float
    result: SearchResult

    @property
    def winrate(self) -> float:
        """Value mapped to [0, 1] (what Go GUIs call the win rate)."""
        return (self.value + 1.0) / 2.0


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


class Player:
    """Holds a position and the model of its game, and decides moves in it."""

    def __init__(
        self,
        evaluator: Evaluator,
        options: PlayOptions = PlayOptions(),
        seed: int | None = None,
    ) -> None:
        self.evaluator = evaluator
        self.game: Game = evaluator.game
        self.options = options
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()
        self._initial: State = self.game.initial_state()
        self._actions: list[int] = []
        self._state: State = self._initial
        self._tree: SearchTree | None = None
        self._tree_actions: list[int] = []

    @classmethod
    def load(
        cls,
        game: Game,
        model: str | Path | None = None,
        weights_dir: str | Path = DEFAULT_WEIGHTS_DIR,
        options: PlayOptions = PlayOptions(),
        threads: int | None = None,
        seed: int | None = None,
    ) -> Player:
        """A player for ``game`` with the model at ``model`` or the shipped one in ``weights_dir``.

        Raises FileNotFoundError when there is no model, and a ValueError subclass when the
        model was trained for another game or encoder version.
        """
        path = Path(model) if model is not None else model_path_for(game, weights_dir)
        if not path.is_file():
            raise FileNotFoundError(f"no model for {game.name}: {path} does not exist")
        return cls(OnnxEvaluator(path, game=game, threads=threads), options=options, seed=seed)

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

    def set_position(self, initial: State, actions: Sequence[int] = ()) -> State:
        """Make ``initial`` followed by ``actions`` the current position and return it.

        Raises `IllegalMoveError` (and changes nothing) if an action is illegal.  The search
        tree is kept when the new position extends the one the tree was built for.
        """
        state = initial
        for action in actions:
            state = state.play(int(action))
        with self._lock:
            if initial is not self._initial:
                self._tree = None
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

    def ownership(self) -> Ownership | None:
        """The model's ownership (and score) of the current position, one network call; None
        for a model without an ownership head.  Protocols judge dead stones by it (GTP) and
        shade territory with it (the web page)."""
        evaluation = self.evaluator.evaluate([self._state])  # a finished game's too
        if evaluation.ownership is None:
            return None
        score = None if evaluation.score is None else float(evaluation.score[0])
        return Ownership(owner=evaluation.ownership[0], score=score)

    def decide(
        self,
        options: PlayOptions | None = None,
        stop: threading.Event | None = None,
    ) -> Decision:
        """Choose a move in the current position (which stays unchanged).

        ``options`` overrides the player's defaults for this call; ``stop`` ends a search
        early (within one network batch) with the best move found so far.
        """
        opts = options or self.options
        state = self._state
        if state.is_terminal:
            raise IllegalMoveError("the game is over: there is no move to choose")
        if opts.mode == "reactive":
            result = reactive(state, self.evaluator, temperature=opts.temperature, rng=self._rng)
        else:
            limits = SearchLimits(simulations=opts.simulations, time=opts.time, stop=stop)
            result = self._search(state, limits, opts)
        return self._decision(state, result, opts)

    def _search(self, state: State, limits: SearchLimits, opts: PlayOptions) -> SearchResult:
        config = GumbelConfig(gumbel_scale=opts.gumbel_scale)
        result = search(state, self.evaluator, limits, config=config, rng=self._rng, trees=self._reusable_tree())
        with self._lock:
            self._tree = result.tree
            self._tree_actions = list(self._actions)
        return result

    def _reusable_tree(self) -> SearchTree | None:
        """The cached tree advanced to the current position, if the position extends it."""
        tree, played = self._tree, self._tree_actions
        if tree is None or self._actions[: len(played)] != played:
            return None
        return tree.advance(self._actions[len(played):])

    def _decision(self, state: State, result: SearchResult, opts: PlayOptions) -> Decision:
        game = self.game
        tree = result.tree
        # Visits in the whole tree (moves searched before a tree reuse included): that is what
        # an analysis shows.  Reactive play has no tree and no visits.
        visits = tree.child_visits() if tree is not None else {}
        legal = np.flatnonzero(state.legal_mask())
        # The chosen move first, then by visits and by the improved policy.
        order = sorted(
            legal,
            key=lambda a: (a != result.action, -visits.get(int(a), 0), -float(result.improved_policy[a])),
        )
        top = [
            MoveStat(
                action=int(a),
                move=game.action_to_text(state, int(a)),
                prior=float(result.prior[a]),
                q=float(result.q[a]),
                visits=visits.get(int(a), 0),
                policy=float(result.improved_policy[a]),
                pv=_pv_text(state, tree.principal_variation(first=int(a)) if tree is not None else [int(a)]),
            )
            for a in order[: opts.top_moves]
        ]
        return Decision(
            action=result.action,
            move=game.action_to_text(state, result.action),
            value=float(result.value),
            top_moves=top,
            pv=_pv_text(state, result.pv),
            simulations=result.simulations,
            elapsed=result.elapsed,
            result=result,
        )


def _pv_text(state: State, actions: Sequence[int]) -> list[str]:
    """Move texts of a principal variation played out from ``state``."""
    texts = []
    for action in actions:
        if state.is_terminal:
            break
        texts.append(state.game.action_to_text(state, int(action)))
        state = state.play(int(action))
    return texts
