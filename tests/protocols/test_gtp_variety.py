"""Variety at play time: `klent gtp --gumbel-scale` (root Gumbel noise), so that games against
a deterministic opponent such as GNU Go are not replays of each other."""

from __future__ import annotations

import subprocess
import sys


def first_moves(model: str, *options: str) -> list[str]:
    """Black's first move on an empty 9x9 board for seeds 1 to 4 (one search of 8 simulations)."""
    moves = []
    for seed in range(1, 5):
        done = subprocess.run(
            [sys.executable, "-m", "klent", "gtp", "--model", model, "--simulations", "8", "--seed", str(seed),
             *options],
            input="boardsize 9\nclear_board\ngenmove b\nquit\n", capture_output=True, text=True, timeout=120,
        )
        replies = [line for line in done.stdout.splitlines() if line.startswith("=")]
        moves.append(replies[2][1:].strip())
    return moves


def test_gumbel_noise_varies_the_moves_and_stays_reproducible(untrained_model) -> None:
    model = untrained_model("go9")
    plain = first_moves(model)
    assert len(set(plain)) == 1  # no noise: the same search whatever the seed
    noisy = first_moves(model, "--gumbel-scale", "1")
    assert len(set(noisy)) > 1
    assert first_moves(model, "--gumbel-scale", "1") == noisy  # a seed replays its game


def test_set_random_seed_replays_each_game_of_one_session(untrained_model) -> None:
    """GNU Go's `set_random_seed`, which `klent match` sends before each game: one process
    started with another seed plays each seed's first move as a process started with it does."""
    model = untrained_model("go9")
    games = "".join(f"clear_board\nset_random_seed {seed}\ngenmove b\n" for seed in (1, 2, 3, 4, 1))
    done = subprocess.run(
        [sys.executable, "-m", "klent", "gtp", "--model", model, "--simulations", "8", "--seed", "99",
         "--gumbel-scale", "1"],
        input=f"boardsize 9\n{games}set_random_seed x\nquit\n", capture_output=True, text=True, timeout=120,
    )
    replies = [line for line in done.stdout.splitlines() if line.startswith(("=", "?"))]
    moves = [reply[1:].strip() for reply in replies[3:-2:3]]
    noisy = first_moves(model, "--gumbel-scale", "1")
    assert moves == [*noisy, noisy[0]]
    assert replies[-2] == "? syntax error"


def test_a_bad_gumbel_scale_is_a_one_line_error(untrained_model) -> None:
    command = [sys.executable, "-m", "klent", "gtp", "--model", untrained_model("go9"), "--gumbel-scale", "nan"]
    done = subprocess.run(command, input="", capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--gumbel-scale" in done.stderr and "Traceback" not in done.stderr
