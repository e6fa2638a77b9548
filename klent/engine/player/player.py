"""The `Player`: a position, the model of its game, and the moves decided in it.

A player holds the current position as an initial state plus the actions played from it, and
chooses its moves through one mover per mode (`klent.engine.player.mover.Mover`): setting a
position of another game makes every mover forget what it kept (the search tree, TD search's
transient memory).  In Go it applies Go's move rules to the mover's choice and judges dead
stones; with chess endgame tables, the tables choose among the moves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from time import perf_counter

import numpy as np

from klent.engine.games.base import Game, IllegalMoveError, State
from klent.engine.games.go import GoState
from klent.engine.go_rules import Judgement, MoveRule, MoveRules, judge
from klent.engine.network import Evaluator, OnnxEvaluator, model_at_precision
from klent.engine.player.gumbel_mover import GumbelMover
from klent.engine.player.mover import Mover, go_state
from klent.engine.player.options import DEFAULT_OPTIONS, FIRST_ANALYSIS_SEARCH, TD_MODES, PlayOptions
from klent.engine.player.reactive_mover import ReactiveMover
from klent.engine.player.report import Decision, Ownership, build_decision, with_table_values
from klent.engine.player.td_mover import TdMover
from klent.engine.player.weights import DEFAULT_WEIGHTS_DIR, load_td_weights, model_path_for
from klent.engine.search.gumbel import UniformEvaluator, warm_up
from klent.engine.search.td import ShapeWeights, TdConfig, TdSearch
from klent.engine.search.td import warm_up as warm_up_td
from klent.engine.tablebase import Tablebase, probe_root

JUDGE_SIMULATIONS = 400  # simulated games that judge dead stones for a player without a network


class Player:
    """Holds a position and the model of its game, and decides moves in it."""

    def __init__(
        self,
        evaluator: Evaluator | None,
        options: PlayOptions = DEFAULT_OPTIONS,
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
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()
        self._initial: State = self.game.initial_state()
        self._actions: list[int] = []
        self._state: State = self._initial
        # Chess endgame tables (`klent.engine.tablebase`): WDL in the search's leaves, DTZ at the root.
        self.tablebase: Tablebase | None = None
        # One mover per mode (`Mover`), each keeping what it learnt of the game from move to move.
        self._td = {mode: TdMover(mode, game, seed, permanent, evaluator) for mode in TD_MODES}
        self._movers: dict[str, Mover] = {
            "reactive": ReactiveMover(evaluator, self._rng),
            "search": GumbelMover(game, evaluator, self._rng, lambda: self.tablebase),
            **self._td,
        }
        # Once per process each, so that no move's time budget pays for loading the kernels.
        if evaluator is not None:
            warm_up()
        if options.mode in TD_MODES:
            self._td[options.mode].search(options.td)  # a game or weights it cannot play are refused now
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
        options: PlayOptions = DEFAULT_OPTIONS,
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
    def without_model(cls, game: Game, options: PlayOptions = DEFAULT_OPTIONS, seed: int | None = None) -> Player:
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
                for mover in self._movers.values():
                    mover.new_game()
            self._initial = initial
            self._actions = [int(a) for a in actions]
            self._state = state
        return state

    def reseed(self, seed: int) -> None:
        """Draw the random choices from ``seed`` from now on, as if the player had been made
        with it: root Gumbel noise, moves sampled at a temperature and TD search's simulations."""
        with self._lock:
            self._seed = seed
            self._rng.bit_generator.state = np.random.default_rng(seed).bit_generator.state
            for mover in self._td.values():
                mover.reseed(seed)

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
        without an ownership head or outside Go.  The network's values do not see the komi (handicap
        games are played at komi 0.5, the models were trained at 7.5); this count does."""
        state = self._state
        if not isinstance(state, GoState):
            return None
        ownership = self._ownership(state)
        if ownership is None:
            return None
        komi = state.game.komi
        return float(ownership.owner.sum()) + (-komi if state.to_play == 0 else komi)

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
        return self._judgement(go_state(self._state), self.options)

    def _ownership(self, state: State) -> Ownership | None:
        if self.evaluator is None:
            return self._simulated_ownership(go_state(state))
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
        with self._lock:
            state, actions = self._state, self._actions
        if state.is_terminal:
            raise IllegalMoveError("the game is over: there is no move to choose")
        table = probe_root(self.tablebase, state) if self.tablebase is not None else None
        if table is not None:  # the endgame tables choose the moves; the search, among them
            best = [a for a in table.best if a in opts.candidates] if opts.candidates else table.best
            opts = replace(opts, candidates=tuple(best) or opts.candidates)
            return with_table_values(self._decide(state, actions, opts, stop), table)
        return self._decide(state, actions, opts, stop)

    def _decide(
        self, state: State, actions: list[int], opts: PlayOptions, stop: threading.Event | None
    ) -> Decision:
        if opts.mode in TD_MODES:  # it always searches: its simulated games judge the dead stones
            result = self._movers[opts.mode].choose(state, actions, opts, stop)
            rules = self._go_rules(state, opts, lambda: result.ownership)
        else:
            rules = self._go_rules(state, opts, lambda: self._owner(state))
            if rules is not None and rules.passes_at_once():  # a pass that wins needs no search
                result = self._movers["reactive"].choose(state, actions, replace(opts, temperature=0.0), stop)
            else:
                result = self._movers[opts.mode].choose(state, actions, opts, stop)
        if rules is not None and rules.passes_at_once():
            return build_decision(self.game, state, result, opts, rules.state.game.pass_action, MoveRule.PASS_WINS,
                            self.evaluator)
        action, rule = (result.action, None) if rules is None else rules.choose(result)
        return build_decision(self.game, state, result, opts, action, rule, self.evaluator)

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
