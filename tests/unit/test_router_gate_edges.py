"""The router's gate and tier rules at their edges (provider_canary/router/stream.py, provider_canary/router/tiers.py):
what a read error, a timeout and a failover say, the error chunk's stamp, the upstream's own error before a read error,
an ignore list that is no list, a provider slug with several parts, and a cooldown that ends exactly now."""

from __future__ import annotations

import json
from types import MappingProxyType

import pytest

from provider_canary.router import stream as g
from provider_canary.router.tiers import pinned_all_excluded, prune

pytestmark = pytest.mark.unit


def data(doc: dict[str, object]) -> bytes:
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


CONTENT = data({"choices": [{"index": 0, "delta": {"content": "Hi"}}]})


def committed() -> g.Gate:
    gate, _ = g.feed(g.Gate(), CONTENT)
    assert gate.phase is g.Phase.COMMITTED and gate.created is None
    return gate


def test_what_a_failover_before_the_commit_says() -> None:
    _, [failover] = g.broken(g.Gate(), "connection reset by peer")
    assert (str(failover.reason), failover.detail) == ("stream_error_before_commit", "connection reset by peer")
    _, [timeout] = g.timed_out(g.Gate())
    assert (str(timeout.reason), timeout.detail) == ("first_chunk_timeout", "no content chunk within the budget")


@pytest.mark.parametrize(("end", "reason"), [(g.broken, "stream_error_after_commit"),
                                              (g.timed_out, "idle_timeout_after_commit")])
def test_the_error_chunk_after_the_commit_is_stamped_with_the_time_given(end: object, reason: str) -> None:
    for now_s, kw in ((1_700_000_000, {"now_s": 1_700_000_000}), (0, {})):  # the default: 0
        args = (committed(), "reset") if end is g.broken else (committed(),)
        _, [abort] = end(*args, **kw)  # type: ignore[operator]
        assert isinstance(abort, g.Abort) and str(abort.reason) == reason
        chunk = json.loads(abort.data[len(b"data: "):])
        assert (chunk["id"], chunk["created"]) == (f"gen-router-{now_s}", now_s)


def test_a_read_error_after_the_upstreams_own_error_adds_no_second_error_chunk() -> None:
    gate, _ = g.feed(committed(), data({"error": {"code": 502, "message": "gone"}}))
    assert gate.errored
    assert g.broken(gate, "reset")[1] == [g.Finish()]


def test_an_ignore_that_is_no_list_excludes_nothing() -> None:
    assert not pinned_all_excluded({"only": ["a"], "ignore": "a"})
    assert pinned_all_excluded({"only": ["a"], "ignore": ["a"]})


def test_a_provider_slug_is_excluded_by_its_first_part() -> None:
    assert pinned_all_excluded({"only": ["deepinfra/fp8/turbo"], "ignore": ["deepinfra"]})
    assert not pinned_all_excluded({"only": ["deepinfra/fp8/turbo"], "ignore": ["deepinfra/fp8"]})


def test_a_cooldown_that_ends_exactly_now_is_over() -> None:
    cooling = MappingProxyType({"a": 100.0, "b": 200.0})
    assert dict(prune(cooling, 100.0)) == {"b": 200.0}
    assert prune(cooling, 99.0) is cooling  # nothing expired: the same mapping
