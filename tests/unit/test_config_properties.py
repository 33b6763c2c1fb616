"""Property: a generated config is either rejected with a ConfigError naming a key, or accepted, and then an
attempt against a stalled or slow loopback upstream ends within `probe_budget_s` plus a small slack.

Budgets are small (<= 2 s) and examples few: every accepted example costs up to one budget of wall time.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator
from dataclasses import fields
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from tasks.config import CanaryConfig
from tasks.config.loading import config_from_mapping
from tasks.core.types import Contract, Endpoint
from tasks.errors import ConfigError
from tasks.probe.attempt import probe_once
from tasks.runtime.clock import SystemClock
from tests.support.fake_upstream import FakeUpstream, Script

pytestmark = pytest.mark.integration
KEYS = {f.name for f in fields(CanaryConfig)}
#: Wall time allowed past the budget: the watchdog's timer, a thread switch and closing the socket.
SLACK_S = 1.0
MODELS = {
    "acme/stall": Script("stall_after_headers", delay_s=30),
    "acme/slow": Script("slow_first", delay_s=30),
}

bad_numbers = st.sampled_from([0.0, -1.0, math.nan, math.inf, -math.inf, 1e9, 5.0])
seconds = st.one_of(st.floats(0.05, 2.0), bad_numbers)


@st.composite
def raw_configs(draw: st.DrawFn) -> dict[str, Any]:
    raw: dict[str, Any] = {"probe_budget_s": draw(st.one_of(st.floats(0.2, 1.0), bad_numbers))}
    raw["ttft_s"] = draw(st.one_of(st.floats(0.05, 0.19), seconds))
    for key in ("connect_timeout_s", "read_timeout_s"):
        if draw(st.booleans()):
            raw[key] = draw(seconds)
    if draw(st.booleans()):
        raw["ladder"] = draw(st.lists(st.sampled_from(["0s", "10m", "30m", "1h", "1d", -1, 0.5]), min_size=1))
    return raw


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(MODELS) as up:
        yield up


@pytest.mark.timing  # asserts on wall time: run alone (scripts/test)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=raw_configs(), model=st.sampled_from(sorted(MODELS)))
@example(raw={"probe_budget_s": 1.0, "ttft_s": 0.5}, model="acme/stall")  # accepted: timeouts follow budget
@example(raw={"probe_budget_s": 1.5, "ttft_s": 0.3, "read_timeout_s": 1.5}, model="acme/slow")
@example(raw={"probe_budget_s": math.inf, "ttft_s": 0.5}, model="acme/stall")  # was a round without end
@example(raw={"probe_budget_s": math.nan, "ttft_s": 0.5}, model="acme/slow")
def test_a_config_is_rejected_by_name_or_its_attempts_end_within_budget(
    upstream: FakeUpstream, raw: dict[str, Any], model: str
) -> None:
    try:
        cfg = config_from_mapping(raw)
    except ConfigError as exc:
        m = re.match(r"config: (\w+)", str(exc))
        assert m and m.group(1) in KEYS, str(exc)
        event(f"rejected: {m.group(1)}")
        return
    assert all(math.isfinite(getattr(cfg, k)) for k in ("ttft_s", "probe_budget_s", "read_timeout_s"))
    if cfg.probe_budget_s > 2.0:  # a valid but long budget (5 s): too slow to probe in a unit test
        event("accepted: not probed")
        return
    event("accepted: probed")
    with httpx.Client() as client:
        t0 = time.monotonic()
        attempt = probe_once(
            client, base_url=upstream.base_url, api_key="k", endpoint=Endpoint(model, "fake", "Fake"),
            contract=Contract.TTFT, round_id="r", attempt_no=1, language=None, cfg=cfg, clock=SystemClock(),
        )
        elapsed = time.monotonic() - t0
    assert elapsed <= cfg.probe_budget_s + SLACK_S, (raw, elapsed, attempt.error_class)
    assert attempt.error_class is not None  # a stalled or slow upstream never looks healthy
