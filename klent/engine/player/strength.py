"""A model's strength curve: its rating at each number of simulations a move, measured against
rated anchors, and the simulations that play at a requested rating (UCI's ``UCI_Elo``).

A curve lives beside its model as ``<model stem>.strength.json`` (``weights/chess.onnx`` ->
``weights/chess.strength.json``) and names the model's SHA-256, so that a retrained model does
not inherit its predecessor's numbers.  `klent bench strength_curve` writes it from match
folders; how it was measured is in benchmarks/RESULTS.md ("Chess strength levels").

Between two measured points the rating is taken as linear in log(simulations): each doubling
of the search buys about the same Elo over the range a curve covers.  One simulation means
reactive play (one network call), the weakest a model plays.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from klent.engine.files import read_bounded, read_json, write_text_atomically

MAX_CURVE_BYTES = 1 << 16  # a curve is a few hundred bytes
MAX_MODEL_BYTES = 1 << 30  # the model read to check its digest (the models are a few MB)
SUFFIX = ".strength.json"


@dataclass(frozen=True)
class StrengthPoint:
    """The rating of one setting, with its 95 % interval and the games behind it."""

    simulations: int
    elo: float
    low: float
    high: float
    games: int


@dataclass(frozen=True)
class StrengthCurve:
    """Ratings at increasing simulations, rising with them (`StrengthCurve.check`)."""

    model_sha256: str
    scale: str  # what the ratings are measured against, e.g. "Stockfish 15.1 UCI_Elo"
    command: str  # how the matches behind the points were played
    points: tuple[StrengthPoint, ...]

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """ValueError unless there are points, simulations and ratings both strictly rising."""
        if not self.points:
            raise ValueError("a strength curve needs at least one point")
        for point in self.points:
            if point.simulations < 1 or not math.isfinite(point.elo):
                raise ValueError(f"a point needs simulations >= 1 and a finite rating: {point}")
        for lower, upper in zip(self.points, self.points[1:]):
            if upper.simulations <= lower.simulations or upper.elo <= lower.elo:
                raise ValueError(
                    f"ratings must rise with simulations: {lower.simulations} -> {lower.elo:.0f}, "
                    f"{upper.simulations} -> {upper.elo:.0f}; play more games at these settings")

    @property
    def lowest(self) -> int:
        """The weakest rating the curve plays, rounded to a whole Elo."""
        return math.ceil(self.points[0].elo)

    @property
    def highest(self) -> int:
        """The strongest rating the curve plays, rounded to a whole Elo."""
        return math.floor(self.points[-1].elo)

    def simulations(self, elo: float) -> int:
        """Simulations a move that play at ``elo``, clamped to the curve's range."""
        points = self.points
        if elo <= points[0].elo:
            return points[0].simulations
        for lower, upper in zip(points, points[1:]):
            if elo <= upper.elo:
                fraction = (elo - lower.elo) / (upper.elo - lower.elo)
                log_sims = math.log(lower.simulations) + fraction * math.log(upper.simulations / lower.simulations)
                return max(1, round(math.exp(log_sims)))
        return points[-1].simulations

    def to_json(self) -> dict[str, Any]:
        return {"model_sha256": self.model_sha256, "scale": self.scale, "command": self.command,
                "points": [asdict(point) for point in self.points]}

    def save(self, path: str | os.PathLike[str]) -> None:
        write_text_atomically(path, json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> StrengthCurve:
        """The curve in ``path``; ValueError naming the file when it is not one."""
        data = read_json(path, MAX_CURVE_BYTES)
        try:
            points = tuple(StrengthPoint(int(p["simulations"]), float(p["elo"]), float(p["low"]),
                                         float(p["high"]), int(p["games"])) for p in data["points"])
            return cls(str(data["model_sha256"]), str(data["scale"]), str(data["command"]), points)
        except (KeyError, TypeError, ValueError, OverflowError) as error:
            raise ValueError(f"{path} is not a strength curve: {error}") from None


def curve_path(model: str | os.PathLike[str]) -> Path:
    """Where the strength curve of ``model`` is: beside it, ``<stem>.strength.json``."""
    model = Path(model)
    return model.with_name(model.stem + SUFFIX)


def model_digest(model: str | os.PathLike[str]) -> str:
    """The SHA-256 of a model file, which its curve names."""
    return hashlib.sha256(read_bounded(model, MAX_MODEL_BYTES)).hexdigest()


def curve_for(model: str | os.PathLike[str]) -> StrengthCurve | None:
    """The strength curve of ``model``, or None when it has none; ValueError when the curve
    beside it is unreadable or was measured for another model (a retrained one)."""
    path = curve_path(model)
    if not path.is_file():
        return None
    curve = StrengthCurve.load(path)
    if curve.model_sha256 != model_digest(model):
        raise ValueError(f"{path} was measured for another model than {model}")
    return curve
