"""The Go teacher (GTP: GNU Go or Pachi) and its labelled games.

Go, with a GTP teacher: the first ``opening_plies`` moves are random (off the first line), then
the teacher plays itself; every later position gets the teacher's move and from the end of the
game the result (``final_score``) and each point's final owner (``final_status_list``:
territory, living and seki stones for their colour, dead stones for the captor), both from the
view of the player to move.  A teacher with ``top_moves_black/white`` (GNU Go) lists its best
moves with their values (points, GNU Go's scale), and its move is the first of them; a teacher
without it (Pachi) is asked to ``genmove``, and its move is listed alone.

Such a teacher may resign.  Its game then ends there, and is counted as it stands: the area of
the board without the stones the teacher lists dead (``final_status_list dead``) is both the
final ownership and the result.  Where that count does not favour the side that did not resign
(territory still open), the game's positions are dropped rather than labelled with a result the
teacher did not believe.  Resigning keeps the teacher's lost games from their end: a Monte-Carlo
engine that may not resign plays a lost game on at random, its groups die, and every such game
ends with one colour owning the whole board.
"""

from __future__ import annotations

import hashlib

import numpy as np

from klent.engine.games.go import GoGame, GoState
from klent.engine.go_rules import without_stones
from klent.engine.player import Player
from klent.matchplay.engine_process import EngineError, GtpFailure, GtpProcess
from klent.matchplay.openings import off_the_edge
from klent.protocols.go_text import pachi_win_rate, score_points
from klent.training.dagger import student_move, student_until
from klent.training.shards import TEACHER_TIMEOUT, LabelConfig, LabelledGame, rules

# The `final_status_list` classes whose points make a game's final ownership, asked at its end.
FINAL_STATUSES = ("black_territory", "white_territory", "alive", "seki", "dead")


def play_labelled_go_game(
    teacher: GtpProcess, config: LabelConfig, index: int, student: Player | None = None
) -> LabelledGame:
    """Go game ``index``: a GTP engine with ``final_status_list`` (GNU Go, Pachi) against itself
    from ``opening_plies`` random moves off the first line (and the ``student``'s plies, if the
    set has one), every later position labelled with the teacher's top moves or its move; then
    the final score and ownership as the teacher judges them (dead stones removed)."""
    game = rules(config.game)
    assert isinstance(game, GoGame)
    rng = np.random.default_rng([config.seed, index])
    handover = student_until(config, rng, student)
    record = LabelledGame(index, [], [], [], [], first_ply=handover)
    state = game.initial_state()
    teacher.send(f"boardsize {game.size}")
    teacher.send("clear_board")
    teacher.send(f"komi {game.komi:g}")
    teacher.send_optional(f"set_random_seed {index}")  # an engine without it plays its own way
    lists_moves = teacher.send("known_command top_moves_black") == "true"
    rates_moves = not lists_moves and teacher.send("known_command pachi-result") == "true"
    resigned: str | None = None  # the colour that resigned
    while not state.is_terminal and state.move_number < config.max_plies:
        colour = "bw"[state.to_play]
        if state.move_number < config.opening_plies:
            inner = off_the_edge(state)
            action = int(rng.choice(inner)) if inner else game.pass_action
            teacher.send(f"play {colour} {game.vertex(action)}")
        elif student is not None and state.move_number < handover:
            action = student_move(student, state)
            teacher.send(f"play {colour} {game.vertex(action)}")
        else:
            top = teacher_move(teacher, state, colour, lists_moves, index)
            if top is None:
                resigned = colour
                break
            action = top[0][0]
            record.hashes.append(go_position_hash(state))
            record.actions.append(np.array([a for a, _ in top], dtype=np.int32))
            record.values.append(np.array([x for _, x in top], dtype=np.float32))
            record.teacher_moves.append(action)
            record.teacher_values.append(win_value(teacher, index) if rates_moves else float("nan"))
        record.moves.append(game.vertex(action))
        state = state.play(action)
    if resigned is not None:
        record.ownership = judged_area(teacher, state)
        record.result = float(record.ownership.sum()) - game.komi
        if np.sign(record.result) != (1 if resigned == "w" else -1):  # the count disagrees: drop
            record.hashes, record.actions, record.values = [], [], []
            record.teacher_moves, record.teacher_values = [], []
        return record
    score = teacher.send("final_score", timeout=TEACHER_TIMEOUT)
    result = score_points(score)
    if result is None:
        raise EngineError(f"the teacher's final_score {score!r} is not a score")
    record.result = result
    record.ownership = final_ownership(teacher, state)
    return record


def judged_area(teacher: GtpProcess, state: GoState) -> np.ndarray:
    """``int8[points]``: the area of the board from Black's view without the stones the teacher
    lists dead (Tromp-Taylor: an empty region is the colour's that alone borders it)."""
    listed = teacher.send("final_status_list dead", timeout=TEACHER_TIMEOUT).split()
    return without_stones(state, {state.game.parse_vertex(v) for v in listed}).ownership().reshape(-1)


def final_ownership(teacher: GtpProcess, state: GoState) -> np.ndarray:
    """``int8[points]``: each point's final owner from Black's view, as the teacher judges the
    finished game: its territory and stone lists (GNU Go), or, from a teacher that lists only
    stones (Pachi: alive, seki and dead), the area of the board without its dead stones."""
    game = state.game
    stones = state.board().reshape(-1)
    try:
        listed = {status: teacher.send(f"final_status_list {status}", timeout=TEACHER_TIMEOUT).split()
                  for status in FINAL_STATUSES}
    except GtpFailure:
        return judged_area(teacher, state)
    owner = np.zeros(game.size * game.size, dtype=np.int8)
    for status, vertices in listed.items():
        for vertex in vertices:
            point = game.parse_vertex(vertex)
            # territory: its colour; a living stone (seki too): its own; a dead stone: the captor's
            owner[point] = {"black_territory": 1, "white_territory": -1, "dead": -stones[point]}.get(
                status, stones[point])
    return owner


def teacher_move(teacher: GtpProcess, state: GoState, colour: str, lists_moves: bool,
                 index: int) -> list[tuple[int, float]] | None:
    """The teacher's move in ``state`` with the moves it lists, best first, its own first, played
    on its board: GNU Go's ``top_moves`` (``lists_moves``; a pass when it lists none), or the move
    a teacher without them generates, alone with value 0; None when it resigned."""
    if lists_moves:
        top = listed_moves(teacher, state, colour) or [(state.game.pass_action, 0.0)]
        teacher.send(f"play {colour} {state.game.vertex(top[0][0])}")
        return top
    move = generated_move(teacher, state, colour, index)
    return None if move is None else [(move, 0.0)]


def listed_moves(teacher: GtpProcess, state: GoState, colour: str) -> list[tuple[int, float]]:
    """The teacher's best legal moves in ``state`` with their values, best first (GNU Go's
    ``top_moves_black/white``)."""
    game = state.game
    side = "black" if colour == "b" else "white"
    listed = teacher.send(f"top_moves_{side}", timeout=TEACHER_TIMEOUT).split()
    top = [(game.parse_vertex(v), float(x)) for v, x in zip(listed[::2], listed[1::2])]
    legal = state.legal_mask()
    return [(a, x) for a, x in top if legal[a]]  # GNU Go ignores positional superko


def generated_move(teacher: GtpProcess, state: GoState, colour: str, index: int) -> int | None:
    """The move the teacher plays in ``state`` (``genmove``, which plays it on its board too);
    None when it resigns."""
    reply = teacher.send(f"genmove {colour}", timeout=TEACHER_TIMEOUT)
    if reply.lower() == "resign":
        return None
    action = state.game.parse_vertex(reply)
    if not state.legal_mask()[action]:
        raise EngineError(f"the teacher played {reply}, an illegal move here (game {index})")
    return action


def win_value(teacher: GtpProcess, index: int) -> float:
    """The teacher's value of the move its last ``genmove`` chose, as W - L for the side that
    played it: Pachi's ``pachi-result`` (``colour move playouts winrate dynkomi``) read as
    2 * winrate - 1."""
    reply = teacher.send("pachi-result", timeout=TEACHER_TIMEOUT)
    rate = pachi_win_rate(reply)
    if rate is None:
        raise EngineError(f"the teacher's pachi-result {reply!r} holds no win rate (game {index})")
    return 2.0 * rate - 1.0


def go_position_hash(state: GoState) -> int:
    """A hash of a Go position (stones, side to move, passes) that is the same in every process
    (Python's ``hash`` of bytes is not), for deduplication across resumed runs."""
    data = bytes([state.to_play, state.consecutive_passes]) + state.board().tobytes()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")
