"""TD search and Dyna-2 (Silver, Sutton and Mueller 2012) for Go: test-time learning of a
linear value function over local shape features.

TD search (Sect. 4, Algorithm 2): before each move, many games are simulated from the current
position; the players choose epsilon-greedily on afterstate values V(s o a) of a logistic
linear function of local shape features (`klent.engine.search.td_kernels`) for the first T moves and
then by a default policy, and after every simulated move the weights learn by logistic
NTD2(lambda).  The move is then chosen greedily on the learnt values, with no exploration
(Sect. 4.4).  The learnt weights are a *transient* memory: they start at zero at the start of a
game and are carried from one move to the next (Sect. 4.2; resetting them every move cost
400-800 Elo, Sect. 4.5.4).

Dyna-2 (Sect. 5, Algorithm 3) adds a *permanent* memory, weights learnt offline by TD
self-play (`klent.training.td_learning`) and saved as a `ShapeWeights` file; the value is
sigmoid(phi . theta + phi_bar . theta_bar) and the search learns only the transient theta_bar.

    search = TdSearch(game)                                # TD search
    search = TdSearch(game, permanent=ShapeWeights.load("weights/go9-td.npz"))  # Dyna-2
    result = search.choose(state, simulations=1000)        # or seconds=1.0, stop=event
    result.action, result.q, result.simulations, result.ownership

One `TdSearch` serves one game at a time: it keeps the transient weights between the moves of
a game and clears them when it is given a position from another game (or by `new_game`).
"""

from __future__ import annotations

import json
import threading
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from klent.engine.files import atomic_target, parse_json, read_npz_member
from klent.engine.games import go_kernels as gk
from klent.engine.games.go import MAX_SIZE, MIN_SIZE, GoGame, GoState
from klent.engine.search import td_features as tf
from klent.engine.search import td_kernels as tk
from klent.engine.search import td_traces as tt

WEIGHTS_FORMAT = "klent-td-weights"
WEIGHTS_VERSION = 1  # bump when the weight layout of `td_kernels.shape_maps` changes
MAX_HEADER_CHARS = 1 << 16  # of a weights file's JSON header (a real one: a few hundred)
WEIGHTS_KIND = "a TD weights file"  # what its errors call a weights file
_NONE = np.zeros(0)  # no distribution of the simulations' first move: epsilon-greedy
Stop = Callable[[], bool] | threading.Event


@dataclass(frozen=True)
class TdConfig:
    """Parameters of the search, defaulting to the paper's.

    - ``epsilon``, ``alpha``: exploration rate of the simulated players and the normalised
      step size, 0.1 each (Sect. 4.4).
    - ``lam``: lambda of NTD2(lambda).  Bootstrapping (lambda < 1) did significantly better
      than Monte-Carlo updates (Sect. 4.5.3, Fig. 8b); the text does not print the value
      used, and 0.4 is ours from the range that figure explores.
    - ``shapes``: square sizes of the local shape features (Sect. 3.1.2: 1x1 to 3x3).  TD
      search with 1x1 and 2x2 reached almost 1700 Elo at 10,000 simulations per move and
      adding 3x3 brought no significant gain (Sect. 4.5.2), so (1, 2) is the default: 3x3's
      million sparse weights also cost about half as much again per simulated move here.
      ``sharing``: their weight sharing, none in TD search (Sect. 4.4).
    - ``greedy_moves``: T, the simulated moves played epsilon-greedily before the default
      policy takes over (T = 6, Sect. 4.5.1; the paper's default policy was Fuego's, ours is
      uniformly random among moves that fill no own eye: one that captured and rescued chains
      in atari first was measured weaker, docs/experiments/2026-11-25-td-search.md).
    - ``trace_cutoff``: eligibility-trace terms below this weight are dropped
      (`td_kernels.trace_depth`).
    - ``seed``: of the simulations' random choices (None: a fresh one).
    """

    epsilon: float = 0.1
    alpha: float = 0.1
    lam: float = 0.4
    shapes: tuple[int, ...] = (1, 2)
    sharing: tuple[str, ...] = ("none",)
    greedy_moves: int = 6
    trace_cutoff: float = 1e-3
    seed: int | None = None

    def __post_init__(self) -> None:
        for name in ("epsilon", "lam"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], not {getattr(self, name)!r}")
        if not self.alpha > 0.0:
            raise ValueError(f"alpha must be positive, not {self.alpha!r}")
        if not 0.0 < self.trace_cutoff < 1.0:
            raise ValueError(f"trace_cutoff must be within (0, 1), not {self.trace_cutoff!r}")
        if self.greedy_moves < 0:
            raise ValueError(f"greedy_moves must be >= 0, not {self.greedy_moves!r}")
        tf.check_memory(self.shapes, self.sharing)


@dataclass(frozen=True, eq=False)
class ShapeWeights:
    """A permanent memory: weights over local shape features of one board size (Sect. 5.2).

    ``theta`` is laid out as `td_kernels.shape_maps` numbers the weights of ``shapes`` and
    ``sharing``; ``info`` says how it was learnt (games, alpha, ...) and travels in the file's
    JSON header.  Files are ``.npz`` with a ``header`` (JSON text) and ``theta`` (float64).
    """

    size: int
    shapes: tuple[int, ...]
    sharing: tuple[str, ...]
    theta: np.ndarray
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        tf.check_memory(self.shapes, self.sharing)
        expected = self.weight_count(self.size, self.shapes, self.sharing)
        if self.theta.shape != (expected,):
            layout = f"{self.size}x{self.size} {self.shapes} {self.sharing}"
            raise ValueError(f"{layout} weights need {expected} values, not {self.theta.shape}")

    @staticmethod
    def weight_count(size: int, shapes: tuple[int, ...], sharing: tuple[str, ...]) -> int:
        return sum(tf.square_table(size, k, mode)[2] for k in shapes for mode in sharing)

    @classmethod
    def zeros(
        cls, size: int, shapes: tuple[int, ...], sharing: tuple[str, ...], info: dict[str, Any] | None = None
    ) -> ShapeWeights:
        """An empty memory (the paper initialises every weight to zero, Sect. 3.2.1)."""
        return cls(size, shapes, sharing, np.zeros(cls.weight_count(size, shapes, sharing)), dict(info or {}))

    def header(self) -> dict[str, Any]:
        return {
            "format": WEIGHTS_FORMAT,
            "version": WEIGHTS_VERSION,
            "game": f"go{self.size}",
            "size": self.size,
            "shapes": list(self.shapes),
            "sharing": list(self.sharing),
            "weights": int(self.theta.shape[0]),
            "info": self.info,
        }

    def save(self, path: str | Path) -> None:
        """Write the file atomically (readers see the old file or the whole new one)."""
        with atomic_target(path) as tmp, open(tmp, "wb") as out:
            np.savez(out, header=np.array(json.dumps(self.header())), theta=self.theta.astype(np.float64))

    @classmethod
    def load(cls, path: str | Path) -> ShapeWeights:
        """Read a file `save` wrote; ValueError names what is wrong with any other file.

        A hostile file costs bounded work: the header is read first, at most
        `MAX_HEADER_CHARS` characters of JSON, and the weights only once its layout says how
        many there are; a ``theta`` declared with another shape (an 8 TiB array, a zip bomb's
        gigabytes of zeros) is refused before any of it is read.
        """
        try:
            with zipfile.ZipFile(path) as archive:
                text = read_npz_member(archive, "header", WEIGHTS_KIND, lambda shape, dtype: shape == ()
                                       and dtype.kind == "U" and dtype.itemsize <= 4 * MAX_HEADER_CHARS)
                header = parse_json(str(text[()]))
                found = (header.get("format"), header.get("version")) if isinstance(header, dict) else header
                if found != (WEIGHTS_FORMAT, WEIGHTS_VERSION):
                    raise ValueError(f"TD weights format {found!r}, this klent reads {WEIGHTS_FORMAT!r} "
                                     f"version {WEIGHTS_VERSION}")
                layout = _layout(header)
                count = cls.weight_count(*layout)
                theta = read_npz_member(archive, "theta", WEIGHTS_KIND,
                                        lambda shape, dtype: shape == (count,) and dtype == np.float64)
            info = dict(header.get("info", {}))
        except (OSError, KeyError, TypeError, ValueError, zipfile.BadZipFile) as error:
            raise ValueError(f"{path}: not {WEIGHTS_KIND} ({error})") from None
        if not np.all(np.isfinite(theta)):
            raise ValueError(f"{path}: TD weights are not all finite")
        return cls(*layout, theta, info)


def _layout(header: dict[str, Any]) -> tuple[int, tuple[int, ...], tuple[str, ...]]:
    """The board size, shapes and sharing a weights file's header declares; ValueError for a
    layout that cannot be (checked before `ShapeWeights.weight_count` builds its tables)."""
    try:
        size, shapes, sharing = header["size"], tuple(header["shapes"]), tuple(header["sharing"])
        if type(size) is not int or not MIN_SIZE <= size <= MAX_SIZE:
            raise ValueError(f"board size {size!r}")
        tf.check_memory(shapes, sharing)
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"bad TD weights header ({error!r})") from None
    return size, shapes, sharing


@dataclass(frozen=True, eq=False)
class TdResult:
    """What one `TdSearch.choose` returns.

    - ``action``: the move, greedy on the learnt afterstate values among the legal moves that
      fill no own single-point eye.  Pass only when there is no such move (the simulated
      players' rule, Sect. 3.2.1, which the values were learnt under), or after the
      opponent's pass when ending the game wins at least as much as the best move's value
      (the result of the board as it stands, Tromp-Taylor).  A pass's value is V(s) of the
      unchanged board otherwise, which knows neither the side to move nor komi: at the
      empty board it is exactly 1/2, so it must not compete with the moves.
    - ``q``: float32[A], each legal action's afterstate value for the side to move in [-1, 1]
      (2 * winning probability - 1), 0 on illegal actions; ``legal``: bool[A].
    - ``value``: ``q[action]``; ``simulations``: simulated games this call, ``moves``: the
      moves they played; ``elapsed``: seconds.
    - ``ownership``: float32[size, size], each point's mean final owner over the simulated
      games, +1 = the side to move's (as `SearchResult.ownership`): what the simulations
      say is alive or dead; None when no game was simulated.
    """

    action: int
    q: np.ndarray
    legal: np.ndarray
    value: float
    simulations: int
    moves: int
    elapsed: float
    ownership: np.ndarray | None


class Features:
    """The value function of one search: a learnt memory and an optional read-only one.

    ``index``/``sign`` map raw features to the learnt weights ``theta`` (`td_kernels`); the
    read-only (permanent) memory enters as ``fixed``, its contribution per raw feature, since
    its weights never change during a search (an empty array without one).
    """

    def __init__(
        self, size: int, learnt: tuple[tuple[int, ...], tuple[str, ...]] | None, permanent: ShapeWeights | None
    ) -> None:
        if learnt is None and permanent is None:
            raise ValueError("a value function needs at least one memory")
        shapes = set(learnt[0] if learnt else ()) | set(permanent.shapes if permanent else ())
        enumerated = tuple(sorted(shapes))
        self.geometry = tf.windows(size, enumerated)
        if learnt:
            self.index, self.sign, count = tf.shape_maps(size, enumerated, *learnt)
        else:
            self.index = np.zeros((0, self.geometry.features), dtype=np.int32)
            self.sign = np.zeros((0, self.geometry.features), dtype=np.int8)
            count = 0
        self.theta = np.zeros(count)
        self.fixed = np.zeros(0)
        if permanent:
            index, sign, _ = tf.shape_maps(size, enumerated, permanent.shapes, permanent.sharing)
            self.fixed = tk.fixed_values(index, sign, permanent.theta)
        self.traces = tt.new_traces(count)

    def codes(self, board: np.ndarray) -> np.ndarray:
        codes = np.empty(self.geometry.count, dtype=np.int32)
        tk.window_codes(board, self.geometry.point_windows, self.geometry.point_powers, codes)
        return codes

    def logit(self, board: np.ndarray) -> float:
        """The logit of V(s) (Black's winning probability) for a flat board."""
        g = self.geometry
        return float(tk.logit(self.codes(board), g.base, self.index, self.sign, self.theta, self.fixed))

    def afterstate_logits(self, board: np.ndarray, color: int, candidates: np.ndarray) -> np.ndarray:
        """float64[n]: the logit of V after ``color`` (+1/-1) plays each candidate point."""
        out = np.zeros(board.shape[0])
        g = self.geometry
        tk.afterstate_logits(
            board, color, candidates, self.codes(board), gk.board_tables(g.size)[0], g.base, g.point_windows,
            g.point_powers, self.index, self.sign, self.theta, self.fixed, out,
        )
        return out

    def simulate(
        self, state: GoState, config: TdConfig, rng: np.ndarray, ownership: np.ndarray, first_cdf: np.ndarray = _NONE
    ) -> tuple[float, int]:
        """One simulated game from ``state`` that learns ``theta``; returns its reward (Black's:
        1 win, 0 loss, 0.5 draw) and its number of moves, and adds each point's final owner
        (+1 Black, -1 White) to ``ownership`` (float64[n]).  ``first_cdf``: a cumulative
        distribution over the actions that draws the game's first move (empty: the
        epsilon-greedy choice)."""
        game = state.game
        board, seen, position_hash, passes = _position(state)
        nbr, zob, diag = gk.board_tables(game.size)
        g = self.geometry
        depth = tt.trace_depth(config.lam, config.trace_cutoff, game.max_moves)
        reward, moves = tk.simulate(
            board, seen, position_hash, 1 if state.to_play == 0 else -1, passes, first_cdf, state.move_number,
            game.max_moves, game.komi, nbr, zob, diag, g.base, g.point_windows, g.point_powers,
            self.index, self.sign, self.theta, self.fixed, config.epsilon, config.alpha, config.lam,
            depth, config.greedy_moves, rng, self.traces, ownership,
        )
        return float(reward), int(moves)


class TdSearch:
    """TD search (Dyna-2 with a permanent memory) for one game at a time.

    The transient weights persist between `choose` calls of one game and are cleared when a
    position does not continue the game searched before (another start position or komi, or
    moves that are neither a continuation nor an undo of it), or by `new_game`.
    """

    def __init__(self, game: GoGame, config: TdConfig | None = None, permanent: ShapeWeights | None = None) -> None:
        if not isinstance(game, GoGame):
            raise ValueError(f"TD search plays Go, not {game.name}")
        if permanent is not None and permanent.size != game.size:
            raise ValueError(f"the permanent weights are for {permanent.size}x{permanent.size}, not {game.name}")
        self.game = game
        self.config = config or TdConfig()
        self.permanent = permanent
        self.features = Features(game.size, (self.config.shapes, self.config.sharing), permanent)
        seed = self.config.seed if self.config.seed is not None else int(np.random.SeedSequence().generate_state(1)[0])
        self._rng = tk.seed_state(seed)
        self._game_line: tuple[tuple[bytes, int, float], tuple[int, ...]] | None = None

    @property
    def transient(self) -> np.ndarray:
        """The transient weights (a read-only view; they change with every search)."""
        view = self.features.theta.view()
        view.flags.writeable = False
        return view

    def new_game(self) -> None:
        """Forget this game's transient memory (Algorithm 3: theta_bar = 0 at each new game)."""
        self.features.theta[:] = 0.0
        self._game_line = None

    def choose(
        self,
        state: GoState,
        simulations: int | None = None,
        seconds: float | None = None,
        stop: Stop | None = None,
        candidates: Sequence[int] = (),
        first_moves: np.ndarray | None = None,
    ) -> TdResult:
        """Search ``state`` for ``simulations`` simulated games and/or ``seconds``, then choose.

        ``stop`` (a threading.Event or a callable returning True to stop) is checked before
        every simulation, as are the budgets; a stopped search still chooses, on what the
        weights know (the carried weights when not a single simulation ran).  ``candidates``,
        when given, are the only moves the greedy choice considers (a network's most probable
        moves, `klent.engine.player`); the simulations still play every move.  ``first_moves``, when
        given, is a distribution over the actions from which each simulated game's first move
        is drawn (a network's policy, `klent.engine.player`), instead of the epsilon-greedy choice:
        the simulations then spend themselves on the moves the network finds likely, as a
        tree search's prior spends its visits; the later moves are chosen as usual.
        """
        if simulations is None and seconds is None:
            raise ValueError("TD search needs a number of simulations or a time budget")
        if state.game.size != self.game.size:
            raise ValueError(f"this search plays {self.game.name}, not {state.game.name}")
        if state.is_terminal:
            raise ValueError("the game is over: there is no move to choose")
        self._follow(state)
        stopped = stop.is_set if isinstance(stop, threading.Event) else stop
        start = time.perf_counter()
        done = moves = 0
        owners = np.zeros(self.game.size**2)
        first_cdf = _NONE if first_moves is None else np.cumsum(np.asarray(first_moves, dtype=np.float64))
        while simulations is None or done < simulations:
            if (seconds is not None and time.perf_counter() - start >= seconds) or (stopped is not None and stopped()):
                break
            moves += self.features.simulate(state, self.config, self._rng, owners, first_cdf)[1]
            done += 1
        ownership = None
        if done:
            mover = 1 if state.to_play == 0 else -1
            ownership = (owners * (mover / done)).astype(np.float32).reshape(self.game.size, self.game.size)
        return self._decide(state, done, moves, time.perf_counter() - start, ownership, candidates)

    def _follow(self, state: GoState) -> None:
        """Clear the transient memory unless ``state`` continues (or undoes into) the last game:
        the same start position and komi, and one move list a prefix of the other."""
        start = state.start()
        key, moves = (start.board().tobytes(), start.to_play, state.game.komi), tuple(state.moves())
        if self._game_line is not None:
            last_key, last_moves = self._game_line
            common = min(len(moves), len(last_moves))
            if last_key != key or moves[:common] != last_moves[:common]:
                self.new_game()
        self._game_line = key, moves

    def _decide(
        self,
        state: GoState,
        simulations: int,
        moves: int,
        elapsed: float,
        ownership: np.ndarray | None,
        candidates: Sequence[int] = (),
    ) -> TdResult:
        """Greedy choice on the afterstate values (Sect. 4.4), with the values of every legal
        move; among ``candidates`` only, when any of them is playable."""
        size = self.game.size
        n = size * size
        board, _, _, _ = _position(state)
        color = 1 if state.to_play == 0 else -1
        legal = state.legal_mask()
        logits = self.features.afterstate_logits(board, color, legal)
        ends = state.consecutive_passes >= 1  # passing now ends the game: its value is the result
        if ends:
            score = state.score()
            pass_logit = np.inf if score > 0 else (-np.inf if score < 0 else 0.0)
        else:
            pass_logit = self.features.logit(board)
        # Black's winning probability sigmoid(x) = (1 + tanh(x / 2)) / 2, without overflow.
        black = 0.5 * (1.0 + np.tanh(0.5 * np.append(logits, pass_logit)))
        mover_q = np.where(legal, (2.0 * black - 1.0) * color, 0.0)
        nbr, _, diag = gk.board_tables(size)
        playable = [int(p) for p in np.flatnonzero(legal[:n]) if not gk.own_eye(board, int(p), color, nbr, diag)]
        playable = [p for p in playable if p in candidates] or playable
        action = n
        if playable:
            action = max(playable, key=lambda p: (mover_q[p], -p))  # ties: the first point
            if ends and mover_q[n] >= mover_q[action]:
                action = n
        q = mover_q.astype(np.float32)
        return TdResult(action, q, legal, float(q[action]), simulations, moves, elapsed, ownership)


def _position(state: GoState) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The rules arrays a simulation starts from: flat board, sorted seen hashes, hash, passes.

    GoState keeps them private (the search must not change them, and the kernels only read);
    go.py has no public accessor for the superko history, which simulations need.
    """
    return state._hist[0], state._seen, int(state._hash), state.consecutive_passes


@cache
def warm_up() -> None:
    """Load (or compile) the kernels now, outside any time budget: a tiny search on 5x5, once
    per process (later calls return at once)."""
    game = GoGame(5)
    TdSearch(game, TdConfig(seed=0)).choose(game.initial_state(), simulations=2)
