"""Exclusion layers and the merged ignore list (docs/design.md "Exclusions and the ignore list").

    builtin       exclusions.toml, reviewed in the repo: load_builtin(path)
    operational   an admin's runtime entries (OperationalExclusion; stored by the shell)
    canary        suspensions of states in ENFORCE mode that have not run out

`merge_ignore_list` unions them for one model; `provider_preferences` / `merge_provider_preferences` turn
the result into OpenRouter's `provider.ignore`. Matching follows OpenRouter's routing fields: a base slug
(`deepinfra`) covers every endpoint of that provider (`deepinfra/fp8`, `deepinfra/turbo`), a full tag only
itself. OpenRouter does not let a base slug cover service-tier endpoints (`openai/priority`,
`google-vertex/flex`), so the merged list names those explicitly when a slug entry covers a discovered one.
Only `load_builtin` touches the disk; everything else is pure (`now` is passed in).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from tasks.core.types import (
    BuiltinExclusion,
    EndpointState,
    IgnoreEntry,
    IgnoreList,
    Layer,
    Mode,
    OperationalExclusion,
)
from tasks.errors import ConfigError, read_text_file

__all__ = [
    "SERVICE_TIER_VARIANTS",
    "excluded_layers",
    "is_valid_tag",
    "load_builtin",
    "matches",
    "merge_ignore_list",
    "merge_provider_preferences",
    "parse_builtin",
    "provider_preferences",
]

#: Endpoint variants OpenRouter does not match with a base slug (docs/openrouter-api.md, "Endpoint tags").
SERVICE_TIER_VARIANTS: frozenset[str] = frozenset({"priority", "flex"})

_TAG = re.compile(r"^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)?$")
_MODEL = re.compile(r"^[^/\s]+/[^/\s]+$")
_ENTRY_KEYS = {"tag", "provider", "model", "reason", "evidence", "date"}
_LAYER_ORDER = {Layer.BUILTIN: 0, Layer.OPERATIONAL: 1, Layer.CANARY: 2}


def is_valid_tag(tag: str) -> bool:
    """A lower-case provider slug (`fireworks`) or endpoint tag (`deepinfra/fp8`)."""
    return bool(_TAG.match(tag))


def matches(entry_tag: str, endpoint_tag: str) -> bool:
    """Does an exclusion entry cover an endpoint? A base slug covers all its variants; a tag only itself."""
    entry, endpoint = entry_tag.lower(), endpoint_tag.lower()
    if "/" in entry:
        return entry == endpoint
    return endpoint == entry or endpoint.startswith(entry + "/")


def _applies(entry_model: str | None, model: str) -> bool:
    return entry_model is None or entry_model == model


# -- builtin layer: exclusions.toml ------------------------------------------------------------------------
def parse_builtin(text: str, source: str = "exclusions.toml") -> list[BuiltinExclusion]:
    """Validate the TOML text of exclusions.toml; a bad file raises ConfigError naming the entry and key."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"exclusions: {source} is not valid TOML ({exc})") from None
    extra = sorted(set(raw) - {"exclusion"})
    if extra:
        raise ConfigError(f"exclusions: {source}: unknown top-level key {extra[0]!r} (use [[exclusion]])")
    entries = raw.get("exclusion", [])
    if not isinstance(entries, list):
        raise ConfigError(f"exclusions: {source}: 'exclusion' must be an array of tables ([[exclusion]])")
    return [_parse_entry(e, i, source) for i, e in enumerate(entries)]


def _parse_entry(entry: Any, index: int, source: str) -> BuiltinExclusion:
    where = f"exclusions: {source}: exclusion[{index}]"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_ENTRY_KEYS))})")
    if ("tag" in entry) == ("provider" in entry):
        raise ConfigError(f"{where}: needs exactly one of 'tag' or 'provider'")
    key = "tag" if "tag" in entry else "provider"
    tag = entry[key]
    if not isinstance(tag, str) or not is_valid_tag(tag):
        raise ConfigError(f"{where}: {key} must be a lower-case slug like 'deepinfra' or 'deepinfra/fp8' "
                          f"(got {tag!r})")
    if key == "provider" and "/" in tag:
        raise ConfigError(f"{where}: provider must be a base slug without '/' (got {tag!r}); use 'tag'")
    for field in ("reason", "evidence"):
        value = entry.get(field)
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: {field} must be a non-empty string (got {value!r})")
    model = entry.get("model")
    if model is not None and (not isinstance(model, str) or not _MODEL.match(model)):
        raise ConfigError(f"{where}: model must look like 'author/slug' (got {model!r})")
    return BuiltinExclusion(tag=tag, reason=entry["reason"].strip(), evidence=entry["evidence"].strip(),
                            date=_parse_date(entry.get("date"), where), model=model)


def _parse_date(value: Any, where: str) -> str:
    if isinstance(value, date) and not isinstance(value, datetime):  # TOML local date: date = 2026-10-30
        return value.isoformat()
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    raise ConfigError(f"{where}: date must be YYYY-MM-DD (got {value!r})")


def load_builtin(path: str | Path) -> list[BuiltinExclusion]:
    """Read and validate exclusions.toml. A missing or unreadable file is a ConfigError too."""
    p = Path(path)
    return parse_builtin(read_text_file(p, lambda msg: ConfigError(f"exclusions: {msg}")), str(p))


# -- merging -----------------------------------------------------------------------------------------------
def _aware(ts: datetime) -> datetime:
    if ts.tzinfo is None:
        raise ValueError(f"exclusions need timezone-aware datetimes (got {ts!r})")
    return ts.astimezone(UTC)


def _active_operational(operational: Iterable[OperationalExclusion], model: str, now: datetime
                        ) -> list[OperationalExclusion]:
    return [o for o in operational
            if _applies(o.model, model) and (o.until is None or _aware(o.until) > now)]


def _canary_states(canary_states: Mapping[str, EndpointState] | Iterable[EndpointState]
                   ) -> list[EndpointState]:
    return list(canary_states.values() if isinstance(canary_states, Mapping) else canary_states)


def excluded_layers(model: str, endpoint_tags: Iterable[str], builtin: Iterable[BuiltinExclusion],
                    operational: Iterable[OperationalExclusion], now: datetime) -> dict[str, Layer]:
    """The builtin/operational layer that excludes each endpoint (the policy's `RoundInput.excluded`).

    Builtin wins over operational when both cover a tag; expired operational entries do not count.
    """
    now = _aware(now)
    built = [b for b in builtin if _applies(b.model, model)]
    ops = _active_operational(operational, model, now)
    out: dict[str, Layer] = {}
    for tag in sorted(set(endpoint_tags)):
        if any(matches(b.tag, tag) for b in built):
            out[tag] = Layer.BUILTIN
        elif any(matches(o.tag, tag) for o in ops):
            out[tag] = Layer.OPERATIONAL
    return out


def describe_suspension(failures: Iterable[tuple[str, str]], round_ids: Iterable[str]) -> str:
    """`failed structured (fenced_json), language (language_mix) in rounds 10:00Z, 10:30Z`: the failing
    contracts with their reasons, and the evidence rounds (their time: the artifact is per model)."""
    reasons: dict[str, list[str]] = {}
    for contract, reason in sorted(set(failures)):
        reasons.setdefault(contract, []).append(reason)
    failed = ", ".join(f"{c} ({', '.join(rs)})" for c, rs in reasons.items())
    rounds = ", ".join(rid.rsplit("@", 1)[-1] for rid in round_ids)
    text = f"failed {failed}" if failed else "failed"
    return text + (f" in rounds {rounds}" if rounds else "")


def merge_ignore_list(
    model: str,
    endpoint_tags: Iterable[str],
    builtin: Iterable[BuiltinExclusion],
    operational: Iterable[OperationalExclusion],
    canary_states: Mapping[str, EndpointState] | Iterable[EndpointState],
    now: datetime,
    evidence: Mapping[str, str] | None = None,
) -> IgnoreList:
    """The sorted union of the three layers for `model`.

    `evidence` (tag -> `describe_suspension` text) is appended to a canary entry's reason, so the ignore
    list says why an endpoint is out (the failing contracts and the rounds that showed it).

    Builtin and operational entries are listed as written (a slug stays a slug, so it also covers
    endpoints not discovered right now), plus any discovered service-tier endpoint a slug entry covers.
    Expired operational entries are dropped. The canary layer is every ENFORCE-mode state of `model`
    whose suspension has not run out at `now`; observe (shadow) states never reach the list.
    One entry per (tag, layer); when two entries collide, the longer-lasting one is kept.
    """
    now = _aware(now)
    tags = sorted(set(endpoint_tags))
    found: dict[tuple[str, Layer], IgnoreEntry] = {}

    def add(tag: str, layer: Layer, reason: str, until: datetime | None) -> None:
        entry = IgnoreEntry(tag=tag.lower(), layer=layer, reason=reason, until=until)
        old = found.get((entry.tag, layer))
        if old is None or (old.until is not None and (until is None or until > old.until)):
            found[(entry.tag, layer)] = entry

    def add_covered(entry_tag: str, layer: Layer, reason: str, until: datetime | None) -> None:
        add(entry_tag, layer, reason, until)
        if "/" not in entry_tag:
            for tag in tags:
                if "/" in tag and matches(entry_tag, tag) and tag.split("/", 1)[1] in SERVICE_TIER_VARIANTS:
                    add(tag, layer, reason, until)

    for b in builtin:
        if _applies(b.model, model):
            add_covered(b.tag, Layer.BUILTIN, b.reason, None)
    for o in _active_operational(operational, model, now):
        add_covered(o.tag, Layer.OPERATIONAL, o.reason, _aware(o.until) if o.until else None)
    for st in _canary_states(canary_states):
        if (st.model == model and st.mode is Mode.ENFORCE and st.suspended_until is not None
                and _aware(st.suspended_until) > now):
            why = (evidence or {}).get(st.tag)
            add(st.tag, Layer.CANARY,
                f"canary suspension (ladder step {st.ladder_step})" + (f": {why}" if why else ""),
                _aware(st.suspended_until))
    entries = sorted(found.values(), key=lambda e: (e.tag, _LAYER_ORDER[e.layer]))
    return IgnoreList(model=model, ignore=tuple(sorted({e.tag for e in entries})), entries=tuple(entries))


# -- the request side --------------------------------------------------------------------------------------
def provider_preferences(ignore_list: IgnoreList) -> dict[str, list[str]]:
    """`{"ignore": [...]}` to merge into an OpenRouter request's `provider` object."""
    return {"ignore": list(ignore_list.ignore)}


def merge_provider_preferences(existing: Mapping[str, Any] | None, ignore_list: IgnoreList) -> dict[str, Any]:
    """A copy of a request's `provider` object whose `ignore` is the union of its own and ours.

    The request's own entries keep their order and come first; ours follow in sorted order, without
    duplicates. Other keys (`only`, `order`, `allow_fallbacks`, ...) are left as they are.
    """
    merged: dict[str, Any] = dict(existing or {})
    own = merged.get("ignore") or []
    if isinstance(own, str):
        own = [own]
    seen: set[str] = set()
    out: list[str] = []
    for tag in [*own, *ignore_list.ignore]:
        if tag not in seen:
            seen.add(tag)
            out.append(tag)
    merged["ignore"] = out
    return merged
