"""Offline TD learning of Dyna-2's permanent memory by self-play (numpy/numba, no torch).

Silver, Sutton and Mueller (2012), Sect. 3.2: both players choose epsilon-greedily on the
afterstate values of one shared logistic linear value function over local shape features,
every game starts from the empty board and ends after two passes (no player fills its own
single-point eye, and passes only without another move), and after every move the weights
learn by logistic NTD2(lambda) (two-ply TD errors, normalised step size).  Defaults are the
paper's (Sect. 3.3): alpha = 0.1, epsilon = 0.1, lambda = 0 (NTD2(0)), all squares from 1x1 to
3x3 with location-independent and location-dependent weight sharing, komi 7.5; the paper
played a million games.  The result is Dyna-2's long-term memory (Sect. 5.3), loaded by
`klent.engine.search.td.ShapeWeights.load` for ``TdSearch(..., permanent=...)``.

    from klent.training.td_learning import train
    train("go9", games=100_000, out_path="weights/go9-td.npz")

Weights are saved atomically every ``save_every`` games and at the end; a run given ``init``
continues from a saved file (same board and features).  One JSON line per chunk of games goes
to ``metrics_path``: games so far, Black's share of wins, mean game length, games per second.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import klent.engine.games as games_registry
from klent.engine.games.go import GoGame
from klent.engine.search.td import Features, ShapeWeights, TdConfig
from klent.engine.search.td_kernels import seed_state
from klent.training.metrics import append_metrics


def train(
    game: str = "go9",
    games: int = 10_000,
    out_path: str | Path = "weights/go9-td.npz",
    *,
    shapes: tuple[int, ...] = (1, 2, 3),
    sharing: tuple[str, ...] = ("LI", "LD"),
    alpha: float = 0.1,
    epsilon: float = 0.1,
    lam: float = 0.0,
    komi: float = 7.5,
    seed: int = 0,
    init: str | Path | None = None,
    save_every: int = 1000,
    metrics_path: str | Path | None = None,
    progress: bool = True,
) -> ShapeWeights:
    """Learn permanent weights from ``games`` self-play games; returns and saves them.

    ``game`` is a Go id ("go9", "go13", ...); ``init`` a ShapeWeights file to continue from
    (its board size, shapes and sharing must match); ``progress`` shows a bar.
    """
    rules = games_registry.get(game)
    if not isinstance(rules, GoGame):
        raise ValueError(f"TD learning plays Go, not {game}")
    rules = rules.with_komi(komi)
    if games < 1 or save_every < 1:
        raise ValueError(f"games and save_every must be >= 1, not {games} and {save_every}")
    # Epsilon-greedy for the whole game: greedy_moves beyond the longest game.
    config = TdConfig(epsilon=epsilon, alpha=alpha, lam=lam, shapes=shapes, sharing=sharing,
                      greedy_moves=rules.max_moves, seed=seed)
    start_weights = _initial(init, rules.size, shapes, sharing)
    features = Features(rules.size, (shapes, sharing), None)
    features.theta[:] = start_weights.theta
    played = int(start_weights.info.get("games", 0))
    info = {"algorithm": "td-learning", "alpha": alpha, "epsilon": epsilon, "lambda": lam, "komi": komi, "seed": seed}
    rng = seed_state(seed + played)
    start = rules.initial_state()
    owners = np.zeros(rules.size**2)  # the simulations' final owners, not needed here
    bar = tqdm(total=games, unit="game", desc=f"TD learning {game}", disable=not progress)
    weights, done = start_weights, 0
    while done < games:
        chunk = min(save_every, games - done)
        wins = moves = 0.0
        clock = time.perf_counter()
        for _ in range(chunk):
            reward, length = features.simulate(start, config, rng, owners)
            wins += reward
            moves += length
            bar.update(1)
        seconds = time.perf_counter() - clock
        done += chunk
        weights = ShapeWeights(rules.size, shapes, sharing, features.theta.copy(), {**info, "games": played + done})
        weights.save(out_path)
        if metrics_path is not None:
            append_metrics(metrics_path, {
                "games": played + done, "black_wins": wins / chunk, "mean_moves": moves / chunk,
                "games_per_second": chunk / max(seconds, 1e-9),
            })
        bar.set_postfix(black=f"{wins / chunk:.2f}", moves=f"{moves / chunk:.0f}")
    bar.close()
    return weights


def _initial(init: str | Path | None, size: int, shapes: tuple[int, ...], sharing: tuple[str, ...]) -> ShapeWeights:
    """The weights to start from: zeros (the paper, Sect. 3.2.1) or a file of the same layout."""
    if init is None:
        return ShapeWeights.zeros(size, shapes, sharing)
    weights = ShapeWeights.load(init)
    if (weights.size, weights.shapes, weights.sharing) != (size, shapes, sharing):
        raise ValueError(f"{init}: weights for {weights.size}x{weights.size} {weights.shapes} {weights.sharing}, "
                         f"not {size}x{size} {shapes} {sharing}")
    return weights
