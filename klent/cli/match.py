"""`klent match --engine1 CMD --engine2 CMD --game go9 --games N --out DIR`: play a match.

Go engines speak GTP (GNU Go referees the score); chess, Gardner chess and Animal Shogi engines
speak UCI, and for the last two both engines are set to Fairy-Stockfish's variant (``UCI_Variant``
``gardner`` or ``dobutsu``) without being told.  Prints one line per
finished game under a progress bar, then the summary from engine 1's view; writes the game
records, ``games.jsonl`` and ``summary.json`` to ``--out``.  ``--resume`` goes on with an
interrupted match in ``--out``, playing the games it lacks.  ``--concurrency N`` plays N games
at once (each with its own engine processes), as cutechess-cli's ``-concurrency`` does.
``--openings FILE`` starts the games from given positions, each played with both colours
(results per opening in ``summary.json``):
deterministic engines then play as many distinct games as there are openings times two.
``--first-opening N`` starts from the file's opening N instead, so that a long match can be
split between runs (machines, or sessions that end) and their games added up.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from klent.cli import CommandError
from klent.matchplay.engine_process import find_program


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--engine1", required=True, help="command line of engine 1 (the one the summary is about)")
    parser.add_argument("--engine2", required=True, help="command line of engine 2")
    parser.add_argument("--game", default="go9",
                        help="go9, go13, go19 (GTP), chess, gardner or animal_shogi (UCI; the last two set "
                        "UCI_Variant gardner / dobutsu on both engines); default go9")
    parser.add_argument("--games", type=int, default=None,
                        help="number of games, colours alternating (default 2, or 2 per opening with --openings)")
    parser.add_argument("--openings", metavar="FILE",
                        help="start positions, each played twice with colours swapped: chess EPD/FEN lines "
                        "('FEN [moves e2e4 ...]') or PGN; other games lines of moves ('C3 G7 ...', 'b2b3 c4c3')")
    parser.add_argument("--first-opening", type=int, default=0, metavar="N",
                        help="start from opening N of --openings (0 = the file's first, the numbers the records "
                        "and summary.json use), to go on with a match another run played from the start")
    parser.add_argument("--out", required=True, help="folder for game records and summary.json")
    parser.add_argument("--referee", default=None,
                        help="GTP engine that scores Go games with final_score "
                        "(default: gnugo --mode gtp --chinese-rules, from PATH or /usr/games)")
    parser.add_argument("--time-per-move", type=float, default=None,
                        help="seconds per move; a slower move loses (default: no clock, 60 s timeout)")
    parser.add_argument("--grace", type=float, default=1.0,
                        help="seconds a move may exceed --time-per-move before it loses (default 1)")
    parser.add_argument("--max-moves", type=int, default=None,
                        help="moves before adjudication: referee score in Go, draw in the UCI games")
    parser.add_argument("--komi", type=float, default=7.5, help="Go komi (default 7.5)")
    parser.add_argument("--concurrency", type=int, default=1,
                        help="games played at once, each pair of engines (and referee) its own processes; "
                        "give each game a core (default 1)")
    parser.add_argument("--resume", action="store_true",
                        help="go on with the interrupted match in --out (same settings; --games may grow)")
    for who in (1, 2):
        parser.add_argument(f"--option{who}", action="append", default=[], metavar="NAME=VALUE",
                            help=f"UCI option for engine {who}, repeatable (e.g. 'Skill Level=0')")
    for who in (1, 2):
        parser.add_argument(f"--go{who}", default="", metavar="LIMIT",
                            help=f"UCI search limit of engine {who} in place of the time per move: 'depth N', "
                            "'nodes N' or 'movetime MS' (a fixed depth plays alike however loaded the machine)")


def _uci_options(pairs: list[str], flag: str) -> dict[str, str]:
    """``["Skill Level=0", ...]`` as a dict; a pair without '=' is a user error."""
    options = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise CommandError(f"{flag} takes NAME=VALUE, got {pair!r}")
        options[name.strip()] = value.strip()
    return options


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from klent.matchplay.config import MatchConfig, check_first_opening, go_limits
    from klent.matchplay.engine_process import EngineError
    from klent.matchplay.match import run_match
    from klent.matchplay.opening_files import read_openings
    from klent.matchplay.records import MatchFolderError, load_results
    from klent.matchplay.results import dead_stones, distinct_games, format_result_line, score_margin
    from klent.protocols.uci_variants import uci_variant

    openings: tuple[str, ...] = ()
    if args.openings is not None:
        try:
            openings = read_openings(args.openings, args.game)
        except OSError as error:
            raise CommandError(f"cannot read --openings: {error}") from None
    try:  # before the default number of games counts the openings from it
        check_first_opening(args.first_opening, len(openings))
    except ValueError as error:
        raise CommandError(f"--first-opening: {error}") from None
    if args.games is None:
        args.games = 2 * (len(openings) - args.first_opening) if openings else 2
    if args.games < 1:
        raise CommandError("--games must be >= 1")
    if args.concurrency < 1:
        raise CommandError("--concurrency must be >= 1")
    if args.time_per_move is not None and args.time_per_move <= 0:
        raise CommandError("--time-per-move must be > 0")
    if args.max_moves is not None and args.max_moves < 1:
        raise CommandError("--max-moves must be >= 1")
    uci = uci_variant(args.game) is not None
    if (args.option1 or args.option2) and not uci:
        raise CommandError("--option1/--option2 set UCI options: they apply to UCI games only")
    if (args.go1 or args.go2) and not uci:
        raise CommandError("--go1/--go2 set UCI search limits: they apply to UCI games only")
    for flag, limit in (("--go1", args.go1), ("--go2", args.go2)):
        try:
            go_limits(limit)
        except ValueError as error:
            raise CommandError(f"{flag}: {error}") from None
    if not uci and not args.game.startswith("go"):
        raise CommandError(f"--game must be a Go game (go9, go13, go19), chess, gardner or animal_shogi, "
                           f"not {args.game!r}")
    config = MatchConfig(
        engines=(args.engine1, args.engine2),
        game=args.game,
        games=args.games,
        out=Path(args.out),
        referee=args.referee or _default_referee(),
        time_per_move=args.time_per_move,
        grace=args.grace,
        max_moves=args.max_moves,
        komi=args.komi,
        uci_options=(_uci_options(args.option1, "--option1"), _uci_options(args.option2, "--option2")),
        uci_go=(args.go1, args.go2),
        openings=openings,
        first_opening=args.first_opening,
    )
    try:
        previous = load_results(config) if args.resume else []
    except MatchFolderError as error:
        raise CommandError(str(error)) from None
    bar = tqdm(total=args.games, initial=len(previous), unit="game", dynamic_ncols=True)

    def on_game(result, summary, names) -> None:
        bar.update(1)
        bar.set_postfix_str(f"+{summary.wins} -{summary.losses} ={summary.draws}")
        bar.write(format_result_line(result, names))

    try:
        summary, results = run_match(config, on_game=on_game, previous=previous, concurrency=args.concurrency)
    except EngineError as error:
        bar.leave = False  # the error replaces the bar's empty start on the screen
        raise CommandError(str(error)) from None
    finally:
        bar.close()
    print(summary.text())
    distinct = distinct_games(results)
    if distinct < len(results):
        print(f"{distinct} distinct games of {len(results)}: the engines repeated games, and the "
              "interval above counts every repeat as a new game")
    margin = score_margin(results)
    if margin is not None:
        print(f"mean score margin {margin['mean']:+.1f} points over {margin['games']} scored games")
    dead = dead_stones(results)
    if dead is not None:
        print(f"engine 1 left dead stones on the board in {dead['games_with_dead_stones']} of {dead['games']} "
              f"scored games ({dead['mean']:.1f} stones per game)")
    print(f"records and summary.json in {config.out}")
    return 0


def _default_referee() -> str:
    """GNU Go with Chinese (area) rules; Debian installs it in /usr/games, often not on PATH."""
    gnugo = find_program("gnugo") or "gnugo"
    return f"{gnugo} --mode gtp --chinese-rules"
