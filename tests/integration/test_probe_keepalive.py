"""A probe gives its connection back (tasks/probe/drain.py `drain`): after [DONE] the rest of the chunked body is read,
so the next probe on the worker's client reuses the connection instead of opening one (against OpenRouter: a TLS
handshake per probe). A body that goes on after [DONE] is cut after `DRAIN_S` as before, and the attempt's times
are the reply's, not the drain's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from tasks.config import CanaryConfig
from tasks.core.types import Attempt, Contract, Endpoint
from tasks.probe.attempt import probe_once_async
from tasks.probe.drain import DRAIN_S
from tasks.probe.sockets import new_async_client
from tasks.runtime.clock import SystemClock
from tests.support.keepalive_server import STAY_OPEN_S, KeepAliveServer, servers_both_ways

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ENDPOINT = Endpoint(model="acme/tiny-1", tag="fake", provider_name="Fake")  # the model KeepAliveServer names
CFG = CanaryConfig(connect_timeout_s=2.0, read_timeout_s=5.0, probe_budget_s=10.0)


@pytest.fixture
def servers() -> Iterator[dict[bool, KeepAliveServer]]:
    with servers_both_ways() as made:
        yield made


def probes(url: str, n: int) -> list[tuple[Attempt, float]]:
    async def run() -> list[tuple[Attempt, float]]:
        out = []
        async with new_async_client() as client:
            for i in range(n):
                t0 = time.monotonic()
                attempt = await probe_once_async(
                    client, base_url=url, api_key="sk-test", endpoint=ENDPOINT, contract=Contract.TTFT,
                    round_id="r-keep", attempt_no=i + 1, language=None, cfg=CFG, clock=SystemClock())
                out.append((attempt, time.monotonic() - t0))
        return out

    return asyncio.run(run())


def test_probes_in_a_row_share_one_connection(servers: dict[bool, KeepAliveServer]) -> None:
    done = probes(servers[False].url, 4)
    assert [(a.error_class, a.text, a.finish_reason) for a, _ in done] == [(None, "Hello there", "stop")] * 4
    assert servers[False].connections == 1


def test_a_body_that_goes_on_after_done_is_cut_and_its_connection_not_reused(
    servers: dict[bool, KeepAliveServer]
) -> None:
    done = probes(servers[True].url, 3)
    assert [(a.error_class, a.text) for a, _ in done] == [(None, "Hello there")] * 3
    for attempt, took_s in done:
        assert took_s < STAY_OPEN_S / 2  # the drain gave up after DRAIN_S, not when the body ended
        assert attempt.total_ms is not None and attempt.total_ms < took_s * 1000  # the reply's time, not the drain's
    assert servers[True].connections == 3
    assert DRAIN_S < STAY_OPEN_S / 2
