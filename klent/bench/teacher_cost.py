"""What a Go teacher's labels cost: its CPU seconds per labelled position, by board size and level.

`klent distill label --game goN` asks the teacher, at every position after the opening, for
its ``top_moves`` (its move and the values of its candidates; a teacher without them, Pachi,
for its ``genmove``), and at the end of each game for ``final_score`` and the
``final_status_list`` of every point.  This benchmark plays the teacher against itself the
same way (`klent.training.teacher_go`), from the same kind of random opening, and times those
calls by the teacher process's own CPU time (user + system, from /proc: the machine's other
load is not counted), so the level and the number of positions of a set can be chosen by what
they cost:

    klent bench teacher_cost --sizes 9 13 19 --levels 1 5 10 --moves 120
    klent bench teacher_cost --sizes 9 --levels 1000 10000 --teacher \
        "pachi -t ={level} threads=1,pondering=0,pass_all_alive,resign_threshold=0"

A level is GNU Go's ``--level``, or what replaces ``{level}`` in the teacher's command line
(Pachi's playouts a move).  Per size and level it prints the seconds per position over the
first ``--moves`` plies (and in their first and second halves: the middle game costs more),
the end-of-game labels, and the positions a CPU-hour buys at that rate.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics

import numpy as np

from klent.engine.games.go import MAX_SIZE, MIN_SIZE, GoGame
from klent.matchplay.engine_process import GtpProcess, find_program
from klent.matchplay.openings import off_the_edge
from klent.training.teacher_go import final_ownership, teacher_move


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (Linux /proc)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def teacher_at(teacher: str, level: int) -> list[str]:
    """The teacher's command line at ``level``: ``{level}`` replaced, else GNU Go's ``--level``."""
    if "{level}" in teacher:
        return shlex.split(teacher.replace("{level}", str(level)))
    return [*shlex.split(teacher), "--level", str(level)]


def measure(teacher: str, size: int, level: int, moves: int, seed: int) -> dict[str, float]:
    """One self-play game of ``teacher`` at ``level`` on ``size``: CPU seconds per labelled
    position (``top_moves`` or ``genmove``), by half, and of the end-of-game calls."""
    game = GoGame(size)
    rng = np.random.default_rng([seed, size, level])
    with GtpProcess(teacher_at(teacher, level)) as engine:
        pid = engine.process.pid
        for command in (f"boardsize {size}", "clear_board", f"komi {game.komi:g}"):
            engine.send(command)
        if engine.send("known_command set_random_seed") == "true":
            engine.send(f"set_random_seed {seed}")
        lists_moves = engine.send("known_command top_moves_black") == "true"
        state, costs = game.initial_state(), []
        for ply in range(moves):
            if state.is_terminal:
                break
            colour = "bw"[state.to_play]
            if ply < 6:  # the labeller's opening: random moves off the first line
                action = int(rng.choice(off_the_edge(state)))
                engine.send(f"play {colour} {game.vertex(action)}")
            else:
                before = cpu_seconds(pid)
                top = teacher_move(engine, state, colour, lists_moves, 0)
                costs.append(cpu_seconds(pid) - before)
                if top is None:  # it resigned: the game ends here
                    break
                action = top[0][0]
            state = state.play(action)
        before = cpu_seconds(pid)
        engine.send("final_score", timeout=600.0)
        final_ownership(engine, state)
        end = cpu_seconds(pid) - before
    half = len(costs) // 2
    return {"position": statistics.mean(costs), "first": statistics.mean(costs[:half]),
            "second": statistics.mean(costs[half:]), "end": end, "positions": float(len(costs))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench teacher_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[9, 13, 19], help="board sizes (default 9 13 19)")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 5, 10],
                        help="GNU Go levels, or what replaces {level} in --teacher (default 1 5 10)")
    parser.add_argument("--moves", type=int, default=120, help="plies of each game (default 120)")
    parser.add_argument("--teacher", default="gnugo --mode gtp --chinese-rules",
                        help="the teacher's command line, without --level, or with {level} where its "
                        "level goes (default: GNU Go)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    program = shlex.split(args.teacher)[0]
    found = find_program(program)
    if found is None:
        parser.error(f"cannot find the teacher {program!r}")
    teacher = shlex.join([found, *shlex.split(args.teacher)[1:]])
    if args.moves < 8 or not all(MIN_SIZE <= size <= MAX_SIZE for size in args.sizes):
        parser.error(f"--moves must be at least 8 and sizes within {MIN_SIZE}..{MAX_SIZE}")
    print(f"{'size':>4} {'level':>5} {'s/position':>10} {'first half':>10} {'second half':>11} "
          f"{'game end s':>10} {'positions/CPU-hour':>18}")
    for size in args.sizes:
        for level in args.levels:
            cost = measure(teacher, size, level, args.moves, args.seed)
            print(f"{size:>4} {level:>5} {cost['position']:>10.3f} {cost['first']:>10.3f} {cost['second']:>11.3f} "
                  f"{cost['end']:>10.2f} {3600 / cost['position']:>18,.0f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
