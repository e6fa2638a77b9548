"""The one facade every protocol calls: a position and limits in, a move and its analysis out.

GTP, UCI, the HTTP server and the lichess bridge all play through a `Player`, so reactive
play, Gumbel search, tree reuse and the move analysis behave the same everywhere.  A player
holds the current position as an initial state plus the actions played from it; setting a
position that extends the previous one by a few actions keeps the search tree of the moves in
between (tree reuse), anything else starts a fresh tree.  `Player.decide` chooses one move;
`Player.analyse` keeps searching the same tree and reports as it goes (UCI ``go infinite``,
GTP ``lz-analyze``).  In Go the player applies Go's move rules to every move it decides
(`klent.engine.go_rules`: pass only when passing cannot lose, no filling of its own eyes, cleanup),
so every protocol plays Go the same way, and `Player.judged` counts a position as a referee
would (GTP's ``final_score``).

Go can also be played by TD search and Dyna-2 (modes "td" and "dyna2", `klent.engine.search.td`),
which learn a value function from games simulated during the move and need no network: a
player keeps one `TdSearch` per mode, so that its transient memory is carried from move to
move of a game (the paper's condition for its strength) and forgotten at a new game.

The package: `options` (`PlayOptions` and the play defaults), `report` (the `Decision` and
what builds it), `weights` (where the shipped files are), one mover per mode behind one
protocol (`mover`: `reactive_mover`, `gumbel_mover`, `td_mover`), `player` (the `Player`) and
`strength` (a model's measured rating by simulations, behind UCI's ``UCI_Elo``).

Protocols reach the engine through this package and `klent.engine.games` only: besides the player,
it offers the few engine services a protocol needs (`read_model_info`, `ResignTracker`,
`clock_budget`, `go_board_sizes`, `default_threads`, `MAX_THREADS`, `ModelOutputError`,
`write_text_atomically`).
"""

from klent.engine.files import write_text_atomically
from klent.engine.go_rules import Judgement, MoveRule
from klent.engine.network import (
    DEVICE_CHOICES,
    MAX_THREADS,
    PRECISIONS,
    Evaluator,
    ModelOutputError,
    default_threads,
    read_model_info,
)
from klent.engine.player.options import DEFAULT_MEMORY_MB, FIRST_ANALYSIS_SEARCH, TD_MODES, PlayOptions
from klent.engine.player.player import Player
from klent.engine.player.report import Decision, MoveStat, Ownership
from klent.engine.player.strength import StrengthCurve, StrengthPoint, curve_for
from klent.engine.player.weights import DEFAULT_WEIGHTS_DIR, go_board_sizes, load_td_weights, model_path_for
from klent.engine.resign import ResignTracker
from klent.engine.search.td import ShapeWeights
from klent.engine.tablebase import MAX_PIECES as SYZYGY_MAX_PIECES
from klent.engine.tablebase import Tablebase, default_syzygy_path
from klent.engine.timecontrol import GameClock, TimeSettings, clock_budget

__all__ = [
    "DEFAULT_MEMORY_MB", "DEFAULT_WEIGHTS_DIR", "DEVICE_CHOICES", "FIRST_ANALYSIS_SEARCH", "MAX_THREADS",
    "PRECISIONS", "SYZYGY_MAX_PIECES", "TD_MODES", "Decision", "Evaluator", "GameClock", "Judgement",
    "ModelOutputError", "MoveRule", "MoveStat", "Ownership", "PlayOptions", "Player", "ResignTracker",
    "ShapeWeights", "StrengthCurve", "StrengthPoint", "Tablebase", "TimeSettings", "clock_budget",
    "curve_for", "default_syzygy_path", "default_threads", "go_board_sizes", "load_td_weights", "model_path_for",
    "read_model_info", "write_text_atomically",
]
