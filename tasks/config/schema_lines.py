"""The adapter from a pydantic `ValidationError` to the one line an operator reads (`config: <key> <why>`).

The files' schemas (tasks/config/schema.py, provider_canary/router/routes_schema.py,
provider_canary/simulator/fleet_schema.py) check types, bounds, enums, unknown keys and the rules between keys with
pydantic; this module turns the first error into the line the project has always printed, so a schema can change its
engine without changing a word a user sees. A key is named where it sits (`where`: `ttft_s`,
`route[0].tier[1].base_url`):

* a value of the wrong type (or a wrong item in a list) is `<key> must be <what> (got <value>)`;
* a value out of its bounds (or not among an enum's values, or missing) is `<key> <why>`, `why` formatted with
  the value; both come from the key's `Say`, an annotation the schema puts on the field;
* a validator's own `ValueError` continues the name of where it was raised (`<key> <text>`; no space when the
  text starts with `:` or `.`, as in `provider.ignore ...`), and is the whole line when raised for the file;
* a table that is no table is `<where> must be a table (got <value>)`;
* an unknown key comes before any other error, told by the schema's `unknown(table, key)`.

`value` in a `Say`'s templates is the key's raw value as the file wrote it (the whole list for a bad item).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

Loc = tuple[int | str, ...]


@dataclass(frozen=True)
class Say:
    """How a key's bad value is told. `why`: the bound broken (`{value}` is the raw value, `{number}` it as a
    float, `{ge}`, `{le}`... the key's bounds); `what`: what the key must be, for a value of the wrong type (None:
    `why` says it too; a key whose other faults its validator tells has only a `what`)."""

    why: str = ""
    what: str | None = None
    bounds: Mapping[str, Any] = field(default_factory=dict)  # the key's `ge`, `gt`, `le`, `lt` (filled on use)

    def told(self, key: str, raw: Any, type_error: bool) -> str:
        if (type_error or not self.why) and self.what is not None:
            return f"{key} must be {self.what} (got {raw!r})"
        return f"{key} {self.why_of(raw)}"

    def why_of(self, raw: Any) -> str:
        number = float(raw) if isinstance(raw, int | float) else raw
        return self.why.format(value=raw, number=number, **self.bounds)

    def refuse(self, raw: Any) -> ValueError:
        """The error a validator raises for a value its key's rule refuses: told in the `why` of the type errors."""
        return ValueError(self.why_of(raw))


#: pydantic error types that mean "not the kind of value this key holds" (the rest: a bound or an enum broken).
_TYPE_ERRORS = ("_type", "_parsing")
_BOUNDS = ("ge", "gt", "le", "lt")
_MISSING = object()


def say_of(f: FieldInfo) -> Say:
    """A field's `Say` (from its annotations), with the field's bounds."""
    say = next((m for m in f.metadata if isinstance(m, Say)), Say("is not valid (got {value!r})"))
    return replace(say, bounds={b: getattr(m, b) for m in f.metadata for b in _BOUNDS
                                if getattr(m, b, None) is not None})


def dotted(loc: Loc) -> str:
    """`('route', 0, 'tier', 1, 'base_url')` -> `route[0].tier[1].base_url`."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


def first_line(
    err: ValidationError, raw: Any, model: type[BaseModel], unknown: Callable[[Loc, str], str],
    where: Callable[[Loc], str] = dotted, *, sorted_unknown: bool = True,
) -> str:
    """The line telling `err`'s first error (an unknown key first: of its table's, the first by name, or as
    written when not `sorted_unknown`) for `raw`, the mapping `model` validated."""
    errors = err.errors(include_url=False)
    extra = [e["loc"] for e in errors if e["type"] == "extra_forbidden"]
    if extra:
        table = extra[0][:-1]
        keys = [str(loc[-1]) for loc in extra if loc[:-1] == table]
        return unknown(table, min(keys) if sorted_unknown else keys[0])
    return _line(errors[0], raw, model, where)


def _line(e: ErrorDetails, raw: Any, model: type[BaseModel], where: Callable[[Loc], str]) -> str:
    loc = e["loc"]
    at, depth = field_at(model, loc)
    if e["type"] == "value_error":
        text = str(e.get("ctx", {}).get("error", e["msg"]))
        return continued(where(loc[:depth]), text) if loc else text
    value = value_at(raw, loc[:depth])
    if at is None:
        return f"{where(loc[:depth])} must be a table (got {value!r})"
    type_error = e["type"].endswith(_TYPE_ERRORS) or len(loc) > depth
    return say_of(at).told(where(loc[:depth]), None if value is _MISSING else value, type_error)


def continued(name: str, text: str) -> str:
    return f"{name}{text}" if text.startswith((":", ".")) else f"{name} {text}"


def field_at(model: type[BaseModel], loc: Loc) -> tuple[FieldInfo | None, int]:
    """The field `loc` names (None: a table, a list item that is a model) and how many of `loc`'s parts it took."""
    current: type[BaseModel] | None = model
    found: FieldInfo | None = None
    depth = 0
    for part in loc:
        if isinstance(part, str) and current is not None and part in current.model_fields:
            found = current.model_fields[part]
            current = _inner_model(found.annotation)
            if current is found.annotation:
                found = None  # a table of its own (`[router]`)
        elif isinstance(part, int) and current is not None and found is not None:
            found = None  # an item of a list of tables: the item's own table
        else:
            break
        depth += 1
    return found, depth


def model_at(model: type[BaseModel], loc: Loc) -> type[BaseModel]:
    """The model of the table at `loc` (`model` itself at the file's top)."""
    for part in loc:
        if isinstance(part, str):
            model = _inner_model(model.model_fields[part].annotation) or model
    return model


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds (itself, or the items of its list or tuple, or one side of `X | None`)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (list, tuple, typing.Union, types.UnionType):
        return next((m for a in typing.get_args(annotation) if (m := _inner_model(a)) is not None), None)
    return None


def value_at(raw: Any, loc: Loc) -> Any:
    """The raw value at `loc` (`_MISSING` when the file does not have it)."""
    for part in loc:
        try:
            raw = raw[part]
        except (KeyError, IndexError, TypeError):
            return _MISSING
    return raw
