"""Reading a flow run a test scheduled on the session's Prefect API (then deleting it: nothing serves it)."""

from __future__ import annotations

import asyncio
from typing import Any


def take_scheduled_run(run_id: str) -> Any:
    """The flow run `run_id` as the API has it; deleted afterwards, since no worker serves test deployments."""
    from prefect import get_client

    async def read() -> Any:
        async with get_client() as client:
            run = await client.read_flow_run(run_id)
            await client.delete_flow_run(run_id)
            return run

    return asyncio.run(read())
