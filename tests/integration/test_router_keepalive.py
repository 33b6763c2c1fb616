"""The router gives its upstream connection back after a stream's [DONE] (provider_canary/router/upstream.py
`relay`, with tasks/probe/drain.py `drain`): streamed requests in a row share one connection to the tier instead of
opening one each (against OpenRouter: a TLS handshake per request). A tier whose body goes on after [DONE] is cut
after `DRAIN_S`: the client's stream still ends at once, and that connection is not reused. Judged or not."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import start_router
from tasks.probe.drain import DRAIN_S
from tests.support.keepalive_server import MODEL, STAY_OPEN_S, KeepAliveServer, servers_both_ways

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@pytest.fixture
def servers() -> Iterator[dict[bool, KeepAliveServer]]:
    with servers_both_ways() as made:
        yield made


def streams(tmp_path: Path, url: str, n: int, judge: bool) -> list[tuple[str, float]]:
    """`n` streamed requests in a row through a router whose one tier is `url`: (text relayed, seconds each)."""
    raw = {"router": {"judge": judge, "events_path": str(tmp_path / "e.jsonl"),
                      "publish_dir": str(tmp_path / "published")},
           "route": [{"model": "chat", "tier": [{"base_url": url, "model": MODEL}]}]}
    out = []
    with start_router(parse_routes(raw), env={}) as r, httpx.Client(timeout=30) as client:
        for _ in range(n):
            started = time.monotonic()
            body = {"model": "chat", "messages": [{"role": "user", "content": "Hi"}], "stream": True}
            with client.stream("POST", f"{r.base_url}/chat/completions", json=body) as response:
                text = response.read().decode()
            out.append((text, time.monotonic() - started))
    return out


@pytest.mark.parametrize("judge", [True, False])
def test_streams_in_a_row_share_one_upstream_connection(
    tmp_path: Path, servers: dict[bool, KeepAliveServer], judge: bool
) -> None:
    done = streams(tmp_path, servers[False].url, 4, judge)
    assert all("Hello there" in text and text.rstrip().endswith("data: [DONE]") for text, _ in done)
    assert servers[False].connections == 1


def test_a_body_that_goes_on_after_done_is_cut_and_its_connection_not_reused(
    tmp_path: Path, servers: dict[bool, KeepAliveServer]
) -> None:
    done = streams(tmp_path, servers[True].url, 3, judge=True)
    assert all("Hello there" in text for text, _ in done)
    assert all(took_s < STAY_OPEN_S / 2 for _, took_s in done)  # the drain gave up after DRAIN_S
    assert servers[True].connections == 3
    assert DRAIN_S < STAY_OPEN_S / 2


@pytest.mark.parametrize("reset", [False, True])
def test_a_kept_connection_the_tier_closes_under_a_request_costs_the_client_nothing(tmp_path: Path,
                                                                                    reset: bool) -> None:
    """The tier closes each kept connection as the next request comes in (its keep-alive timeout meeting it): the
    router sends that request again on a new connection (tasks/probe/fair_pool.py), and with one tier the client
    would otherwise get an error."""
    tier = KeepAliveServer(stay_open=False, answers=1, reset=reset)
    try:
        done = streams(tmp_path, tier.url, 3, judge=True)
    finally:
        tier.close()
    assert all("Hello there" in text and text.rstrip().endswith("data: [DONE]") for text, _ in done)
    assert tier.connections == 3
