"""Checks for single values of a fleet file; each raises FleetError naming the key path and the value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tasks.errors import FleetError


@dataclass(frozen=True)
class Percentiles:
    p50: float
    p75: float
    p90: float
    p99: float

    def as_dict(self) -> dict[str, float]:
        return {"p50": self.p50, "p75": self.p75, "p90": self.p90, "p99": self.p99}


def when(w: Mapping[str, Any], key: str, where: str) -> datetime | None:
    value = w.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise FleetError(f"fleet: {where}.{key} must be an ISO-8601 time (got {value!r})") from None
    if not isinstance(value, datetime):
        raise FleetError(f"fleet: {where}.{key} must be a date-time (got {value!r})")
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def only_keys(m: Mapping[str, Any], allowed: set[str], where: str) -> None:
    for key in m:
        if key not in allowed:
            raise FleetError(f"fleet: {where}: unknown key {key!r} (allowed: {', '.join(sorted(allowed))})")


def list_of_tables(value: Any, where: str, *, required: bool) -> list[Mapping[str, Any]]:
    if value is None and not required:
        return []
    if not isinstance(value, list) or (required and not value):
        raise FleetError(f"fleet: {where} must be a non-empty list of tables (got {value!r})")
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise FleetError(f"fleet: {where}[{i}] must be a table (got {item!r})")
    return value


def string(m: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str:
    value = m.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise FleetError(f"fleet: {where}.{key} must be a non-empty string (got {value!r})")
    return value


def integer(m: Mapping[str, Any], key: str, where: str, default: int) -> int:
    value = m.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise FleetError(f"fleet: {where}.{key} must be an integer (got {value!r})")
    return value


def opt_integer(m: Mapping[str, Any], key: str, where: str) -> int | None:
    return None if m.get(key) is None else integer(m, key, where, 0)


def seconds(m: Mapping[str, Any], key: str, where: str, default: float) -> float:
    value = m.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise FleetError(f"fleet: {where}.{key} must be a number of seconds >= 0 (got {value!r})")
    return float(value)


def uptime(m: Mapping[str, Any], key: str, where: str, default: float) -> float | None:
    if key in m and m[key] is None:
        return None
    value = m.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        raise FleetError(f"fleet: {where}.{key} must be a percentage 0..100 (got {value!r})")
    return float(value)


def price(m: Mapping[str, Any], key: str, where: str, default: str) -> str:
    value = m.get(key, default)
    try:
        ok = isinstance(value, str) and float(value) >= 0
    except ValueError:
        ok = False
    if not ok:
        raise FleetError(f"fleet: {where}.{key} must be a decimal string of USD per token (got {value!r})")
    return str(value)


def percentiles(m: Mapping[str, Any], key: str, where: str) -> Percentiles | None:
    value = m.get(key)
    if value is None:
        return None
    if (
        not isinstance(value, Mapping)
        or set(value) != {"p50", "p75", "p90", "p99"}
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value.values())
    ):
        raise FleetError(
            f"fleet: {where}.{key} must be a table with numbers p50, p75, p90, p99 (got {value!r})"
        )
    return Percentiles(*(float(value[k]) for k in ("p50", "p75", "p90", "p99")))
