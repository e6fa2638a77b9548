"""DAgger's student in teacher labelling.

Student positions (``student``, DAgger's remedy for a student that meets positions its teacher
never plays into): in each game a network -- the model being trained -- plays both sides for
the first k plies after the opening, k drawn uniformly from 0..``student_plies`` per game, as
it plays reactively (the argmax of its policy, Go's move rules applied); the teacher plays
the rest.  The positions its mistakes lead to are then labelled by the teacher.  Chess labels
every position, the student's too (a label is a search of the position, whoever moves next);
Go labels from the teacher's first move on, since its Q target is the game's outcome, which
must come from the teacher's play.
"""

from __future__ import annotations

import numpy as np

from klent.engine.games.base import State
from klent.engine.player import Player, PlayOptions
from klent.training.shards import LabelConfig, rules


def student_until(config: LabelConfig, rng: np.random.Generator, student: Player | None) -> int:
    """The ply at which the student of one game hands over to the teacher: the end of the
    opening plus k plies drawn uniformly in 0..``student_plies`` (no random draw without a
    student, so the games of a set without one stay as they were)."""
    assert (student is None) == (config.student is None), "a set with a student plays it (open_student)"
    return config.opening_plies + (int(rng.integers(0, config.student_plies + 1)) if config.student else 0)


def open_student(config: LabelConfig) -> Player:
    """The student as it plays a match reactively: the argmax of its policy (Go's move rules
    applied), one ONNX Runtime thread; a missing model or one of another game is a ValueError."""
    assert config.student is not None
    try:
        return Player.load(rules(config.game), config.student, options=PlayOptions(mode="reactive"), threads=1)
    except (FileNotFoundError, ValueError) as error:
        raise ValueError(f"cannot load the student {config.student!r}: {error}") from None


def student_move(student: Player, state: State) -> int:
    """The student's move in ``state``."""
    student.set_position(state)
    return student.decide().action
