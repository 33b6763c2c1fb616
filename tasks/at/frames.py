"""DataFrame cells to plain values for `canary at` (UTC datetimes, strings, JSON-ready records)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pandas as pd


def jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, pd.Timestamp):
        return None if pd.isna(obj) else obj.to_pydatetime().isoformat()
    if isinstance(obj, datetime):
        return obj.isoformat()
    if obj is None or isinstance(obj, str | int | float | bool):
        return None if isinstance(obj, float) and pd.isna(obj) else obj
    return str(obj)


def cell_ts(value: Any) -> datetime | None:
    if value is None or value is pd.NaT or (not isinstance(value, datetime) and pd.isna(value)):
        return None
    ts = pd.Timestamp(value)
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return ts.to_pydatetime()


def cell_text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def frame_records(frame: pd.DataFrame | None, columns: Sequence[str]) -> tuple[dict[str, Any], ...]:
    if frame is None or frame.empty:
        return ()
    keep = [c for c in columns if c in frame.columns]
    return tuple(
        {str(k): (cell_ts(v) if isinstance(v, pd.Timestamp | datetime) else jsonable(v)) for k, v in row.items()}
        for row in frame[keep].to_dict("records")
    )
