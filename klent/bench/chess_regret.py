"""How much value a chess model's moves give away, by play setting: `klent bench chess_regret`.

A match against a weak engine says little while the model loses nine games of ten; the value
its moves give away says where it loses and whether a setting (search, its budget, its
rescaling floor) helps, from a few hundred positions in minutes.  Two measurements:

* ``--labels DIR``: held-out positions (validation games; ``--training``: training games) of a
  labelled set (`klent distill label --value cp`): the mean teacher regret of each setting's
  move (the teacher's best value minus its value of the chosen move, on the set's scale), its
  top-1 share, and for each setting after the first its regret minus the first's on the same
  positions, with a standard error;
* ``--match DIR``: engine 1's moves (not the opening's) in a `klent match` folder of chess games, judged by
  Stockfish at a fixed depth (hash cleared before each search, so the judge is deterministic):
  the moves that gave away ``--blunder`` or more of tanh(cp / 543) (a blunder), and how many of
  those positions each setting would have played a blunder in too.

A setting is ``reactive``, ``gumbel:N`` (N simulations), ``gumbel:N:F`` (rescaling floor F) or
``gumbel:N:F:W`` (waves of W descents).

    klent bench chess_regret --model weights/chess.onnx --labels data/chess-cp \\
        --settings reactive gumbel:64 gumbel:64:2 gumbel:256:2
    klent bench chess_regret --model weights/chess.onnx --match runs/strength/sk-best-reactive-skill0 \\
        --games 60 --settings reactive gumbel:64 gumbel:64:2
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

import klent.engine.games
from klent.engine.games.base import State
from klent.engine.player import Player, PlayOptions
from klent.matchplay.engine_process import find_program

CENTIPAWN_SCALE = 543.0  # tanh(cp / 543): the labels' scale (`klent.training.teacher`)


def parse_setting(text: str) -> PlayOptions:
    """``reactive``, ``gumbel:N``, ``gumbel:N:F`` or ``gumbel:N:F:W`` as the options a `Player`
    decides with."""
    words = text.split(":")
    try:
        if words == ["reactive"]:
            return PlayOptions(mode="reactive")
        if words[0] == "gumbel" and len(words) in (2, 3, 4):
            floor = float(words[2]) if len(words) >= 3 else None
            wave = int(words[3]) if len(words) == 4 else None
            return PlayOptions(simulations=int(words[1]), rescale_floor=floor, wave_size=wave)
    except ValueError:
        pass
    raise ValueError(f"a setting is reactive, gumbel:N, gumbel:N:F or gumbel:N:F:W, not {text!r}")


def held_out_positions(folder: Path, count: int, training: bool = False) -> list[tuple[State, dict[int, float]]]:
    """About ``count`` positions of the validation games of a chess labelled set (``training``:
    of its training games, to tell how well a network fits what it was fitted on), spread over
    its shards, each with the teacher's value of every labelled move."""
    from klent.training.distill import shard_states
    from klent.training.shards import LabelConfig, Manifest, read_shard, rules

    manifest = Manifest.read(folder)
    if manifest is None:
        raise ValueError(f"{folder} holds no labelled set")
    config = LabelConfig(**manifest.config)
    if config.game != "chess":
        raise ValueError(f"{folder} holds {config.game} positions, not chess")
    share = count / max(1, manifest.train_positions if training else manifest.validation_positions)
    rng = np.random.default_rng(0)
    found: list[tuple[State, dict[int, float]]] = []
    replay = rules("chess")
    games = (lambda game: not config.is_validation(game)) if training else config.is_validation
    for name in manifest.shards:
        shard = read_shard(folder / name)
        start = shard["label_start"]
        for position, _, state in shard_states(shard, replay, games):
            if rng.random() < share and start[position + 1] - start[position] > 1:
                moves = shard["action"][start[position]:start[position + 1]].tolist()
                values = shard["value"][start[position]:start[position + 1]].tolist()
                found.append((state, dict(zip(moves, values))))
    if not found:
        raise ValueError(f"{folder} has no held-out position with two moves or more")
    return found


def regret_rows(player: Player, positions: list[tuple[State, dict[int, float]]],
                settings: list[str]) -> Iterator[str]:
    """A row per setting: its mean regret and top-1 share; after the first setting, also its
    regret minus the first's position by position, with that mean's standard error (the
    positions' own spread hides differences between settings that pairing shows)."""
    first: tuple[str, np.ndarray] | None = None
    for text in settings:
        options = parse_setting(text)
        regrets, began = np.empty(len(positions)), time.perf_counter()
        for i, (state, values) in enumerate(positions):
            player.set_position(state)
            regrets[i] = max(values.values()) - values[player.decide(options).action]
        n = len(positions)
        row = (f"{text:>16}: regret {regrets.mean():.4f}, teacher's best {np.mean(regrets <= 0):.3f}, "
               f"{(time.perf_counter() - began) / n:.3f} s a move ({n} positions)")
        if first is None:
            first = (text, regrets)
        elif n > 1:
            difference = regrets - first[1]
            error = difference.std(ddof=1) / math.sqrt(n)
            row += f"; minus {first[0]}'s, paired: {difference.mean():+.4f} (standard error {error:.4f})"
        yield row


def blunder_rows(player: Player, folder: Path, games: int, depth: int, blunder: float,
                 settings: list[str]) -> Iterator[str]:
    import chess
    import chess.engine
    import chess.pgn

    from klent.matchplay.opening_files import chess_opening
    from klent.matchplay.records import read_results, recorded_config

    stockfish = find_program("stockfish")
    if stockfish is None:
        raise ValueError("no stockfish on PATH or in /usr/games")
    judge = chess.engine.SimpleEngine.popen_uci(stockfish)
    judge.configure({"Threads": 1})

    def value(board: chess.Board) -> float:
        """The side to move's value, by the judge with a cleared hash."""
        if board.is_checkmate():
            return -1.0
        if board.is_game_over(claim_draw=True):
            return 0.0
        score = judge.analyse(board, chess.engine.Limit(depth=depth), game=object())["score"].pov(board.turn)
        return math.tanh(score.score(mate_score=100_000) / CENTIPAWN_SCALE)

    def given_away(board: chess.Board, move: chess.Move, before: float) -> float:
        after = board.copy()
        after.push(move)
        return before + value(after)  # the mover's value after the move is minus the opponent's

    try:
        # (the position's state, its board, the judge's value there, what each move judged so far gives away)
        cases: list[tuple[State, chess.Board, float, dict[chess.Move, float]]] = []
        records = read_results(folder)
        openings = (recorded_config(folder) or {}).get("openings", [])
        for record in sorted(records, key=lambda r: r.game)[:games]:
            # the opening's moves are in the record too, played by neither engine
            opening = "" if record.opening is None else openings[record.opening]
            book = len(opening.partition(" moves ")[2].split())
            with open(folder / record.record, encoding="utf-8") as handle:
                game = chess.pgn.read_game(handle)
            if game is None:
                continue
            board = game.board()
            root, played = board.fen(), []
            ours = chess.WHITE if record.first == 0 else chess.BLACK
            for ply, move in enumerate(game.mainline_moves()):
                if board.turn == ours and ply >= book:
                    before = value(board)
                    away = given_away(board, move, before)
                    if away >= blunder:
                        line = f"{root} moves {' '.join(played)}" if played else root
                        cases.append((chess_opening(line), board.copy(), before, {move: away}))
                board.push(move)
                played.append(move.uci())
        yield f"{len(cases)} blunders (>= {blunder} given away at depth {depth}) in {min(games, len(records))} games"
        for text in settings:
            options = parse_setting(text)
            still, lost = 0, 0.0
            for state, board, before, judged in cases:
                player.set_position(state)
                move = chess.Move.from_uci(state.game.action_to_text(state, player.decide(options).action))
                if move not in judged:  # the judge is deterministic: each move is judged once
                    judged[move] = given_away(board, move, before)
                away = judged[move]
                still += away >= blunder
                lost += away
            mean = lost / max(1, len(cases))
            yield f"{text:>16}: blunders again in {still} of {len(cases)}, gives away {mean:.3f} on average"
    finally:
        judge.quit()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="klent bench chess_regret", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="weights/chess.onnx", help="the chess model (default: weights/chess.onnx)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--labels", type=Path, help="a chess labelled set: regret on its held-out positions")
    source.add_argument("--match", type=Path, help="a chess match folder: engine 1's blunders, re-played")
    parser.add_argument("--positions", type=int, default=800, help="--labels: held-out positions (default 800)")
    parser.add_argument("--training", action="store_true",
                        help="--labels: positions of the training games instead (how well the model fits them)")
    parser.add_argument("--games", type=int, default=60, help="--match: games read (default 60)")
    parser.add_argument("--depth", type=int, default=8, help="--match: the judge's depth (default 8)")
    parser.add_argument("--blunder", type=float, default=0.3,
                        help="--match: value given away that makes a blunder (default 0.3, about 170 cp near even)")
    parser.add_argument("--settings", nargs="+", default=["reactive", "gumbel:64"],
                        help="reactive, gumbel:N, gumbel:N:F, gumbel:N:F:W (default: reactive gumbel:64)")
    args = parser.parse_args(argv)
    for text in args.settings:
        parse_setting(text)  # a misspelt setting fails before the slow part
    player = Player.load(klent.engine.games.get("chess"), args.model, threads=1)
    if args.labels is not None:
        positions = held_out_positions(args.labels, args.positions, training=args.training)
        rows = regret_rows(player, positions, args.settings)
    else:
        rows = blunder_rows(player, args.match, args.games, args.depth, args.blunder, args.settings)
    print(f"{args.model}:")
    for row in rows:
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
