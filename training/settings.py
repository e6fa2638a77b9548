"""How a section of a training config is declared and how its mistakes are reported.

A section (`training.config.OptimConfig`, `training.selfplay.SelfPlayConfig`, ...) is a frozen
pydantic dataclass: still a dataclass (``dataclasses.replace`` validates again, ``asdict`` and
``fields`` work), so code that builds configs in Python is unchanged, while a TOML value of the
wrong type, range or name fails when the file is read instead of an hour into a run.  Numbers
are strict because TOML is typed: ``iterations = 2.5`` or ``true`` is a mistake, not 3 or 1
(an integer still counts as a number: ``lr = 1``).

`one_line` turns pydantic's report into the one line `klent train` prints, naming the key as
the TOML file does: ``[optim] batch_size must be an integer, not 2.5``.  `check_arguments` does
the same for the tables a config hands on to a class it does not declare (a game's options, the
search's settings).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import pydantic
from pydantic import AllowInfNan, ConfigDict, Strict, TypeAdapter, ValidationError

Int = Annotated[int, Strict()]
# A number: an int counts (lr = 1), a bool or a string does not, and neither do TOML's nan and
# inf, which slip past every range check (nan < 0 is False) and would only show an hour later,
# as NaN losses and weights.
Float = Annotated[float, Strict(), AllowInfNan(False)]
Bool = Annotated[bool, Strict()]
Str = Annotated[str, Strict()]

_Section = TypeVar("_Section", bound=type)
Location = tuple[int | str, ...]
_STRICT = ConfigDict(strict=True, allow_inf_nan=False)  # what `check_arguments` holds values to

# What an error of each kind says ({key}: the setting, {value}: what the file gave).
_MESSAGES = {
    "int_type": "{key} must be an integer, not {value}",
    "float_type": "{key} must be a number, not {value}",
    "finite_number": "{key} must be finite, not nan or inf",
    "bool_type": "{key} must be true or false, not {value}",
    "string_type": "{key} must be a string, not {value}",
    "dict_type": "{key} must be a table, not {value}",
    "tuple_type": "{key} must be a list, not {value}",
    "greater_than_equal": "{key} must be >= {ge}, not {value}",
    "less_than_equal": "{key} must be <= {le}, not {value}",
    "unexpected_keyword_argument": "{key} is not a setting",
    "missing": "{key} is missing",
}


def section(cls: _Section) -> _Section:
    """Declare ``cls`` a config section: frozen, validated, unknown keys refused."""
    return pydantic.dataclasses.dataclass(frozen=True, config=ConfigDict(extra="forbid"))(cls)


def one_line(error: ValidationError, key: Callable[[Location], str]) -> str:
    """Every error of ``error`` in one line; ``key`` names a location as the TOML file does."""
    parts = []
    for item in error.errors():
        if item["type"] == "value_error":  # a section's own check, whose message names its key
            parts.append(str(item["ctx"]["error"]))
            continue
        template = _MESSAGES.get(item["type"], "{key} {pydantic}")
        pydantic_words = item["msg"].replace("Input should be", "must be")
        parts.append(template.format(key=key(item["loc"]), value=_toml(item["input"]),
                                     pydantic=pydantic_words, **item.get("ctx", {})))
    return "; ".join(parts)


def check_arguments(where: str, cls: type, values: dict[str, Any]) -> None:
    """Raise a one-line ValueError unless each of ``values`` is an optional keyword argument of
    ``cls`` holding a value of its annotated type (strictly, as for sections)."""
    parameters = inspect.signature(cls).parameters
    known = [name for name, p in parameters.items() if p.default is not inspect.Parameter.empty]
    hints = typing.get_type_hints(cls.__init__)
    for name, value in values.items():
        if name not in known:
            choices = ", ".join(known) or "none"
            raise ValueError(f"{where} {name} is not a setting (known: {choices})")
        try:
            TypeAdapter(hints.get(name, Any), config=_STRICT).validate_python(value)
        except ValidationError as error:
            raise ValueError(one_line(error, lambda loc, name=name: f"{where} {name}")) from None


def key_path(loc: Location) -> str:
    """A location inside a section as one name: ``lr_schedule[0][1]``."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")


def _toml(value: Any) -> str:
    """``value`` as a TOML file writes it (true, "many"), for an error message."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)
