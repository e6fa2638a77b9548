"""PackedPlanes (klent.training.packed): observations kept as bits give back what was put in."""

from __future__ import annotations

import numpy as np

import klent.engine.games
from klent.training.packed import PackedPlanes


def _random_walk(name: str, plies: int, seed: int) -> list[np.ndarray]:
    game = klent.engine.games.get(name)
    rng = np.random.default_rng(seed)
    state, observations = game.initial_state(), []
    for _ in range(plies):
        observations.append(game.encode(state))
        if state.is_terminal:
            break
        state = state.play(int(rng.choice(np.flatnonzero(state.legal_mask()))))
    return observations


def test_chess_and_go_observations_come_back_exactly_and_chess_twelve_times_smaller() -> None:
    for name in ("chess", "go9"):
        observations = np.stack(_random_walk(name, 60, seed=1))
        packed = PackedPlanes.from_array(observations)
        expected = observations.astype(np.float16).astype(np.float32)  # the precision kept before
        np.testing.assert_array_equal(packed[np.arange(len(packed))], expected)
        rows = np.array([59, 0, 30, 30])
        np.testing.assert_array_equal(packed[rows], expected[rows])
    # chess's move counter is 0 at the start and a fraction later: found exact after row 0
    chess_obs = np.stack(_random_walk("chess", 40, seed=2))
    packed = PackedPlanes.from_array(chess_obs)
    assert packed.exact and all(not set(np.unique(chess_obs[:, p])) <= {0.0, 1.0} for p in packed.exact)
    stored = packed.bits.nbytes + sum(v.nbytes for v in packed.exact.values())
    assert stored * 12 < chess_obs.astype(np.float16).nbytes


def test_a_plane_exact_in_one_part_only_is_exact_in_the_concatenation() -> None:
    binary = np.zeros((3, 2, 2, 2), np.float32)
    binary[:, 1] = 1.0
    scaled = binary.copy()
    scaled[1, 1] = 0.25  # plane 1 holds a fraction in row 1 only
    first, second = PackedPlanes.from_array(binary), PackedPlanes.from_array(scaled)
    assert not first.exact and list(second.exact) == [1]
    both = PackedPlanes.concatenate([first, second])
    np.testing.assert_array_equal(both[np.arange(6)], np.concatenate([binary, scaled]))
    np.testing.assert_array_equal(both.take(4)[np.arange(4)], np.concatenate([binary, scaled[:1]]))
