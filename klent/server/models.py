"""The models the server plays with: one per game id, found in one configured folder.

At start-up the folder is scanned for ``<id>.onnx`` with ``id`` among the game ids klent knows
(`klent.engine.games.GAME_IDS` and every Go size); each model found is loaded once (at precision
int8, its sibling ``<id>.int8.onnx`` instead: `klent.engine.network.model_at_precision`) and wrapped
in a `klent.server.batching.BatchingEvaluator`.  A request names a game id, which is only ever used as a
key into this table: no text from a request is joined to a path or reaches the file system.

A model that fails to load (a malformed file, one ONNX Runtime cannot run, one whose outputs are
not finite) is kept out of the table with its one-line reason (`ModelRegistry.failed`): the
server answers that game with 503 and serves the others.  Only a folder in which no model loads
is an error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import klent.engine.games
from klent.engine.games.base import Game
from klent.engine.network import ModelFormatError, ModelInfo, OnnxEvaluator, model_at_precision
from klent.server.batching import BatchingEvaluator

GO_SIZES = range(5, 20)
KNOWN_IDS: tuple[str, ...] = tuple(
    dict.fromkeys([*klent.engine.games.GAME_IDS, *(f"go{size}" for size in GO_SIZES)])
)


def serving_game(game_id: str) -> Game:
    """The rules a served game follows.

    Chess is served as a UCI engine plays it: no move cap, and only the automatic draws
    (fivefold repetition, 75 moves), since a client's game may go on after a claimable draw.
    """
    if game_id == "chess":
        return klent.engine.games.get("chess", max_moves=None, claim_draws=False)
    return klent.engine.games.get(game_id)


@dataclass
class ServedModel:
    game: Game
    info: ModelInfo
    evaluator: BatchingEvaluator
    providers: list[str]  # the ONNX Runtime execution providers its session runs on, best first


class ModelRegistry:
    """Loaded models by game id; `close` stops their batching threads.

    With ``precision`` "int8" every float32 model found must have its int8 sibling
    (FileNotFoundError naming the first one missing): a server that played some games in
    int8 and others silently in float32 would hide a missing file.
    """

    def __init__(
        self,
        folder: str | Path,
        max_batch: int,
        max_wait: float,
        threads: int | None = None,
        observer: Callable[[str, int, float], None] | None = None,
        precision: str = "float32",
        device: str = "auto",
    ) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise FileNotFoundError(f"models folder {self.folder} does not exist")
        self.models: dict[str, ServedModel] = {}
        self.failed: dict[str, str] = {}  # game id -> why its model is not served
        for game_id in KNOWN_IDS:
            path = self.folder / f"{game_id}.onnx"
            if not path.is_file():
                continue
            game = serving_game(game_id)
            try:
                onnx = OnnxEvaluator(model_at_precision(path, precision), game=game, device=device, threads=threads)
            except FileNotFoundError:  # a missing int8 sibling: the server must not play float32 silently
                raise
            except (OSError, ValueError) as error:  # every other load failure (`OnnxEvaluator`)
                self.failed[game_id] = str(error)
                continue
            report = None if observer is None else _bind(observer, game_id)
            batcher = BatchingEvaluator(onnx, max_batch=max_batch, max_wait=max_wait, observer=report)
            self.models[game_id] = ServedModel(game, onnx.info, batcher, onnx.providers)
        if not self.models and self.failed:
            raise ModelFormatError("no model in the folder loads: " + "; ".join(self.failed.values()))
        if not self.models:
            raise FileNotFoundError(
                f"no models in {self.folder}: expected files named <game>.onnx, e.g. go9.onnx, chess.onnx"
            )

    def get(self, game_id: str) -> ServedModel | None:
        return self.models.get(game_id)

    def fail(self, game_id: str, reason: str) -> None:
        """Stop serving ``game_id``'s model (it failed its warm-up): its requests get 503."""
        model = self.models.pop(game_id)
        model.evaluator.close()
        self.failed[game_id] = reason

    def close(self) -> None:
        for model in self.models.values():
            model.evaluator.close()


def _bind(observer: Callable[[str, int, float], None], game_id: str) -> Callable[[int, float], None]:
    return lambda positions, seconds: observer(game_id, positions, seconds)
