"""Go-Exploit start states (Trudeau & Bowling, "Go-Exploit Visited States, Circular Archive").

A self-play game starts from the initial position with probability ``initial_prob`` (the
paper's lambda_s = 0.1) and otherwise from a state drawn uniformly from a circular archive of
the most recently visited non-terminal states, so the learner revisits (and corrects) positions
all over the game tree instead of only those its current policy reaches from the start.
Evaluation games never use the archive.

A state is kept as the actions that lead to it from the initial position: an action list is
tiny, replaying it is exact for every game, and it can be checkpointed as plain integers.
Several entries share one game's action list (a prefix of an append-only list never changes).
"""

from __future__ import annotations

import numpy as np

from klent.engine.games.base import Game, State


def replay(game: Game, actions: list[int] | tuple[int, ...]) -> State:
    """The state reached from ``game.initial_state()`` by playing ``actions``."""
    state = game.initial_state()
    for action in actions:
        state = state.play(action)
    return state


class StartArchive:
    """A fixed-size circular archive of visited states, each a prefix of a game's actions."""

    def __init__(self, capacity: int, initial_prob: float = 0.1) -> None:
        if capacity < 1:
            raise ValueError("a start-state archive needs a capacity of at least 1")
        if not 0.0 <= initial_prob <= 1.0:
            raise ValueError("the archive's initial-state probability must be in [0, 1]")
        self.capacity = capacity
        self.initial_prob = initial_prob
        self._entries: list[tuple[list[int], int]] = []  # (a game's action list, prefix length)
        self._next = 0  # slot the next entry overwrites once the archive is full

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, actions: list[int], length: int) -> None:
        """Remember the state after the first ``length`` of ``actions`` (a non-terminal one)."""
        if len(self._entries) < self.capacity:
            self._entries.append((actions, length))
        else:
            self._entries[self._next] = (actions, length)
        self._next = (self._next + 1) % self.capacity

    def sample_start(self, rng: np.random.Generator) -> list[int]:
        """Actions of a start state: [] (the initial state) with probability ``initial_prob``
        or while the archive is empty, else a uniformly drawn archived state's prefix."""
        if not self._entries or rng.random() < self.initial_prob:
            return []
        actions, length = self._entries[int(rng.integers(len(self._entries)))]
        return actions[:length]

    def state_dict(self) -> dict:
        """Plain-Python snapshot (shared action lists stored once) for checkpoints."""
        index: dict[int, int] = {}
        lists: list[list[int]] = []
        refs: list[tuple[int, int]] = []
        for actions, length in self._entries:
            if id(actions) not in index:
                index[id(actions)] = len(lists)
                lists.append(list(actions))
            refs.append((index[id(actions)], length))
        return {"lists": lists, "refs": refs, "next": self._next}

    def load_state_dict(self, data: dict) -> None:
        lists = [list(actions) for actions in data["lists"]]
        self._entries = [(lists[i], int(length)) for i, length in data["refs"]]
        self._next = int(data["next"])
