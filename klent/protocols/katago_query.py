"""A query of KataGo's JSON analysis protocol read into positions and limits.

KataGo's analysis engine (``docs/Analysis_Engine.md`` in the KataGo repository) takes one JSON
object per query: a game (``moves``, ``initialStones``, ``initialPlayer``, ``rules``, ``komi``,
``boardXSize``/``boardYSize``), the turns to analyse and how (``maxVisits``, the ``include*``
flags, ``avoidMoves``/``allowMoves``, ``overrideSettings``), and answers each turn with one
JSON object.  This module reads the query (its answers and the analysis of one turn are
`klent.protocols.katago_answer`), so that `klent analysis` (stdio,
`klent.protocols.katago_analysis`) and the HTTP endpoint read a query by the same code.

What klent's answers mean, where they differ from KataGo's:

* **Rules.**  klent's values are those of area scoring (Tromp-Taylor: positional superko,
  suicide illegal), which is what chinese, tromp-taylor, aga, bga, new-zealand and
  stone-scoring count.  Territory rules (japanese, korean; a rules object with
  ``"scoring": "TERRITORY"``) are analysed under area scoring with a ``warning`` saying so:
  KaTrain sends japanese by default and drops a query answered with an error.  Handicap
  compensation (``whiteHandicapBonus``, by default the rules') is added to the komi.
* **Search.**  ``avoidMoves`` and ``allowMoves`` restrict the moves listed and chosen at the
  analysed position (the search below still sees every move; ``untilDepth`` beyond 1 gets a
  warning).  ``wideRootNoise`` is the Gumbel search's root noise scale.  klent keeps no
  network cache between queries, so ``clear_cache`` has nothing to clear.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from klent.engine.games.base import GameFormatError, IllegalMoveError
from klent.engine.games.go import MAX_KOMI, GoGame, GoState

DEFAULT_MAX_VISITS = 500
MAX_ID_CHARS = 1000
MAX_PRIORITY = 2**31

# KataGo's rule names, normalised (lower case, "_" and " " as "-"): the area-scoring ones and
# their handicap compensation for White (whiteHandicapBonus: "0", "N" or "N-1").
AREA_RULES = {
    "tromp-taylor": "0", "chinese": "N", "chinese-ogs": "N", "chinese-kgs": "N", "aga": "N-1", "bga": "N-1",
    "new-zealand": "0", "stone-scoring": "0", "aga-button": "N-1",
}
TERRITORY_RULES = {"japanese": "0", "korean": "0"}
HANDICAP_BONUSES = ("0", "N", "N-1")
REPORT_AS = ("BLACK", "WHITE", "SIDETOMOVE")

# Query fields read here; any other gets a warning.  ``action`` and its fields are the stdio
# engine's (`klent.protocols.katago_analysis`).
QUERY_FIELDS = frozenset({
    "id", "moves", "initialStones", "initialPlayer", "rules", "komi", "whiteHandicapBonus", "boardXSize",
    "boardYSize", "analyzeTurns", "maxVisits", "includeOwnership", "includeMovesOwnership", "includePolicy",
    "includePVVisits", "avoidMoves", "allowMoves", "overrideSettings", "reportDuringSearchEvery", "priority",
    "priorities",
})
# overrideSettings keys klent applies; any other gets a warning.
SETTINGS = frozenset({"reportAnalysisWinratesAs", "maxTime", "wideRootNoise", "maxVisits", "maxPlayouts"})


class QueryError(ValueError):
    """A query klent cannot answer: KataGo's ``{"error", "field", "id"}`` line."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Query:
    """One analysis query, checked: the positions of its turns and how to analyse them."""

    id: str
    size: int
    turns: tuple[int, ...]  # turn numbers to analyse, in the query's order
    positions: tuple[GoState, ...]  # the position of each turn in ``turns``
    max_visits: int
    max_time: float | None
    report_every: float | None  # seconds between reports during the search; None: the final one only
    priorities: tuple[int, ...]  # one per turn
    report_as: str  # "BLACK", "WHITE" or "SIDETOMOVE"
    noise: float  # the Gumbel search's root noise scale (wideRootNoise)
    ownership: bool
    moves_ownership: bool
    policy: bool
    pv_visits: bool
    avoid: tuple[tuple[int, frozenset[str]], ...] = ()  # (player, moves) never listed nor chosen
    allow: tuple[tuple[int, frozenset[str]], ...] = ()  # (player, moves) the only ones listed and chosen
    warnings: tuple[tuple[str, str], ...] = ()  # (field, message)


@dataclass
class Turn:
    """One turn of a query in the engine's hands: ``stop`` ends its analysis early."""

    query: Query
    index: int  # into query.turns
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def number(self) -> int:
        return self.query.turns[self.index]

    @property
    def priority(self) -> int:
        return self.query.priorities[self.index]


def query_id(raw: Any) -> str | None:
    """The ``id`` of a raw query when it has a usable one (for the error lines)."""
    if isinstance(raw, Mapping) and isinstance(raw.get("id"), str) and len(raw["id"]) <= MAX_ID_CHARS:
        return str(raw["id"])
    return None


def error_line(message: str, field: str | None = None, id: str | None = None) -> dict[str, Any]:
    """KataGo's error answer: ``{"error"}``, with ``field`` and ``id`` where known."""
    line: dict[str, Any] = {"error": message}
    if field is not None:
        line["field"] = field
    if id is not None:
        line["id"] = id
    return line


def parse_query(raw: Any, sizes: Sequence[int], default_visits: int = DEFAULT_MAX_VISITS) -> Query:
    """Check a decoded JSON query and read it into a `Query`; raises `QueryError` naming the
    field.  ``sizes`` are the board sizes there are models for."""
    if not isinstance(raw, Mapping):
        raise QueryError("query must be a JSON object")
    id = query_id(raw)
    if id is None:
        raise QueryError("query needs an id: a string of at most 1000 characters", "id")
    warnings = [(name, "unexpected field, ignored") for name in raw if name not in QUERY_FIELDS]
    size = _board_size(raw, sizes)
    game, bonus_warning = _game(raw, size)
    if bonus_warning:
        warnings.append(bonus_warning)
    states = _game_states(raw, game)
    turns = _turns(raw, len(states) - 1)
    settings = _mapping(raw, "overrideSettings")
    ignored = sorted(str(key) for key in settings if key not in SETTINGS)
    if ignored:
        warnings.append(("overrideSettings", f"klent does not apply these settings: {', '.join(ignored)}"))
    visits = _positive_int(settings, "maxVisits", None, "overrideSettings.maxVisits")
    visits = _positive_int(settings, "maxPlayouts", visits, "overrideSettings.maxPlayouts")
    visits = _positive_int(raw, "maxVisits", visits if visits is not None else default_visits)
    report_as = settings.get("reportAnalysisWinratesAs", "SIDETOMOVE")
    if not isinstance(report_as, str) or report_as.upper() not in REPORT_AS:
        raise QueryError(f"reportAnalysisWinratesAs must be one of {', '.join(REPORT_AS)}",
                         "overrideSettings.reportAnalysisWinratesAs")
    rules_warning = _rules_warning(raw.get("rules"))
    if rules_warning:
        warnings.append(rules_warning)
    priorities = _priorities(raw, len(turns))
    avoid, avoid_warning = _move_lists(raw, "avoidMoves", game)
    allow, allow_warning = _move_lists(raw, "allowMoves", game)
    if len(allow) > 1:
        raise QueryError("allowMoves takes one entry", "allowMoves")
    warnings += [w for w in (avoid_warning, allow_warning) if w]
    return Query(
        id=id,
        size=size,
        turns=tuple(turns),
        positions=tuple(states[t] for t in turns),
        max_visits=visits,
        max_time=_positive_float(settings, "maxTime", "overrideSettings.maxTime"),
        report_every=_positive_float(raw, "reportDuringSearchEvery", "reportDuringSearchEvery"),
        priorities=priorities,
        report_as=report_as.upper(),
        noise=_noise(settings),
        ownership=_flag(raw, "includeOwnership"),
        moves_ownership=_flag(raw, "includeMovesOwnership"),
        policy=_flag(raw, "includePolicy"),
        pv_visits=_flag(raw, "includePVVisits"),
        avoid=avoid,
        allow=allow,
        warnings=tuple(warnings),
    )


def warning_lines(query: Query) -> list[dict[str, Any]]:
    """KataGo's warning answers of a query, sent before its analysis."""
    return [{"warning": message, "field": name, "id": query.id} for name, message in query.warnings]


# --- reading the fields ---------------------------------------------------------------------


def _mapping(raw: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = raw.get(name, {})
    if not isinstance(value, Mapping):
        raise QueryError(f"{name} must be a JSON object", name)
    return value


def _flag(raw: Mapping[str, Any], name: str) -> bool:
    value = raw.get(name, False)
    if not isinstance(value, bool):
        raise QueryError(f"{name} must be true or false", name)
    return value


def _integer(value: Any) -> int | None:
    """``value`` as an int when it is a JSON integer (or a float with an integral value)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _number(value: Any) -> float | None:
    """``value`` as a finite float when it is a JSON number (an int past a float's range is none)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _positive_int(raw: Mapping[str, Any], name: str, default: int | None, where: str | None = None) -> Any:
    if name not in raw:
        return default
    value = _integer(raw[name])
    if value is None or value < 1:
        raise QueryError(f"{name} must be a positive integer", where or name)
    return min(value, 2**40)


def _positive_float(raw: Mapping[str, Any], name: str, where: str) -> float | None:
    if name not in raw:
        return None
    value = _number(raw[name])
    if value is None or value <= 0:
        raise QueryError(f"{name} must be a positive number of seconds", where)
    return min(value, 1e9)


def _noise(settings: Mapping[str, Any]) -> float:
    value = _number(settings.get("wideRootNoise", 0.0))
    if value is None or not 0 <= value <= 10:
        raise QueryError("wideRootNoise must be a number in [0, 10]", "overrideSettings.wideRootNoise")
    return value


def _board_size(raw: Mapping[str, Any], sizes: Sequence[int]) -> int:
    for name in ("boardXSize", "boardYSize"):
        if name not in raw:
            raise QueryError(f"{name} is required", name)
        if _integer(raw[name]) is None:
            raise QueryError(f"{name} must be an integer", name)
    width, height = _integer(raw["boardXSize"]), _integer(raw["boardYSize"])
    if width != height:
        raise QueryError("klent plays square boards only: boardXSize must equal boardYSize", "boardYSize")
    assert width is not None
    if width not in sizes:
        served = ", ".join(f"{s}x{s}" for s in sizes) or "none"
        raise QueryError(f"no model for a {width}x{width} board (klent has models for: {served})", "boardXSize")
    return width


def _rule_name(rules: Any) -> str | None:
    return rules.strip().lower().replace("_", "-").replace(" ", "-") if isinstance(rules, str) else None


def _rules_warning(rules: Any) -> tuple[str, str] | None:
    """The warning for rules klent counts otherwise than they do (territory scoring); a
    `QueryError` for what is not rules at all."""
    if rules is None:
        raise QueryError("rules is required (e.g. \"chinese\" or \"tromp-taylor\")", "rules")
    name = _rule_name(rules)
    if name is not None:
        if name in AREA_RULES:
            return None
        if name in TERRITORY_RULES:
            return "rules", f"{name} rules score territory; klent analyses under area scoring (Tromp-Taylor)"
        raise QueryError(f"unknown rules {str(rules)[:40]!r}", "rules")
    if not isinstance(rules, Mapping):
        raise QueryError("rules must be a rules name or a JSON object", "rules")
    if str(rules.get("scoring", "AREA")).upper() == "TERRITORY":
        return "rules", "territory scoring; klent analyses under area scoring (Tromp-Taylor)"
    return None


def _handicap_bonus(raw: Mapping[str, Any]) -> str:
    """White's handicap compensation: the query's ``whiteHandicapBonus``, else its rules'."""
    if "whiteHandicapBonus" in raw:
        bonus = raw["whiteHandicapBonus"]
        if bonus not in HANDICAP_BONUSES:
            raise QueryError("whiteHandicapBonus must be \"0\", \"N\" or \"N-1\"", "whiteHandicapBonus")
        return str(bonus)
    rules = raw.get("rules")
    if isinstance(rules, Mapping):
        bonus = rules.get("whiteHandicapBonus", "0")
        return str(bonus) if bonus in HANDICAP_BONUSES else "0"
    name = _rule_name(rules) or ""
    return AREA_RULES.get(name, TERRITORY_RULES.get(name, "0"))


def _game(raw: Mapping[str, Any], size: int) -> tuple[GoGame, tuple[str, str] | None]:
    """The game with the query's komi, White's handicap compensation added to it."""
    komi = raw.get("komi", 7.5)
    value = _number(komi)
    if value is None or abs(value) > MAX_KOMI:
        raise QueryError(f"komi must be a number within +-{MAX_KOMI:g}", "komi")
    stones = raw.get("initialStones", [])
    handicap = 0
    if isinstance(stones, list) and all(isinstance(s, list) and s[:1] == ["B"] for s in stones):
        handicap = len(stones) if len(stones) >= 2 else 0
    bonus = {"0": 0, "N": handicap, "N-1": max(0, handicap - 1)}[_handicap_bonus(raw)]
    if abs(value + bonus) > MAX_KOMI:
        raise QueryError(f"komi with the handicap compensation must be within +-{MAX_KOMI:g}", "komi")
    warning = None
    if bonus:
        warning = ("whiteHandicapBonus", f"{bonus} points of handicap compensation added to White's komi")
    return GoGame(size, value + bonus), warning


def _player(value: Any, where: str) -> int:
    if not isinstance(value, str) or value.upper() not in ("B", "W", "BLACK", "WHITE"):
        raise QueryError("a player is \"B\" or \"W\"", where)
    return 0 if value.upper().startswith("B") else 1


def _point(game: GoGame, text: Any, where: str) -> int:
    """A GTP vertex, or KataGo's ``"(x,y)"`` (x from the left, y from the top)."""
    if not isinstance(text, str) or len(text) > 16:
        raise QueryError(f"bad location {str(text)[:20]!r}", where)
    word = text.strip().replace(" ", "")
    if word.startswith("(") and word.endswith(")"):
        parts = word[1:-1].split(",")
        if len(parts) == 2 and all(p.isascii() and p.isdigit() for p in parts):
            x, y = int(parts[0]), int(parts[1])
            if x < game.size and y < game.size:
                return y * game.size + x
    else:
        try:
            return game.parse_vertex(word)
        except GameFormatError:
            pass
    raise QueryError(f"bad location {text[:20]!r} for a {game.size}x{game.size} board", where)


def _pairs(raw: Mapping[str, Any], name: str, game: GoGame, required: bool) -> list[tuple[int, int]]:
    """``[[player, location], ...]`` as (player, action) pairs."""
    if name not in raw and required:
        raise QueryError(f"{name} is required (an empty list for none)", name)
    value = raw.get(name, [])
    if not isinstance(value, list) or len(value) > 4 * game.max_moves:
        raise QueryError(f"{name} must be a list of [player, location] pairs", name)
    pairs = []
    for item in value:
        if not isinstance(item, list) or len(item) != 2:
            raise QueryError(f"{name} must be a list of [player, location] pairs", name)
        pairs.append((_player(item[0], name), _point(game, item[1], name)))
    return pairs


def _game_states(raw: Mapping[str, Any], game: GoGame) -> list[GoState]:
    """The position at each turn: the initial stones, then after each move.  A move by the
    player not to move (two in a row, or one after the game ended by two passes) continues from
    a set-up position of the board with that player to move, as GTP's controllers do."""
    stones = _pairs(raw, "initialStones", game, required=False)
    moves = _pairs(raw, "moves", game, required=True)
    if any(action == game.pass_action for _, action in stones):
        raise QueryError("initialStones cannot hold a pass", "initialStones")
    black = [a for player, a in stones if player == 0]
    white = [a for player, a in stones if player == 1]
    if "initialPlayer" in raw:
        first = _player(raw["initialPlayer"], "initialPlayer")
    else:
        first = moves[0][0] if moves else 0
    try:
        state = game.setup_state(black, white, first)
    except GameFormatError as error:
        raise QueryError(f"bad initial stones: {error}", "initialStones") from None
    states = [state]
    for number, (player, action) in enumerate(moves):
        if state.to_play != player or state.is_terminal:
            state = game.board_position(state, player)
        try:
            state = state.play(action)
        except IllegalMoveError as error:
            raise QueryError(f"Illegal move {number}: {game.vertex(action)} ({error})", "moves") from None
        states.append(state)
    return states


def _turns(raw: Mapping[str, Any], last: int) -> list[int]:
    if "analyzeTurns" not in raw:
        return [last]
    value = raw["analyzeTurns"]
    if not isinstance(value, list) or not value or len(value) > last + 1:
        raise QueryError("analyzeTurns must be a non-empty list of turn numbers", "analyzeTurns")
    turns = [_integer(t) for t in value]
    for turn in turns:
        if turn is None or not 0 <= turn <= last:
            raise QueryError(f"analyzeTurns: every turn must be an integer from 0 to {last}", "analyzeTurns")
    return [t for t in turns if t is not None]


def _priorities(raw: Mapping[str, Any], count: int) -> tuple[int, ...]:
    if "priorities" in raw:
        value = raw["priorities"]
        if not isinstance(value, list) or len(value) != count:
            raise QueryError("priorities must list one integer per turn of analyzeTurns", "priorities")
        found = [_integer(p) for p in value]
        if any(p is None or abs(p) > MAX_PRIORITY for p in found):
            raise QueryError("priorities must be integers", "priorities")
        return tuple(p for p in found if p is not None)
    priority = _integer(raw.get("priority", 0))
    if priority is None or abs(priority) > MAX_PRIORITY:
        raise QueryError("priority must be an integer", "priority")
    return (priority,) * count


def _move_lists(
    raw: Mapping[str, Any], name: str, game: GoGame
) -> tuple[tuple[tuple[int, frozenset[str]], ...], tuple[str, str] | None]:
    """``avoidMoves`` / ``allowMoves``: (player, the moves as vertices) for each entry, and a
    warning when an entry reaches deeper than the analysed position."""
    value = raw.get(name, [])
    if not isinstance(value, list) or len(value) > 2 * game.num_actions:
        raise QueryError(f"{name} must be a list of {{player, moves, untilDepth}} objects", name)
    entries, deep = [], False
    for entry in value:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("moves"), list):
            raise QueryError(f"{name} must be a list of {{player, moves, untilDepth}} objects", name)
        depth = _integer(entry.get("untilDepth"))
        if depth is None or depth < 1:
            raise QueryError(f"{name}: untilDepth must be a positive integer", name)
        deep = deep or depth > 1
        moves = frozenset(game.vertex(_point(game, m, name)) for m in entry["moves"][: 2 * game.num_actions])
        entries.append((_player(entry.get("player"), name), moves))
    warning = (name, "klent applies it at the analysed position only (untilDepth 1)") if deep else None
    return tuple(entries), warning
