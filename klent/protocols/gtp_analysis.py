"""GTP's analysis extensions: the arguments of ``lz-analyze``/``kata-analyze`` and their
``info`` lines, as Leela Zero and KataGo write them (docs/gtp.md, "Analysis")."""

from __future__ import annotations

from dataclasses import dataclass

from klent.engine.player import Decision, Player
from klent.protocols.gtp_wire import COLOURS, GtpError, gtp_int

DEFAULT_INTERVAL = 1.0  # seconds between analysis lines when the command gives none
# KataGo's boolean options that are accepted; only ``ownership`` changes what is written.
_FLAGS = ("ownership", "ownershipstdev", "pvvisits", "movesownership", "rootinfo", "pvedgevisits")


@dataclass(frozen=True)
class AnalysisRequest:
    """An analysis command's arguments."""

    colour: int | None
    interval: float  # seconds
    min_moves: int
    max_moves: int
    ownership: bool = False


def analysis_request(args: list[str]) -> AnalysisRequest:
    """``[colour] [interval] [key value]...`` as Leela Zero and KataGo accept them."""
    colour, interval, min_moves, max_moves, ownership = None, DEFAULT_INTERVAL, 0, 0, False
    words = list(args)
    if words and words[0].lower() in COLOURS:
        colour = COLOURS[words.pop(0).lower()]
    if words and words[0].isascii() and words[0].isdigit():
        try:
            interval = gtp_int(words.pop(0)) / 100.0
        except ValueError:
            raise GtpError("syntax error (bad interval)") from None
    while words:
        key = words.pop(0).lower()
        if not words:
            raise GtpError(f"syntax error (no value for {key!r})")
        value = words.pop(0)
        try:
            if key == "interval":
                interval = gtp_int(value) / 100.0
            elif key == "minmoves":
                min_moves = gtp_int(value)
            elif key == "maxmoves":
                max_moves = gtp_int(value)
            elif key in _FLAGS:
                if value.lower() not in ("true", "false"):
                    raise ValueError(value)
                if key == "ownership":
                    ownership = value.lower() == "true"
            else:
                raise GtpError(f"unsupported analysis option {key!r}")
        except ValueError:
            raise GtpError(f"syntax error (bad value for {key!r})") from None
    if interval <= 0:
        interval = DEFAULT_INTERVAL
    return AnalysisRequest(colour, max(0.05, interval), max(0, min_moves), max(0, max_moves), ownership)


def info_line(decision: Decision, style: str, request: AnalysisRequest, player: Player) -> str:
    """The candidate moves of a decision as one ``info move ...`` line in ``style`` ("lz" or
    "kata"), and KataGo's ``ownership`` field when asked for and ``player``'s model has the head."""
    # Most visited in the tree first; among equal counts the facade's order (its preference).
    moves = sorted(decision.top_moves, key=lambda m: -m.visits)
    visited = [m for m in moves if m.visits > 0]
    shown = moves[: max(len(visited), request.min_moves, 1)]
    if request.max_moves:
        shown = shown[: request.max_moves]
    parts = []
    for order, m in enumerate(shown):
        pv = " ".join(m.pv)
        if style == "lz":
            parts.append(
                f"info move {m.move} visits {m.visits} winrate {round(10000 * m.winrate)} "
                f"prior {round(10000 * m.prior)} order {order} pv {pv}"
            )
        else:
            parts.append(
                f"info move {m.move} visits {m.visits} utility {m.q:.6f} winrate {m.winrate:.6f} "
                f"prior {m.prior:.6f} order {order} pv {pv}"
            )
    if style != "lz" and request.ownership:
        ownership = player.ownership()
        if ownership is not None:
            parts.append("ownership " + " ".join(f"{v:.6f}" for v in ownership.owner.ravel()))
    return " ".join(parts)
