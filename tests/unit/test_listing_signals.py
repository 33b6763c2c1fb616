"""OpenRouter's per-endpoint figures from the endpoints listing (tasks/probe/discover.py), as [CAP-K3] shows them."""

from __future__ import annotations

import pytest

from tasks.probe.discover import parse_endpoints

pytestmark = pytest.mark.unit

# docs/openrouter-api.md 1a: [CAP-K3], a real /endpoints item (trimmed to the fields read here).
CAP_K3 = {"data": {"id": "moonshotai/kimi-k3", "endpoints": [
    {"provider_name": "Fireworks", "tag": "fireworks", "status": 0, "uptime_last_30m": 99.82397465234993,
     "uptime_last_5m": 99.822695035461, "uptime_last_1d": 99.67730332459791,
     "latency_last_30m": {"p50": 2687, "p75": 4162.25, "p90": 5954, "p99": 30351.360000000015},
     "throughput_last_30m": {"p50": 35, "p75": 42, "p90": 47, "p99": 58}},
    {"provider_name": "Morph", "tag": "morph/fast", "status": -2, "uptime_last_30m": 82.0, "uptime_last_5m": None,
     "uptime_last_1d": 97.1, "latency_last_30m": None, "throughput_last_30m": None},
    {"provider_name": "Odd", "tag": "odd", "uptime_last_5m": 250, "uptime_last_1d": "n/a",
     "latency_last_30m": {"p50": -1, "p90": "12"}},
]}}


def test_the_listing_signals_are_kept_with_their_units() -> None:
    fireworks, morph, odd = sorted(parse_endpoints("moonshotai/kimi-k3", CAP_K3), key=lambda e: e.tag)
    assert (fireworks.status, fireworks.uptime_last_5m, fireworks.uptime_last_30m, fireworks.uptime_last_1d) == (
        0, 99.822695035461, 99.82397465234993, 99.67730332459791)
    assert (fireworks.latency_p50_ms, fireworks.latency_p75_ms, fireworks.latency_p90_ms) == (2687, 4162.25, 5954)
    assert fireworks.latency_p99_ms == pytest.approx(30351.36)
    assert (fireworks.throughput_p50, fireworks.throughput_p99) == (35, 58)
    # nulls (too little data, or an unauthenticated listing) stay None
    assert (morph.status, morph.uptime_last_5m, morph.uptime_last_30m, morph.latency_p50_ms) == (-2, None, 82.0, None)
    # out of range or of the wrong type: not a figure
    assert (odd.uptime_last_5m, odd.uptime_last_1d, odd.latency_p50_ms, odd.latency_p90_ms) == (None, None, None, 12.0)
