"""Measuring a training run: the JSONL metrics log and the evaluation matches.

The log has one JSON object per iteration (losses, entropy of pi', KL(pi' || pi), |Q - G|,
samples/s, simulator evaluations, win rates when evaluated); `klent plot` draws it, and
`run_summary` says it in one line.  The evaluation plays the greedy policy (argmax of the
policy head, no search: the paper's reactive evaluation, appendix B) against uniform random
play and against an earlier model; games always start from the initial position, colours
alternate, a draw counts half.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from klent.engine.files import parse_json, read_text, write_text_atomically
from klent.engine.games.base import Game, State
from klent.engine.network import Evaluator
from klent.matchplay.stats import MatchSummary

# An agent picks one action for each of a batch of states (one network call for all of them).
Agent = Callable[[Sequence[State]], np.ndarray]
# The largest metrics log read: a line per iteration of about 500 bytes (a chess run's 272
# iterations: 122 KB), so this is room for 500,000 iterations.
MAX_METRICS_BYTES = 256 << 20


# ---------------------------------------------------------------------------------------------
# The JSONL log
# ---------------------------------------------------------------------------------------------


def append_metrics(path: str | Path, record: dict) -> None:
    """Append one record as a line (flushed and fsynced: the line is complete or absent)."""
    line = json.dumps(_finite(record), sort_keys=True) + "\n"
    with open(path, "a", encoding="utf-8") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


def read_metrics(path: str | Path) -> list[dict]:
    """All complete records of a log; a torn line (a killed writer) is ignored, as is any other
    line that is not JSON, and a log larger than `MAX_METRICS_BYTES` is a ValueError."""
    records = []
    for line in read_text(path, MAX_METRICS_BYTES).splitlines():
        try:
            records.append(parse_json(line))
        except ValueError:
            continue
    return records


def truncate_metrics(path: str | Path, last_iteration: int) -> None:
    """Keep only the records up to ``last_iteration`` (atomically), for a resumed run whose
    process died after logging an iteration but before checkpointing it."""
    path = Path(path)
    if not path.exists():
        return
    kept = [r for r in read_metrics(path) if r.get("iteration", -1) <= last_iteration]
    write_text_atomically(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in kept))


def run_summary(records: list[dict]) -> str:
    """One line: how much a run has spent and how its latest evaluation went.

    ``cpu_seconds`` is cumulative from the first iteration the trainer metered (runs begun
    before it metered CPU lack it earlier), so the line says from which iteration it counts.
    """
    last = records[-1]
    parts = [
        f"iteration {last['iteration']}",
        f"{last.get('samples', 0):,} samples",
        f"{last.get('simulator_evaluations', 0):,} simulator evaluations",
    ]
    metered = [r for r in records if r.get("cpu_seconds") is not None]
    if metered:
        since = "" if metered[0] is records[0] else f" from iteration {metered[0]['iteration']} on"
        parts.append(f"{metered[-1]['cpu_seconds'] / 3600:.2f} CPU-hours{since}")
    if last.get("wall_seconds") is not None:
        parts.append(f"{last['wall_seconds'] / 3600:.2f} wall hours")
    evaluated = [r for r in records if r.get("winrate_random") is not None]
    if evaluated:
        latest = evaluated[-1]
        parts.append(f"vs random {latest['winrate_random']:.2f} at iteration {latest['iteration']}")
    return ", ".join(parts)


def _finite(record: dict) -> dict:
    """NaN / inf become null: JSON has no NaN, and plotting skips nulls."""
    return {
        k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()
    }


# ---------------------------------------------------------------------------------------------
# Agents and matches
# ---------------------------------------------------------------------------------------------


def greedy_agent(evaluator: Evaluator) -> Agent:
    """argmax of the masked policy logits: the network's reactive move."""

    def choose(states: Sequence[State]) -> np.ndarray:
        return evaluator.evaluate(states).policy_logits.argmax(axis=1)

    return choose


def random_agent(rng: np.random.Generator) -> Agent:
    """A uniformly random legal move."""

    def choose(states: Sequence[State]) -> np.ndarray:
        return np.array([rng.choice(state.legal_actions()) for state in states], dtype=np.int64)

    return choose


def play_games(
    game: Game,
    agent: Agent,
    opponent: Agent,
    games: int,
    rng: np.random.Generator,
    opening_plies: int = 0,
) -> np.ndarray:
    """``agent``'s reward (+1, 0, -1) in each of ``games`` games; it moves first in the even ones.

    All games run side by side so each agent makes one batched call per move.  The first
    ``opening_plies`` moves of every game are uniformly random (drawn with ``rng``): two
    deterministic players would otherwise repeat the same two games.
    """
    if games < 1:
        raise ValueError("a match needs at least one game")
    states = [game.initial_state() for _ in range(games)]
    agent_player = np.arange(games) % 2  # the player the agent is in each game
    while True:
        running = [i for i, s in enumerate(states) if not s.is_terminal]
        if not running:
            break
        choices: dict[int, int] = {}
        for i in running:
            if states[i].move_number < opening_plies:
                choices[i] = int(rng.choice(states[i].legal_actions()))
        rest = [i for i in running if i not in choices]
        for who, chooser in ((True, agent), (False, opponent)):
            mine = [i for i in rest if (states[i].to_play == agent_player[i]) == who]
            if mine:
                for i, action in zip(mine, chooser([states[i] for i in mine])):
                    choices[i] = int(action)
        for i, action in choices.items():
            states[i] = states[i].play(action)
    return np.array([s.reward_for(int(p)) for s, p in zip(states, agent_player)])


def match_score(rewards: np.ndarray) -> float:
    """Score of the player whose rewards (+1, 0, -1) these are: (wins + draws / 2) / games."""
    return MatchSummary.from_rewards(rewards).win_rate
