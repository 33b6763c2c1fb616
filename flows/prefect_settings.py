"""Prefect settings changed for this thread's code only (a `SettingsContext` over the current settings)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any


@contextmanager
def settings_changed(changes: Mapping[str, Mapping[str, Any]]) -> Iterator[None]:
    """Run the block with some settings fields changed, per section: `{"flows": {"heartbeat_frequency": None}}`.

    Contextvars-based, like Prefect's own settings: threads started inside do not see the change unless they
    copy the context (Prefect's engines do, for the runs started inside)."""
    from prefect.context import SettingsContext
    from prefect.settings import get_current_settings

    current = get_current_settings()
    update = {name: getattr(current, name).model_copy(update=dict(fields)) for name, fields in changes.items()}
    ctx = SettingsContext.get()
    assert ctx is not None
    with SettingsContext(profile=ctx.profile, settings=current.model_copy(update=update)):
        yield


#: A flow run started inside sends no heartbeats: its engine would join the heartbeat thread, which sleeps in
#: 1 s steps, when the run ends (0-1 s added to every run).
NO_HEARTBEATS: Mapping[str, Mapping[str, Any]] = {"flows": {"heartbeat_frequency": None}}
