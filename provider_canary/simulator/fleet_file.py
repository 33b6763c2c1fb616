"""A fleet file, read: listed `[[models]]` (provider_canary/simulator/fleet.py) or a generated `[catalog]`
(provider_canary/simulator/catalog.py).

Format documented in simulator/FLEET.md. Either way a bad value is one `FleetError` line naming its key path.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from provider_canary.simulator.catalog import CatalogSpec, fleet_from_spec
from provider_canary.simulator.fleet import DEFAULT_FLEET_PATH, Fleet, fleet_error, parse_fleet
from provider_canary.simulator.fleet_schema import CatalogFile
from tasks.errors import FleetError

__all__ = ["DEFAULT_FLEET_PATH", "load_fleet", "read_fleet"]


def load_fleet(path: str | Path) -> Fleet:
    """Read and validate a fleet TOML file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise FleetError(f"fleet: cannot read {p}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FleetError(f"fleet: {p} is not valid TOML: {exc}") from None
    fleet = read_fleet(data)
    return Fleet(models=fleet.models, source=str(p))


def read_fleet(mapping: Mapping[str, Any]) -> Fleet:
    """A parsed fleet file or spec: a `catalog` table (a generated catalog) or listed `models`."""
    if "catalog" in mapping:
        try:
            table = CatalogFile.model_validate(mapping).catalog
        except ValidationError as exc:
            raise fleet_error(exc, mapping, CatalogFile) from None
        return fleet_from_spec(CatalogSpec(**table.given(mapping["catalog"])))
    return parse_fleet(mapping)
