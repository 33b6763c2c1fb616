"""A `canary at` report from a store connection: the rows (tasks/store/at_inputs.py), then the pure build."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tasks.at.records import Report
from tasks.at.report import build_report
from tasks.errors import ConfigError
from tasks.store.at_inputs import fetch_report_inputs, models_with_rounds


def report_from_connection(
    con: Any, model: str, t: datetime, window: timedelta, builtin: list[Any] | None = None
) -> Report:
    """Fetch and build in one call (the CLI and the notebooks)."""
    known = models_with_rounds(con)
    if model not in known:
        raise ConfigError(
            f"at: no rounds of {model!r} in the database (models: {', '.join(known) or 'none'})"
        )
    inputs = fetch_report_inputs(con, model, t - window, t + window)
    return build_report(model, t, window, builtin=builtin or [], **inputs)
