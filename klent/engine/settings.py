"""Settings files: a TOML file read into validated sections, its mistakes reported in one line.

Two kinds of file are read this way: a training config (`klent.training.config`) and a lichess bot's
config (`klent.protocols.lichess_config`).  A section (`klent.training.config.OptimConfig`,
`klent.protocols.lichess_config.GamePolicy`, ...) is a frozen pydantic dataclass: still a dataclass
(``dataclasses.replace`` validates again, ``asdict`` and ``fields`` work), so code that builds
settings in Python is unchanged, while a TOML value of the wrong type, range or name fails when
the file is read -- before an hour of training, or before a bot plays with a real account.
Numbers are strict because TOML is typed: ``iterations = 2.5`` or ``true`` is a mistake, not 3
or 1 (an integer still counts as a number: ``lr = 1``).

`one_line` turns pydantic's report into the one line a command prints, naming the key as the
TOML file does: ``[optim] batch_size must be an integer, not 2.5``.  `check_arguments` does the
same for the tables a config hands on to a class it does not declare (a game's options, the
search's settings).  Nothing here is engine logic; it sits in ``klent/engine/`` so that every layer
above may use it, as ``klent.engine.files`` for writing.
"""

from __future__ import annotations

import inspect
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import pydantic
from pydantic import AllowInfNan, ConfigDict, Strict, TypeAdapter, ValidationError
from typing_extensions import dataclass_transform

from klent.engine.files import read_bounded

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

Int = Annotated[int, Strict()]
# A number: an int counts (lr = 1), a bool or a string does not, and neither do TOML's nan and
# inf, which slip past every range check (nan < 0 is False) and would only show an hour later,
# as NaN losses and weights.
Float = Annotated[float, Strict(), AllowInfNan(False)]
Bool = Annotated[bool, Strict()]
Str = Annotated[str, Strict()]

_Section = TypeVar("_Section", bound=type)
_T = TypeVar("_T")
Location = tuple[int | str, ...]
_STRICT = ConfigDict(strict=True, allow_inf_nan=False)  # what `check_arguments` holds values to
# The largest settings file read (a real one is a few KB); a larger one is refused unread.
MAX_BYTES = 1 << 20

# What an error of each kind says ({key}: the setting, {value}: what the file gave).
_MESSAGES = {
    "int_type": "{key} must be an integer, not {value}",
    "float_type": "{key} must be a number, not {value}",
    "finite_number": "{key} must be finite, not nan or inf",
    "bool_type": "{key} must be true or false, not {value}",
    "string_type": "{key} must be a string, not {value}",
    "dict_type": "{key} must be a table, not {value}",
    "dataclass_type": "{key} must be a table, not {value}",  # a section given a value
    "tuple_type": "{key} must be a list, not {value}",
    "greater_than_equal": "{key} must be >= {ge}, not {value}",
    "less_than_equal": "{key} must be <= {le}, not {value}",
    "unexpected_keyword_argument": "{key} is not a setting",
    "missing": "{key} is missing",
}


@dataclass_transform(frozen_default=True)  # type checkers see the dataclass __init__ it makes
def section(cls: _Section) -> _Section:
    """Declare ``cls`` a config section: frozen, validated, unknown keys refused."""
    return typing.cast(_Section, pydantic.dataclasses.dataclass(frozen=True, config=ConfigDict(extra="forbid"))(cls))


def read_toml(path: str | Path) -> dict[str, Any]:
    """The tables of the TOML file ``path``; a missing file is FileNotFoundError, anything else
    that keeps it from being read (not UTF-8, not TOML, unreadable, larger than `MAX_BYTES`,
    nested deeper than the parser's recursion goes) a one-line ValueError that names the file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no config file {str(path)!r}")
    try:
        return tomllib.loads(read_bounded(path, MAX_BYTES).decode("utf-8"))
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise ValueError(f"{path}: not a settings file (nested too deeply)") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not a TOML file (not UTF-8 text: {error.reason} at byte {error.start})") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not valid TOML: {error}") from None
    except OSError as error:
        raise ValueError(f"{path}: {error.strerror}") from None


def build_section(cls: type[_T], name: str, table: dict[str, Any]) -> _T:
    """The section ``cls`` from its TOML table ``[name]``, a mistake as one line naming the key."""
    try:
        return cls(**table)
    except ValidationError as error:
        raise ValueError(one_line(error, lambda loc: f"[{name}] {key_path(loc)}")) from None


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
    hints = typing.get_type_hints(cls.__init__)  # type: ignore[misc]  # the class's own, not an instance's
    for name, value in values.items():
        if name not in known:
            choices = ", ".join(known) or "none"
            raise ValueError(f"{where} {name} is not a setting (known: {choices})")
        try:
            TypeAdapter(hints.get(name, Any), config=_STRICT).validate_python(value)
        except ValidationError as error:
            raise ValueError(one_line(error, lambda loc: f"{where} {name}")) from None  # noqa: B023 (called here)


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
