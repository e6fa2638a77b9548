"""Where a player's files are: the shipped models and Dyna-2 weights (`DEFAULT_WEIGHTS_DIR`), the
file of each game, and the Go board sizes those files can play."""

from __future__ import annotations

from pathlib import Path

from klent.engine.games.base import Game
from klent.engine.games.go import MAX_SIZE, MIN_SIZE, GoGame
from klent.engine.network import read_model_info
from klent.engine.player.options import DEFAULT_OPTIONS, TD_MODES, PlayOptions
from klent.engine.search.td import ShapeWeights


def _shipped_weights_dir() -> Path:
    """Where the shipped models are: ``klent/weights`` after a regular install (pyproject's
    package data), else ``weights/`` at the root of the source tree (a checkout, and editable
    installs, which run from it)."""
    package_dir = Path(__file__).resolve().parents[2]
    installed = package_dir / "weights"
    return installed if installed.is_dir() else package_dir.parent / "weights"


DEFAULT_WEIGHTS_DIR = _shipped_weights_dir()


def model_path_for(game: Game, weights_dir: str | Path = DEFAULT_WEIGHTS_DIR) -> Path:
    """Where the shipped model of ``game`` lives: ``weights/<game name>.onnx``."""
    return Path(weights_dir) / f"{game.name}.onnx"


def td_weights_path_for(game: Game, weights_dir: str | Path = DEFAULT_WEIGHTS_DIR) -> Path:
    """Where Dyna-2's permanent memory for ``game`` lives: ``weights/<game name>-td.npz``."""
    return Path(weights_dir) / f"{game.name}-td.npz"


def load_td_weights(
    game: Game, path: str | Path | None = None, weights_dir: str | Path = DEFAULT_WEIGHTS_DIR
) -> ShapeWeights:
    """Dyna-2's permanent memory for ``game``, from ``path`` or `td_weights_path_for`.

    Raises FileNotFoundError when the file does not exist, and ValueError when it is not a
    TD weights file or holds weights for another game.
    """
    path = Path(path) if path is not None else td_weights_path_for(game, weights_dir)
    if not path.is_file():
        raise FileNotFoundError(
            f"no Dyna-2 weights for {game.name}: {path} does not exist (`klent train --algo td-learning` makes them)"
        )
    weights = ShapeWeights.load(path)
    if f"go{weights.size}" != game.name:
        raise ValueError(f"{path} holds Dyna-2 weights for go{weights.size}, not for {game.name}")
    return weights


def go_board_sizes(
    options: PlayOptions = DEFAULT_OPTIONS,
    model: str | Path | None = None,
    weights_dir: str | Path = DEFAULT_WEIGHTS_DIR,
    td_weights: str | Path | None = None,
) -> list[int]:
    """The Go board sizes `Player.load` can play with these arguments, smallest first.

    A front end that plays Go on any board (GTP's ``boardsize``) must refuse a size before the
    game starts, not fail at its first move, so it asks which files `Player.load` would find:
    the sizes of the model (its own, and those a model with dynamic board axes lists) or the
    one of the Dyna-2 weights file given, else each size whose model (or in
    mode "dyna2", whose Dyna-2 weights) is in ``weights_dir``; every size for TD search, which
    needs no file.  Raises ValueError when the file given is not for Go.
    """
    if options.mode == "dyna2" and td_weights is not None:
        sizes = [ShapeWeights.load(td_weights).size]
    elif model is not None and (options.mode not in TD_MODES or options.td_root_moves):
        info = read_model_info(model)
        if not info.game.startswith("go") or not info.game[2:].isdigit():
            raise ValueError(f"{model} is a model for {info.game}, not for Go")
        sizes = sorted({int(info.game[2:]), *info.board_sizes})
    elif options.mode == "td":
        sizes = list(range(MIN_SIZE, MAX_SIZE + 1))
    else:
        path_for = td_weights_path_for if options.mode == "dyna2" else model_path_for
        sizes = [size for size in range(MIN_SIZE, MAX_SIZE + 1) if path_for(GoGame(size), weights_dir).is_file()]
    return [size for size in sizes if MIN_SIZE <= size <= MAX_SIZE]
