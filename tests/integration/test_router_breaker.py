"""The circuit breaker per tier through the real router (issue 40 item 2): a tier that fails `allowed_fails` times
in a row is skipped, one trial request after `cooldown_s` closes it or opens it again; client-caused outcomes never
count; the failures that opened it, and the skips, stay the endpoint's live evidence. The router's clock is shifted
by hand to pass a cooldown, so nothing here waits for one."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from provider_canary.router.route_events import read_route_events
from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import RunningRouter, start_router
from tasks.runtime.clock import SystemClock
from tests.support.fake_upstream import FakeUpstream, Script
from tests.support.read_db import query

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

MESSAGES = [{"role": "user", "content": "Tell me about the harbour."}]
STALL = Script("stall_after_headers", delay_s=10)


class ShiftedClock(SystemClock):
    """The system clock, whose monotonic time a test moves forward (the breaker reads only that)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.offset


@contextmanager
def router_for(up: FakeUpstream, tmp: Path, clock: ShiftedClock, **settings: Any) -> Iterator[RunningRouter]:
    raw = {"router": {"first_chunk_budget_s": 5.0, "flush_interval_s": 0.05, "cooldown_s": 30,
                      "events_path": str(tmp / "events.jsonl"), "savings_path": str(tmp / "savings.jsonl"),
                      "publish_dir": str(tmp / "published"), **settings},
           "route": [{"model": "chat", "tier": [  # tier 1 stalls out fast; tier 2 has time to answer at any load
               {"base_url": up.base_url, "model": "t1", "provider": {"only": ["t1"]}, "first_chunk_budget_s": 0.3},
               {"base_url": up.base_url, "model": "t2", "provider": {"only": ["t2"]}}]}]}
    with start_router(parse_routes(raw), env={}, clock=clock) as running:
        yield running


def ask(r: RunningRouter, stream: bool = True) -> str:
    c = openai.OpenAI(base_url=r.base_url, api_key="client-key", max_retries=0, timeout=20)
    if not stream:
        return c.chat.completions.create(model="chat", messages=MESSAGES).choices[0].message.content or ""  # type: ignore[arg-type]
    chunks = c.chat.completions.create(model="chat", messages=MESSAGES, stream=True)  # type: ignore[arg-type]
    return "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)


def tier_open(r: RunningRouter) -> float:
    text = httpx.get(r.base_url.removesuffix("/v1") + "/metrics").text
    line = next(ln for ln in text.splitlines() if ln.startswith('canary_router_tier_open{route="model:chat",tier="1"}'))
    return float(line.rsplit(" ", 1)[1])


def circuits(r: RunningRouter) -> list[dict[str, Any]]:
    return httpx.get(r.base_url.removesuffix("/v1") + "/healthz").json()["circuits"]  # type: ignore[no-any-return]


def test_a_failing_tier_is_skipped_then_one_trial_closes_it(tmp_path: Path) -> None:
    clock = ShiftedClock()
    with FakeUpstream({"t1": STALL, "t2": Script("ok", text="from two")}) as up:
        with router_for(up, tmp_path, clock, events_db=str(tmp_path / "canary.duckdb")) as r:
            assert [ask(r) for _ in range(3)] == ["from two"] * 3
            assert len(up.for_model("t1")) == 3 and tier_open(r) == 1.0
            assert circuits(r)[0] | {"open_for_s": 0} == {"route": "model:chat", "tier": 1, "state": "open",
                                                          "fails": 3, "opens": 1, "open_for_s": 0,
                                                          "last_reason": "first_chunk_timeout"}
            assert [ask(r) for _ in range(4)] == ["from two"] * 4
            assert len(up.for_model("t1")) == 3  # skipped: no request sent, no first-chunk budget paid
            clock.offset += 30  # the cooldown has passed: the next request is the trial
            up.scripts["t1"] = Script("ok", text="from one")
            assert ask(r) == "from one"
            assert tier_open(r) == 0.0 and circuits(r) == []
    assert [e.reason for e in read_route_events(tmp_path / "events.jsonl") if e.tier == 1] == \
        ["first_chunk_timeout"] * 3 + ["circuit_opened", "circuit_closed"]
    rows = query(tmp_path / "canary.duckdb", "SELECT tier, outcome, reason, sum(requests)::INT FROM live_requests "
                                             "WHERE quality IS NULL GROUP BY ALL")
    # what opened it is live evidence, and so is every request that skipped it: never hidden from the canary
    assert set(rows) == {(1, "first_chunk_timeout", None, 3), (1, "first_chunk_timeout", "circuit_open", 4),
                         (1, "ok", None, 1), (2, "ok", None, 7)}


def test_a_failed_trial_opens_it_again_for_twice_as_long(tmp_path: Path) -> None:
    clock = ShiftedClock()
    with FakeUpstream({"t1": Script("http_error", status=502), "t2": Script("ok", text="from two")}) as up:
        with router_for(up, tmp_path, clock) as r:
            assert [ask(r, stream=False) for _ in range(3)] == ["from two"] * 3
            clock.offset += 30
            assert ask(r, stream=False) == "from two"  # the trial failed
            assert len(up.for_model("t1")) == 4
            state = circuits(r)[0]
            assert state["state"] == "open" and state["opens"] == 2 and 59 < state["open_for_s"] <= 60
            clock.offset += 30
            assert ask(r, stream=False) == "from two" and len(up.for_model("t1")) == 4  # still open
    opened = [e.reason for e in read_route_events(tmp_path / "events.jsonl")].count("circuit_opened")
    assert opened == 2


@pytest.mark.parametrize("script", [Script("http_error", status=400), Script("http_error", status=429)],
                         ids=["client-error", "rate-limited"])
def test_client_caused_outcomes_and_rate_limits_never_open_it(tmp_path: Path, script: Script) -> None:
    clock = ShiftedClock()
    with FakeUpstream({"t1": script, "t2": Script("ok", text="from two")}) as up:
        with router_for(up, tmp_path, clock, max_cooldown_s=0) as r:  # no Retry-After cooldown either
            for _ in range(5):
                try:
                    ask(r, stream=False)
                except openai.BadRequestError:
                    pass
            assert len(up.for_model("t1")) == 5 and circuits(r) == [] and tier_open(r) == 0.0


def test_every_tier_open_is_the_routers_503_with_a_retry_after(tmp_path: Path) -> None:
    clock = ShiftedClock()
    with FakeUpstream({"t1": Script("http_error", status=503), "t2": Script("http_error", status=500)}) as up:
        with router_for(up, tmp_path, clock, cooldown_s=45) as r:
            for _ in range(3):
                with pytest.raises(openai.InternalServerError):
                    ask(r, stream=False)
            with pytest.raises(openai.InternalServerError) as info:
                ask(r, stream=False)
        assert len(up.requests) == 6  # the fourth request asked no one
    assert info.value.response.headers["retry-after"] == "45"
    assert "tier 1: circuit_open, tier 2: circuit_open" in info.value.message


def test_allowed_fails_zero_turns_the_breaker_off(tmp_path: Path) -> None:
    clock = ShiftedClock()
    with FakeUpstream({"t1": Script("http_error", status=503), "t2": Script("ok", text="from two")}) as up:
        with router_for(up, tmp_path, clock, allowed_fails=0) as r:
            assert [ask(r, stream=False) for _ in range(5)] == ["from two"] * 5
            assert len(up.for_model("t1")) == 5 and circuits(r) == []
