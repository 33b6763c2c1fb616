"""The fleet file: which models the simulator serves, their endpoints, and what each endpoint does wrong.

Format documented in simulator/FLEET.md. `parse_fleet` validates a `[[models]]` mapping with the file's schema
(provider_canary/simulator/fleet_schema.py) into the records of provider_canary/simulator/fleet_records.py (re-exported
here) and raises `FleetError` with one line naming the key path and the bad value. A fleet file (listed models, or a
generated `[catalog]`) is read by provider_canary/simulator/fleet_file.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from provider_canary.simulator.fleet_records import (
    DEFAULT_FLEET_PATH,
    DEFAULT_SUPPORTED_PARAMETERS,
    QUANTIZATIONS,
    STATUSES,
    EndpointSpec,
    Fleet,
    ModelSpec,
    Percentiles,
)
from provider_canary.simulator.fleet_schema import FleetFile
from tasks.config.schema_lines import Loc, dotted, first_line, model_at
from tasks.errors import FleetError

__all__ = ["DEFAULT_FLEET_PATH", "DEFAULT_SUPPORTED_PARAMETERS", "QUANTIZATIONS", "STATUSES", "EndpointSpec", "Fleet",
           "ModelSpec", "Percentiles", "fleet_error", "parse_fleet"]


def parse_fleet(mapping: Mapping[str, Any]) -> Fleet:
    """Validate a parsed fleet mapping; FleetError names the first bad key and its value."""
    try:
        return Fleet(models=tuple(m.model() for m in FleetFile.model_validate(mapping).models))
    except ValidationError as exc:
        raise fleet_error(exc, mapping, FleetFile) from None


def fleet_error(exc: ValidationError, raw: Any, model: type[BaseModel]) -> FleetError:
    """The first error of a fleet file as its one line (`fleet: <where> <why>`)."""
    def unknown(table: Loc, key: str) -> str:
        allowed = ", ".join(sorted(model_at(model, table).model_fields))
        return f"{dotted(table) or 'fleet'}: unknown key {key!r} (allowed: {allowed})"

    return FleetError(f"fleet: {first_line(exc, raw, model, unknown, sorted_unknown=False)}")
