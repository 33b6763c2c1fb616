"""The adapter from a pydantic `ValidationError` to the one line an operator reads (`config: <key> <why>`).

The files' schemas (tasks/config_schema.py, router/routes_schema.py, simulator/fleet_schema.py) check types,
bounds, enums, unknown keys and the rules between keys with pydantic; this module turns the first error into the
line the project has always printed, so a schema can change its engine without changing a word a user sees:

* a value of the wrong type (or a wrong item in a list) is `<key> must be <what> (got <value>)`;
* a value out of its bounds (or not among an enum's values) is `<key> <why>`, `why` formatted with the value;
  both come from the key's `Say`, an annotation the schema puts on the field;
* a validator's own `ValueError` is `<key> <its text>` at a key, and the whole line (its text) at the file;
* an unknown key is `unknown key '<key>' (known: ...)`, before any other error.

`value` in a `Say`'s templates is the key's raw value as the file wrote it (the whole list for a bad item).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails


@dataclass(frozen=True)
class Say:
    """How a key's bad value is told. `why`: the bound broken (`{value}` is the raw value, `{number}` it as a
    float, `{ge}`, `{le}`... the key's bounds); `what`: what the key must be, for a value of the wrong type (None:
    `why` says it too)."""

    why: str
    what: str | None = None
    bounds: Mapping[str, Any] = field(default_factory=dict)  # the key's `ge`, `gt`, `le`, `lt` (`says` fills it)

    def told(self, key: str, raw: Any, type_error: bool) -> str:
        if type_error and self.what is not None:
            return f"{key} must be {self.what} (got {raw!r})"
        number = float(raw) if isinstance(raw, int | float) else raw
        return f"{key} {self.why.format(value=raw, number=number, **self.bounds)}"


#: pydantic error types that mean "not the kind of value this key holds" (the rest: a bound or an enum broken).
_TYPE_ERRORS = ("_type", "_parsing")


_BOUNDS = ("ge", "gt", "le", "lt")


def says(model: type[BaseModel]) -> dict[str, Say]:
    """Every field's `Say` (from its annotations), with the field's bounds."""
    said = {}
    for name, f in model.model_fields.items():
        say = next((m for m in f.metadata if isinstance(m, Say)), Say("is not valid (got {value!r})"))
        bounds = {b: getattr(m, b) for m in f.metadata for b in _BOUNDS if getattr(m, b, None) is not None}
        said[name] = replace(say, bounds=bounds)
    return said


def field_name(loc: tuple[int | str, ...]) -> str:
    """The file's key an error is at (`ladder[1]` is at `ladder`)."""
    return str(loc[0])


def first_line(
    err: ValidationError, raw: Mapping[str, Any], said: Mapping[str, Say], known: Callable[[], str],
    key_of: Callable[[tuple[int | str, ...]], str] = field_name,
) -> str:
    """The line telling `err`'s first error (an unknown key first) for the mapping `raw` that was validated."""
    errors = err.errors(include_url=False)
    unknown = sorted(str(e["loc"][-1]) for e in errors if e["type"] == "extra_forbidden")
    if unknown:
        return f"unknown key {unknown[0]!r} (known: {known()})"
    return _line(errors[0], raw, said, key_of)


def _line(e: ErrorDetails, raw: Mapping[str, Any], said: Mapping[str, Say],
          key_of: Callable[[tuple[int | str, ...]], str]) -> str:
    loc = e["loc"]
    own = e["type"] == "value_error"
    text = str(e.get("ctx", {}).get("error", e["msg"])) if own else e["msg"]
    if not loc:
        return text
    name = str(loc[0])
    key = key_of(loc)
    if own:
        return f"{key} {text}"
    type_error = e["type"].endswith(_TYPE_ERRORS) or len(loc) > 1
    return said[name].told(key, raw.get(name, e["input"]), type_error)
