"""The reactive policy: one network call, no search (the KLENT paper's evaluation setting).

The move is the argmax of the masked policy, or, with a temperature T > 0, a sample from
softmax(logits / T).  The result has the same type as a search result so callers need not care
which one ran: ``simulations`` 0, ``improved_policy`` = ``prior`` = softmax of the masked
logits, ``q`` = the network's action values, ``value`` = V (value head, else sum pi Q), and
the ownership and score heads' outputs where the model has them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import overload

import numpy as np

from klent.engine.games.base import State
from klent.engine.network import Evaluator, softmax, state_values
from klent.engine.search.result import SearchResult


@overload
def reactive(root_states: State, evaluator: Evaluator, *, temperature: float = ...,
             rng: np.random.Generator | None = ...) -> SearchResult: ...


@overload
def reactive(root_states: Sequence[State], evaluator: Evaluator, *, temperature: float = ...,
             rng: np.random.Generator | None = ...) -> list[SearchResult]: ...


def reactive(
    root_states: State | Sequence[State],
    evaluator: Evaluator,
    *,
    temperature: float = 0.0,
    rng: np.random.Generator | None = None,
) -> SearchResult | list[SearchResult]:
    """Pick a move for one state or for each of many (evaluated in one batch)."""
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    start = time.perf_counter()
    single = isinstance(root_states, State)
    states = [root_states] if isinstance(root_states, State) else list(root_states)
    if any(s.is_terminal for s in states):
        raise ValueError("cannot choose a move in a terminal position")
    if not states:
        return []
    evaluation = evaluator.evaluate(states)
    logits = evaluation.policy_logits.astype(np.float64)
    values = state_values(evaluation)
    policy = softmax(logits).astype(np.float32)
    if temperature == 0:
        actions = logits.argmax(axis=1)
    else:
        generator = rng if rng is not None else np.random.default_rng()
        # Shifted before dividing: the best logit is then 0 whatever the temperature, where
        # logits / 5e-324 would be infinite and their softmax NaN (inf - inf); the others may
        # overflow to -inf, a probability of 0.
        with np.errstate(over="ignore"):
            sampling = softmax((logits - logits.max(axis=1, keepdims=True)) / temperature)
        actions = np.array([generator.choice(p.size, p=p) for p in sampling])
    elapsed = time.perf_counter() - start
    results = [
        SearchResult(
            action=int(actions[i]),
            improved_policy=policy[i],
            visits=np.zeros(logits.shape[1], dtype=np.int32),
            q=evaluation.action_values[i].astype(np.float32),
            value=float(values[i]),
            pv=[int(actions[i])],
            simulations=0,
            elapsed=elapsed,
            prior=policy[i],
            ownership=None if evaluation.ownership is None else evaluation.ownership[i],
            score=None if evaluation.score is None else float(evaluation.score[i]),
        )
        for i in range(len(states))
    ]
    return results[0] if single else results
