"""The Go rules checked move by move against GNU Go, driven over GTP.

Random games (uniformly random legal moves that never fill the mover's own single-point eye,
pass when there is none) are generated with klent's rules, then replayed into GNU Go in one
pipelined batch per game.  At every position GNU Go's ``is_legal`` is asked about every empty
point and compared with ``legal_mask``; after every move both boards (``list_stones``) must
agree, captures included; at the end the area score must equal GNU Go's ``final_score`` under
Chinese (area) rules wherever every stone is alive (see `check_final_score`).

Ko: GNU Go runs with ``--positional-superko``, but its memory of earlier positions is bounded
(in our runs every disagreement came after move 500 of a 19x19 game), and without that flag
it applies simple ko only.  Positional superko forbids strictly more than either, so the one
disagreement allowed is klent forbidding a move that GNU Go allows, and then klent's verdict
is checked on its own: klent's error message must say superko, and an independent
plain-Python capture routine must show that the move recreates a position that occurred
earlier in the game.  Every such case is counted and printed (``pytest -s``).
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator

import numpy as np
import pytest

from klent.engine.games.base import IllegalMoveError
from klent.engine.games.go import GoGame, GoState

KOMI = 7.5
SENTINEL_ID = 999999
SENTINEL_ANSWER = f"={SENTINEL_ID} GNU Go\n\n".encode()


class Gtp:
    """A GNU Go process spoken to in batches: all commands written, then all answers read."""

    def __init__(self, path: str) -> None:
        self.proc = subprocess.Popen(
            [path, "--mode", "gtp", "--chinese-rules", "--positional-superko", "--level", "0"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def batch(self, commands: list[str]) -> list[str]:
        """Answers to ``commands`` in order.

        A writer thread keeps both pipes flowing; the answers are read in large chunks until
        the numbered sentinel command at the end has answered, then split on blank lines.
        """
        assert self.proc.stdin is not None and self.proc.stdout is not None
        stdin, fd = self.proc.stdin, self.proc.stdout.fileno()
        text = "\n".join([*commands, f"{SENTINEL_ID} name"]) + "\n"
        writer = threading.Thread(target=lambda: (stdin.write(text), stdin.flush()))
        writer.start()
        chunks: list[bytes] = []
        tail = b""
        while not tail.endswith(SENTINEL_ANSWER):
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise RuntimeError("GNU Go exited in the middle of a batch")
            chunks.append(chunk)
            tail = (tail + chunk)[-64:]
        writer.join()
        answers = b"".join(chunks).decode().split("\n\n")[: len(commands)]
        for command, answer in zip(commands, answers):
            if not answer.startswith("="):
                raise RuntimeError(f"GNU Go refused {command!r}: {answer}")
        return [answer[1:].strip().replace("\n", " ") for answer in answers]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def gnugo(gnugo_path: str) -> Iterator[Gtp]:
    engine = Gtp(gnugo_path)
    yield engine
    engine.close()


def own_eyes(board: np.ndarray, color: int) -> np.ndarray:
    """Empty points whose every on-board neighbour is a stone of ``color``."""
    own = np.pad(board == color, 1, constant_values=True)
    return (board == 0) & own[:-2, 1:-1] & own[2:, 1:-1] & own[1:-1, :-2] & own[1:-1, 2:]


def random_game(game: GoGame, rng: np.random.Generator) -> list[GoState]:
    """Every position of one random game that never fills its own single-point eyes."""
    state = game.initial_state()
    states = [state]
    while not state.is_terminal:
        color = 1 if state.to_play == 0 else -1
        candidates = np.flatnonzero(state.legal_mask()[:-1] & ~own_eyes(state.board(), color).ravel())
        action = int(candidates[rng.integers(len(candidates))]) if len(candidates) else game.pass_action
        state = state.play(action)
        states.append(state)
    return states


def neighbours(size: int, row: int, col: int) -> list[tuple[int, int]]:
    around = ((row - 1, col), (row + 1, col), (row, col - 1), (row, col + 1))
    return [(r, c) for r, c in around if 0 <= r < size and 0 <= c < size]


def group_and_liberties(board: np.ndarray, row: int, col: int) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    """Independent reference: the stones of the group at (row, col) and its liberties."""
    stones, liberties, todo = {(row, col)}, set(), [(row, col)]
    while todo:
        for r, c in neighbours(board.shape[0], *todo.pop()):
            if board[r, c] == 0:
                liberties.add((r, c))
            elif board[r, c] == board[row, col] and (r, c) not in stones:
                stones.add((r, c))
                todo.append((r, c))
    return stones, liberties


def board_after(board: np.ndarray, row: int, col: int, color: int) -> np.ndarray:
    """Independent reference: ``board`` after ``color`` plays (row, col), captures removed."""
    new = board.copy()
    new[row, col] = color
    for r, c in neighbours(board.shape[0], row, col):
        if new[r, c] == -color:
            stones, liberties = group_and_liberties(new, r, c)
            if not liberties:
                for y, x in stones:
                    new[y, x] = 0
    return new


def atari_liberties(board: np.ndarray) -> set[tuple[int, tuple[int, int]]]:
    """(colour of the group, its only liberty) for every group with a single liberty."""
    found, done = set(), set()
    for row, col in zip(*np.nonzero(board)):
        if (row, col) in done:
            continue
        stones, liberties = group_and_liberties(board, int(row), int(col))
        done |= stones
        if len(liberties) == 1:
            found.add((int(board[row, col]), liberties.pop()))
    return found


def stones_text(vertices: list[str], board: np.ndarray, color: int) -> set[str]:
    return {vertices[p] for p in np.flatnonzero(board.ravel() == color)}


def gnugo_score(text: str) -> float:
    """GNU Go's final_score ("B+3.5", "W+0.5", "0") as Black's margin."""
    if text == "0":
        return 0.0
    winner, margin = text.split("+")
    return float(margin) if winner == "B" else -float(margin)


def check_game(gnugo: Gtp, game: GoGame, states: list[GoState]) -> tuple[int, bool, bool]:
    """Replays one game into GNU Go and compares everything.

    Returns the number of superko-only legality disagreements, whether the game ended frozen
    by superko and whether the final score was compared (see `check_final_score`).
    """
    vertices = [game.vertex(p) for p in range(game.num_actions)]
    commands = [f"boardsize {game.size}", "clear_board", f"komi {game.komi}"]
    layout: list[tuple[str, int, list[int]]] = []  # (kind, state index, points) per command group
    for i, state in enumerate(states[:-1]):
        colour = "black" if state.to_play == 0 else "white"
        empty = [int(p) for p in np.flatnonzero(state.board().ravel() == 0)]
        commands += [f"is_legal {colour} {vertices[p]}" for p in empty]
        layout.append(("is_legal", i, empty))
        commands += [f"play {colour} {vertices[states[i + 1].last_action]}", "list_stones black", "list_stones white"]
        layout.append(("play", i + 1, []))
    frozen = atari_liberties(states[-1].board())
    commands += ["final_score", "final_status_list dead"] if frozen else ["final_score"]
    answers = gnugo.batch(commands)[3:]

    superko_only = 0
    earlier = {states[0].board().tobytes()}
    at = 0  # next answer
    for kind, index, points in layout:
        state = states[index]
        if kind == "play":
            black, white = set(answers[at + 1].split()), set(answers[at + 2].split())
            at += 3
            where = f"after move {index} ({game.vertex(state.last_action)})"
            assert black == stones_text(vertices, state.board(), 1), f"black stones differ {where}"
            assert white == stones_text(vertices, state.board(), -1), f"white stones differ {where}"
            earlier.add(state.board().tobytes())
            continue
        theirs = np.array(answers[at : at + len(points)]) == "1"
        at += len(points)
        ours = state.legal_mask()[points]
        color = 1 if state.to_play == 0 else -1
        for point in np.array(points)[ours != theirs]:
            vertex = game.vertex(point)
            assert not ours[points.index(point)], f"move {index}: klent allows {vertex}, GNU Go forbids it"
            # klent forbids, GNU Go allows: only superko may explain it, and it must be real.
            with pytest.raises(IllegalMoveError, match="superko"):
                state.play(point)
            repeated = board_after(state.board(), *divmod(int(point), game.size), color)
            assert repeated.tobytes() in earlier, f"move {index}: {vertex} called superko but repeats nothing"
            superko_only += 1
    theirs = gnugo_score(answers[at])
    dead = answers[at + 1].split() if frozen else []
    compared = check_final_score(states[-1], frozen, earlier, theirs, dead)
    return superko_only, bool(frozen), compared


def check_final_score(
    final: GoState, frozen: set[tuple[int, tuple[int, int]]], earlier: set[bytes], theirs: float, dead: list[str]
) -> bool:
    """Compares the area score with GNU Go's ``final_score`` (``dead``: its dead stones).

    A random game that never fills its own eyes ends when neither side has another move.  If
    no group is then in atari, every empty point is a single-point eye and every stone is
    alive: GNU Go must agree on the score.  A group can also be left in
    atari when capturing it would repeat an earlier position: superko forbids the capture, so
    under klent's rules the group stays, while GNU Go's dead-stone estimate may take it off.
    Those endings (``frozen``: colour and only liberty of each group in atari) are asserted
    to be real superko freezes, and their scores are compared only if GNU Go calls nothing
    dead.  Returns whether the score was compared.
    """
    assert final.consecutive_passes == 2 and not final.is_truncated
    board = final.board()
    for color, (row, col) in frozen:
        capture = board_after(board, row, col, -color)
        assert capture.tobytes() in earlier, f"group in atari at the end can be captured at {row, col}"
    if dead:
        return False
    assert final.score() == theirs, f"score {final.score()} differs from GNU Go's {theirs}"
    return True


@pytest.mark.parametrize(("size", "games"), [(9, 200), (19, 12)])
def test_random_games_match_gnugo(gnugo: Gtp, size: int, games: int) -> None:
    game = GoGame(size, komi=KOMI, max_moves=10 * size * size)  # a cap random games never reach
    rng = np.random.default_rng(size)
    superko_only = frozen = scored = moves = 0
    for _ in range(games):
        states = random_game(game, rng)
        moves += len(states) - 1
        disagreements, superko_ending, compared = check_game(gnugo, game, states)
        superko_only += disagreements
        frozen += superko_ending
        scored += compared
    print(
        f"\n{size}x{size}: {games} games, {moves} moves; {superko_only} moves only superko forbids "
        f"(GNU Go allows); {frozen} endings frozen by superko; {scored} final scores compared"
    )
    assert moves > games * size * size // 2  # real games, not early double passes
    assert scored >= games // 4  # the score comparison really ran (200 games: 184 scored)


@pytest.mark.parametrize("size", [7, 8, 9, 12, 13, 19])
def test_fixed_handicap_matches_gnugo(gnugo: Gtp, size: int) -> None:
    game = GoGame(size)
    largest = game.max_fixed_handicap()
    commands = [f"boardsize {size}"]
    for stones in range(2, largest + 1):
        commands += ["clear_board", f"fixed_handicap {stones}"]
    answers = gnugo.batch(commands)[2::2]
    for stones, answer in zip(range(2, largest + 1), answers):
        ours = {game.vertex(p) for p in game.fixed_handicap_points(stones)}
        assert ours == set(answer.split()), f"{size}x{size} handicap {stones}"
    with pytest.raises(ValueError):
        game.fixed_handicap_points(largest + 1)
