"""Reading a flow run a test scheduled on the session's Prefect API (then deleting it: nothing serves it), and the
events a Prefect API holds."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import httpx


def take_scheduled_run(run_id: str) -> Any:
    """The flow run `run_id` as the API has it; deleted afterwards, since no worker serves test deployments."""
    from prefect import get_client

    async def read() -> Any:
        async with get_client() as client:
            run = await client.read_flow_run(run_id)
            await client.delete_flow_run(run_id)
            return run

    return asyncio.run(read())


def read_route_events(api: str, name: str, since: datetime) -> list[dict[str, Any]]:
    """The events named `name` the Prefect API at `api` received in the two hours from `since`."""
    body = {"filter": {"event": {"name": [name]},
                       "occurred": {"since": since.isoformat(), "until": (since + timedelta(hours=2)).isoformat()}},
            "limit": 50}
    response = httpx.post(f"{api}/events/filter", json=body, timeout=10)
    response.raise_for_status()
    return list(response.json()["events"])
