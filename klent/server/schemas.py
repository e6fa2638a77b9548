"""The JSON shapes of the HTTP API (pydantic models, which also make the OpenAPI docs).

Requests are flat objects: the position fields (Go: ``komi`` and ``moves`` or ``sgf``; chess:
``fen`` and ``moves``) next to the decision fields (``mode``, ``simulations``, ``time``).
Unknown fields are refused, so a misspelt option is a 422 instead of being silently ignored.
Static bounds live here; the server's own caps on simulations and time are checked by the app,
since they are configuration.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

MAX_MOVES = 2000
MAX_SGF_CHARS = 200_000
MAX_MOVE_CHARS = 16


class PositionRequest(BaseModel):
    """A position: the game's initial position (or a FEN / an SGF record) plus moves."""

    model_config = ConfigDict(extra="forbid")

    moves: list[str] = Field(
        default_factory=list,
        max_length=MAX_MOVES,
        description='Moves from the start position: GTP vertices for Go ("D4", "pass"), UCI for chess ("e2e4").',
        examples=[["E5", "C3"]],
    )
    komi: float | None = Field(
        default=None, ge=-150, le=150, description="Go only: komi (default 7.5, or the SGF's)."
    )
    sgf: str | None = Field(
        default=None,
        max_length=MAX_SGF_CHARS,
        description="Go only: an SGF game record; `moves` are played after its last move.",
    )
    fen: str | None = Field(
        default=None, max_length=120, description="Chess only: start position (default: the initial one)."
    )


class DecisionFields(BaseModel):
    """How much thinking a request asks for; None means the server's default."""

    simulations: int | None = Field(
        default=None, ge=1, description="Search simulations (capped by the server's --max-simulations)."
    )
    time: float | None = Field(
        default=None, gt=0, description="Search time budget in seconds (capped by --max-time)."
    )
    top_moves: int = Field(default=10, ge=1, le=100, description="How many candidate moves to list.")


class MoveRequest(PositionRequest, DecisionFields):
    """Ask for the engine's move in a position."""

    mode: Literal["reactive", "search", "td", "dyna2"] = Field(
        default="search",
        description="reactive: one network call, no search; search: Gumbel MCTS; Go only: td: TD search "
        "(simulations = simulated games, learning from scratch at each request); dyna2: TD search on the "
        "server's permanent weights.",
    )
    temperature: float = Field(
        default=0.0, ge=0, le=10, description="Reactive only: 0 plays the policy's best move."
    )
    include_position: bool = Field(
        default=False, description="Also describe the position after the engine's move."
    )


class AnalyzeRequest(PositionRequest, DecisionFields):
    """Ask for every legal move's prior and action value, and optionally a search."""

    search: bool = Field(default=False, description="Also run a search and report its results.")


class MoveStatOut(BaseModel):
    """One candidate move, seen from the side to move."""

    move: str
    prior: float = Field(description="Network policy probability.")
    q: float = Field(description="Action value in [-1, 1] (searched value when visited).")
    visits: int = Field(description="Root visits of the search (0 for reactive play).")
    policy: float = Field(description="The engine's preference after search (the prior when reactive).")


class PositionOut(BaseModel):
    """A position as a client shows it."""

    game: str
    to_play: Literal["black", "white"]
    move_number: int
    terminal: bool
    result: str | None = Field(description='"B+", "W+", "1-0", "0-1", "1/2-1/2", "draw" once over.')
    board: list[str] = Field(
        description="Rows from the top (Go: row of the highest number; chess: rank 8). "
        "Go: X black, O white, . empty; chess: FEN letters, . empty."
    )
    fen: str | None = Field(default=None, description="Chess only.")
    legal_moves: list[str]
    last_move: str | None = None


class SearchOut(BaseModel):
    """A decision: the move and the analysis behind it."""

    move: str
    value: float = Field(description="Value of the position for the side to move, in [-1, 1].")
    winrate: float = Field(description="value mapped to [0, 1].")
    top_moves: list[MoveStatOut]
    pv: list[str] = Field(description="Principal variation, starting with `move`.")
    simulations: int
    elapsed: float = Field(description="Seconds spent deciding.")


class MoveResponse(SearchOut):
    game: str
    mode: Literal["reactive", "search", "td", "dyna2"]
    position: PositionOut | None = Field(
        default=None, description="The position after the move (when `include_position`)."
    )


class MoveValue(BaseModel):
    move: str
    prior: float
    q: float


class AnalyzeResponse(BaseModel):
    game: str
    value: float = Field(description="Network value of the position for the side to move.")
    winrate: float
    moves: list[MoveValue] = Field(description="Every legal move, by prior (one network call).")
    search: SearchOut | None = None
    ownership: list[list[float]] | None = Field(
        default=None,
        description="Go, for a model with an ownership head: each point's predicted final owner, "
        "rows from the top, +1 = Black's, -1 = White's.",
    )
    score: float | None = Field(
        default=None,
        description="Go, for a model with a score head: the predicted final score, Black minus White, komi included.",
    )
    elapsed: float


class ModelOut(BaseModel):
    game: str
    arch: str
    encoder_version: int
    training: dict[str, str]
    num_actions: int
    observation_shape: list[int]


class ModelsResponse(BaseModel):
    models: list[ModelOut]


class ErrorOut(BaseModel):
    """Every error answer: one line saying what is wrong, plus per-field errors for 422."""

    detail: str
    errors: list[dict[str, str]] | None = None


class KataGoQuery(RootModel[dict[str, Any]]):
    """A query of KataGo's JSON analysis protocol (KataGo's docs/Analysis_Engine.md): ``id``,
    ``moves``, ``rules``, ``komi``, ``boardXSize``, ``boardYSize`` and the optional fields.  Its
    fields are read by `klent.protocols.katago_query`, as `klent analysis` reads them, so its
    errors are KataGo's ``{"error", "field", "id"}``."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "id": "q1", "moves": [["B", "E5"], ["W", "C3"]], "rules": "chinese", "komi": 7.5,
        "boardXSize": 9, "boardYSize": 9, "analyzeTurns": [2], "maxVisits": 200, "includeOwnership": True,
    }]})
