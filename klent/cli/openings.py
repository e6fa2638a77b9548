"""`klent openings`: balanced random openings for `klent match --openings`.

    klent openings --game chess --count 50 --plies 8 --out openings/chess-50.txt
    klent openings --game go9 --count 50 --plies 4 --out openings/go9-50.txt
    klent openings --game gardner --count 100 --plies 4 --out openings/gardner-100.txt

Random moves, kept where a judge engine values the position near even (chess: Stockfish's
|W - L| <= --max-value; Go: GNU Go's estimate_score within --max-value points; Gardner chess
and Animal Shogi: Fairy-Stockfish's score within --max-value pawns).  Seeded, so the file is
reproducible from its command (see klent/matchplay/openings.py).
"""

from __future__ import annotations

import argparse

from klent.cli import CommandError
from klent.matchplay.engine_process import find_program


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--game", default="chess",
                        help="chess, gardner, animal_shogi or a Go game (go9, ...); default chess")
    parser.add_argument("--count", type=int, default=50, help="openings to write (default 50)")
    parser.add_argument("--plies", type=int, default=8, help="random moves per opening (default 8)")
    parser.add_argument("--out", required=True, help="file to write, one opening per line")
    parser.add_argument("--judge", help="engine that values the openings (default stockfish / gnugo / "
                        "fairy-stockfish)")
    parser.add_argument("--max-value", type=float,
                        help="largest advantage kept: |W - L| in chess (default 0.2), points in Go (default 5), "
                        "pawns in the variants (default 1)")
    parser.add_argument("--depth", type=int, default=10, help="UCI judge's search depth (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random moves (default 0)")


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from klent.engine.files import write_text_atomically
    from klent.matchplay.openings import balanced_openings
    from klent.protocols.uci_variants import uci_variant

    if args.count < 1 or args.plies < 1:
        raise CommandError("--count and --plies must be at least 1")
    go_game = args.game.startswith("go")
    if not go_game and uci_variant(args.game) is None:
        raise CommandError(f"--game must be chess, gardner, animal_shogi or a Go game, not {args.game!r}")
    program, default_value = ("gnugo", 5.0) if go_game else ("stockfish", 0.2) if args.game == "chess" else (
        "fairy-stockfish", 1.0)
    if args.judge is None:
        found = find_program(program)
        if found is None:
            raise CommandError(f"no judge: {program} is not installed (or give --judge)")
        args.judge = f"{found} --mode gtp --chinese-rules" if go_game else found
    max_value = args.max_value if args.max_value is not None else default_value
    lines = []
    with tqdm(total=args.count, unit="opening", dynamic_ncols=True) as bar:
        for line in balanced_openings(args.game, args.count, args.plies, args.judge, max_value,
                                      seed=args.seed, depth=args.depth):
            lines.append(line)
            bar.update(1)
    if len(lines) < args.count:
        raise CommandError(f"found only {len(lines)} balanced openings; raise --max-value or lower --plies")
    header = (f"# klent openings --game {args.game} --count {args.count} --plies {args.plies} "
              f"--max-value {max_value:g} --depth {args.depth} --seed {args.seed}\n")
    write_text_atomically(args.out, header + "\n".join(lines) + "\n")
    print(f"wrote {len(lines)} openings to {args.out}")
    return 0
