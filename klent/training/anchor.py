"""The anchor evaluation: win rate against a fixed opponent, the y-axis of the KLENT paper's
figure 5 (its x-axis is the run's ``simulator_evaluations``).

After the first iteration and then every ``[eval] anchor_every_evaluations`` simulator
evaluations, the trainer plays ``anchor_games`` games of the current model against ``anchor``,
a UCI engine (Fairy-Stockfish at a fixed skill level and depth for Gardner chess and Animal
Shogi, Stockfish for chess), and logs the score in ``metrics.jsonl``.

* **One match runner.**  The games are `klent match`'s (`klent.matchplay.match.run_match`), not a
  second UCI client: the model plays as ``klent uci --model latest.onnx``, the very engine a
  user runs, and our rules judge every move, so the number is the one ``klent match`` gives
  for that model.  Training may import protocols (docs/architecture.md); launching the UCI
  engine as a subprocess is what any match does, and imports nothing of ``klent/``.  The
  records stay in ``anchor/iteration-NNNNNN/`` (PGNs, ``games.jsonl``, ``summary.json``).
* **How the model plays.**  Reactively (one network call, the policy's argmax), as the paper's
  figure 5 does ("all agents select actions without search", appendix B): that measures what
  training learnt, not what a search adds.  ``anchor_simulations = N`` plays a Gumbel search
  of N simulations instead (the paper's appendix H).
* **How the anchor plays.**  At a search limit (``anchor_go``: ``depth 1``, ``nodes 400``), not
  a time per move, so its strength does not depend on how loaded the machine is; below skill
  level 20 Fairy-Stockfish picks among its best moves at random, as the paper's stochastic
  anchor does.  A time limit (``movetime 50``) is allowed but makes curves load-dependent.
* **Openings.**  ``anchor_games / 2`` openings, each played with both colours: random legal
  plies (``anchor_opening_plies``) drawn from one fixed seed, so that every evaluation of
  every run faces the same openings and curves differ by their models, not their test sets;
  or the lines of a file (``anchor_openings``, moves in UCI text).
* **Accounting.**  The match runs on rank 0 between iterations: its time is neither
  ``wall_seconds`` nor ``cpu_seconds`` and its network calls are no simulator evaluations.
  Its results go into the iteration's metrics line, which a resumed run keeps like any other.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

import klent.engine.games
from klent.matchplay.config import MatchConfig
from klent.matchplay.engine_process import EngineError, UciProcess
from klent.matchplay.match import run_match
from klent.matchplay.opening_files import read_openings
from klent.matchplay.results import distinct_games
from klent.protocols.uci_variants import uci_variant

if TYPE_CHECKING:
    from klent.training.config import EvalConfig

# Seconds one move may take before it forfeits: a guard against a hung engine, far above what
# a reactive move or a depth-limited Fairy-Stockfish move takes even on a loaded machine.
MOVE_TIMEOUT = 30.0
OPENINGS_SEED = 0  # the same random openings for every evaluation of every run
ANCHOR_MATCHES = "anchor"  # a run folder's anchor/iteration-000010/: each match's records


def check_anchor(game_id: str, cfg: EvalConfig) -> None:
    """Refuse, when the config is read, an anchor for a game no UCI engine plays or an openings
    file that is not one; an option the engine lacks is `probe_anchor`'s to find."""
    if not cfg.anchor:
        return
    if uci_variant(game_id) is None:
        raise ValueError(f"[eval] anchor plays UCI games (chess, gardner, animal_shogi), not {game_id}")
    if cfg.anchor_openings:
        try:
            read_openings(cfg.anchor_openings, game_id)
        except (OSError, ValueError) as error:
            raise ValueError(f"[eval] anchor_openings: {error}") from None


def probe_anchor(game_id: str, cfg: EvalConfig) -> str:
    """Start the anchor with its options and stop it; returns its name.  A command that does
    not start or an option it does not have is a one-line ValueError when the run starts,
    not at its first anchor evaluation."""
    try:
        with UciProcess(cfg.anchor) as process:
            return process.start(_anchor_options(game_id, cfg))
    except EngineError as error:
        raise ValueError(f"[eval] anchor: {error}") from None


def play_anchor(model: Path, game_id: str, cfg: EvalConfig, out: Path) -> dict[str, float | int]:
    """Play the anchor match of ``model`` (an ONNX file) into ``out``; the metrics it logs:
    wins, draws, losses and games from the model's view, the score (a draw counts half) with
    its Wilson 95% interval, the distinct games and the seconds the match took."""
    if cfg.anchor_openings:
        openings = read_openings(cfg.anchor_openings, game_id)
    else:
        openings = random_openings(game_id, cfg.anchor_games // 2, cfg.anchor_opening_plies)
    reactive = cfg.anchor_simulations == 0
    klent_uci = shlex.join([sys.executable, "-m", "klent", "uci", "--model", str(model)])
    model_options = {"Threads": "1", **({"SearchMode": "reactive"} if reactive else
                                        {"Simulations": str(cfg.anchor_simulations)})}
    match = MatchConfig(
        engines=(klent_uci, cfg.anchor),
        game=game_id,
        games=cfg.anchor_games,
        out=out,
        time_per_move=MOVE_TIMEOUT,
        uci_options=(model_options, _anchor_options(game_id, cfg, variant=False)),
        uci_go=("depth 1" if reactive else f"nodes {cfg.anchor_simulations}", cfg.anchor_go),
        openings=openings,
    )
    started = time.monotonic()
    summary, results = run_match(match)
    return {
        "anchor_games": summary.games,
        "anchor_wins": summary.wins,
        "anchor_draws": summary.draws,
        "anchor_losses": summary.losses,
        "anchor_score": summary.win_rate,
        "anchor_score_low": summary.win_rate_low,
        "anchor_score_high": summary.win_rate_high,
        "anchor_distinct_games": distinct_games(results),
        "anchor_seconds": time.monotonic() - started,
    }


def random_openings(game_id: str, count: int, plies: int, seed: int = OPENINGS_SEED) -> tuple[str, ...]:
    """Up to ``count`` distinct lines of ``plies`` uniformly random legal moves from the initial
    position (UCI text) that leave the game running; () for ``plies = 0`` (the initial
    position).  Fewer when the game has fewer such lines (Animal Shogi has 4 first moves)."""
    if plies == 0:
        return ()
    game = klent.engine.games.get(game_id)
    rng = np.random.default_rng(seed)
    lines: dict[str, None] = {}  # ordered and distinct
    for _ in range(100 * count):
        if len(lines) == count:
            break
        state = game.initial_state()
        texts: list[str] = []
        while len(texts) < plies and not state.is_terminal:
            action = int(rng.choice(state.legal_actions()))
            texts.append(game.action_to_text(state, action))
            state = state.play(action)
        if not state.is_terminal:
            lines[" ".join(texts)] = None
    return tuple(lines)


def _anchor_options(game_id: str, cfg: EvalConfig, variant: bool = True) -> dict[str, str]:
    """The anchor's UCI options as text (``true``/``false`` for TOML booleans), with the
    game's ``UCI_Variant`` when ``variant`` (the match sets it itself; chess has none)."""
    options = {name: str(value).lower() if isinstance(value, bool) else str(value)
               for name, value in cfg.anchor_options.items()}
    name = uci_variant(game_id)
    if variant and name not in (None, "chess"):
        options["UCI_Variant"] = name
    return options
