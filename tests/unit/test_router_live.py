"""The router's live counts (provider_canary/router/live.py): outcome per failover/abort reason, the tier's endpoint,
the provider an answer or error names, per-minute aggregation, and how a committed stream ended."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from provider_canary.router import stream as gate_fsm
from provider_canary.router.live import aggregate, count_from_json, count_to_json, pinned_tag, provider_in, stream_end
from provider_canary.router.reasons import FailoverReason
from provider_canary.router.routes import Tier
from provider_canary.router.stream import native_error
from tasks.core.classify import names_upstream_failure
from tasks.core.live_records import LiveCount, LiveOutcome, LiveQuality

pytestmark = pytest.mark.unit


def stream_outcome(gate: gate_fsm.Gate, aborted: FailoverReason | None) -> LiveOutcome | None:
    ended = stream_end(gate, aborted)
    return ended.live_outcome if ended is not None else LiveOutcome.OK


def test_only_ok_and_429_are_not_failures() -> None:
    assert {o for o in LiveOutcome if not o.is_failure} == {LiveOutcome.OK, LiveOutcome.HTTP_429}
    assert {o for o in LiveOutcome if not o.is_counted} == {LiveOutcome.HTTP_429}


@pytest.mark.parametrize(("provider", "tag"), [
    ({"only": ["fireworks"], "allow_fallbacks": False}, "fireworks"),
    ({"order": ["deepinfra/fp8"]}, "deepinfra/fp8"),
    ({"order": ["a", "b"]}, None),
    ({}, None),
])
def test_pinned_tag(provider: dict[str, object], tag: str | None) -> None:
    assert pinned_tag(Tier("http://x", "m", provider=provider)) == tag


def test_provider_in_answers_errors_and_cut_bodies() -> None:
    assert provider_in(json.dumps({"id": "gen-1", "provider": "Fireworks", "choices": []})) == "Fireworks"
    relayed = {"error": {"message": "Provider returned error", "code": 429,
                         "metadata": {"raw": "rate-limited upstream", "provider_name": "Chutes"}}}
    assert provider_in(json.dumps(relayed).encode()) == "Chutes"
    assert provider_in(json.dumps(relayed)[:160]) == "Chutes"  # an error detail cut at 200 characters
    assert provider_in("<html>bad gateway</html>") is None


def test_aggregate_sums_one_minute_of_one_endpoint_and_outcome() -> None:
    t = datetime(2026, 12, 1, 12, 0, 5, tzinfo=UTC)
    rec = LiveCount(t, "m", "model:chat", 1, "a", None, LiveOutcome.OK)
    later = LiveCount(t.replace(second=50), "m", "model:chat", 1, "a", None, LiveOutcome.OK)
    other = LiveCount(t, "m", "model:chat", 1, "a", None, LiveOutcome.CUT_STREAM)
    out = aggregate([rec, later, other, rec])
    assert [(c.minute_at.second, c.outcome, c.requests) for c in out] == [
        (0, LiveOutcome.OK, 3), (0, LiveOutcome.CUT_STREAM, 1)]


def _feed(*chunks: dict[str, object]) -> gate_fsm.Gate:
    gate = gate_fsm.Gate()
    for chunk in chunks:
        gate, _ = gate_fsm.feed(gate, b"data: " + json.dumps(chunk).encode() + b"\n\n")
    return gate


def test_a_masked_upstream_failure_is_an_upstream_error_live() -> None:
    """OpenRouter reports a failed upstream hop as finish_reason stop + native_finish_reason network_error: before
    any content that is a failover with the upstream's word; after some content, the stream's end says it."""
    masked = {"id": "g", "provider": "Chutes", "choices": [
        {"index": 0, "delta": {"content": ""}, "finish_reason": "stop", "native_finish_reason": "network_error"}]}
    gate, actions = gate_fsm.feed(gate_fsm.Gate(), b"data: " + json.dumps(masked).encode() + b"\n\n")
    [failover] = [a for a in actions if isinstance(a, gate_fsm.FailOver)]
    assert str(failover.reason) == "native_network_error"
    assert failover.reason.live_outcome is LiveOutcome.UPSTREAM_ERROR
    assert failover.reason.upstream_word == "network_error"
    late = _feed({"id": "g", "provider": "Chutes", "choices": [{"index": 0, "delta": {"content": "Hi"}}]}, masked)
    ended = stream_end(late, None)
    assert late.native_error == "network_error" and ended is not None
    assert ended.live_outcome is LiveOutcome.UPSTREAM_ERROR and ended.upstream_word == "network_error"
    fine = _feed({"id": "g", "provider": "Chutes", "choices": [{"index": 0, "delta": {"content": "Hi"}}]},
                 {"id": "g", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop",
                                          "native_finish_reason": "stop"}]})
    assert stream_outcome(fine, None) is LiveOutcome.OK and fine.provider == "Chutes"
    closed, actions = gate_fsm.eof(late)  # it finished: the upstream's end, not a cut, and its word stands
    # (the [DONE] the upstream did not send is sent for it: the client's stream ends cleanly)
    assert actions == [gate_fsm.Send(b"data: [DONE]\n\n"), gate_fsm.Finish()]
    assert stream_outcome(closed, None) is LiveOutcome.UPSTREAM_ERROR
    started = _feed({"id": "g", "provider": "Chutes", "choices": [{"index": 0, "delta": {"content": "Hi"}}]})
    [cut] = gate_fsm.eof(started)[1]  # no finish, no [DONE]: cut midway, counted against the endpoint
    assert isinstance(cut, gate_fsm.Abort) and stream_outcome(started, cut.reason) is LiveOutcome.CUT_STREAM


CAPTURES = __import__("pathlib").Path(__file__).resolve().parents[1] / "fixtures" / "openrouter"
#: What live traffic makes of each real streamed capture (tests/fixtures/openrouter/index.json has the sources).
STREAMED = {
    "opencode-azure-text.sse": LiveOutcome.OK,
    "opencode-openai-tool-call.sse": LiveOutcome.OK,
    "opencode-gpt55-tool-call.sse": LiveOutcome.OK,
    "fantasy-glm46-reasoning-tool.sse": LiveOutcome.OK,
    "masked-network-error.sse": LiveOutcome.UPSTREAM_ERROR,  # finish stop + native network_error: a failover
    "midstream-502-atlascloud.sse": LiveOutcome.UPSTREAM_ERROR,  # an error chunk before any content: failover
}


@pytest.mark.parametrize(("name", "expected"), list(STREAMED.items()), ids=list(STREAMED))
def test_real_captured_streams_split_anywhere_give_their_live_outcome(name: str, expected: LiveOutcome) -> None:
    import random

    data = (CAPTURES / name).read_bytes()
    for seed in range(5):
        cuts = sorted(random.Random(seed).sample(range(1, len(data)), min(6, len(data) - 1)))
        gate, seen = gate_fsm.Gate(), []
        for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True):
            gate, actions = gate_fsm.feed(gate, data[a:b])
            seen += actions
        gate, actions = gate_fsm.eof(gate)
        seen += actions
        failover = next((x.reason for x in seen if isinstance(x, gate_fsm.FailOver)), None)
        aborted = next((x.reason for x in seen if isinstance(x, gate_fsm.Abort)), None)
        # before the commit the router fails over (the attempt's outcome is its reason's), after it the stream ends
        outcome = failover.live_outcome if failover else stream_outcome(gate, aborted)
        assert outcome is expected, (name, seed)


@pytest.mark.parametrize(("name", "provider"), [("relayed-429-stealth.json", "Stealth"),
                                                ("relayed-429-baseten.json", "BaseTen")])
def test_real_relayed_errors_name_their_provider(name: str, provider: str) -> None:
    assert provider_in((CAPTURES / name).read_bytes()) == provider


@pytest.mark.parametrize(
    ("native", "upstream"),
    [("network_error", True), ("upstream_unavailable", True), ("timeout", True), ("MALFORMED_FUNCTION_CALL", False),
     ("stop", False), ("completed", False), ("", False)],
)
def test_the_router_and_the_probe_read_a_native_finish_reason_alike(native: str, upstream: bool) -> None:
    """One rule (tasks/core/classify.py): what the probe judges `upstream_error` the router records as one."""
    chunk = {"choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop",
                          "native_finish_reason": native}]}
    assert (native_error(chunk) is not None) is upstream is names_upstream_failure(native)


def test_live_counts_survive_a_trip_to_disk_and_back() -> None:
    """What a busy database could not take at shutdown is kept as JSON lines (provider_canary/router/route_events.py
    Spill)."""
    t = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    counts = [LiveCount(t, "m", "model:chat", 1, "a", "A", LiveOutcome.UPSTREAM_ERROR, 3, reason="network_error"),
              LiveCount(t, "m", "model:chat", 2, None, None, LiveOutcome.QUALITY_FAIL, quality=LiveQuality.TOOLS,
                        reason="schema_violation")]
    assert [count_from_json(json.loads(json.dumps(count_to_json(c)))) for c in counts] == counts


def test_one_attempt_observer_feeds_the_live_counts_with_the_upstreams_word_and_the_judges_checks() -> None:
    """provider_canary/router/attempts.py: each stage counts once (or not at all), judged answers one row per class."""
    import provider_canary.router.reasons as r
    from provider_canary.router.answer import CheckResult
    from provider_canary.router.attempts import AttemptObserver, JudgedAnswer, Stage, TierAttempt
    from provider_canary.router.live import LiveRecorder
    from provider_canary.router.reasons import Cause
    from provider_canary.router.route_events import Batcher
    from provider_canary.router.routes import Route
    from tasks.runtime.clock import StepClock

    class Keep:
        def __init__(self) -> None:
            self.rows: list[LiveCount] = []

        def write(self, records: list[LiveCount]) -> None:
            self.rows += records

    sink = Keep()
    batcher: Batcher[LiveCount] = Batcher(sink, "test")
    route = Route("model:chat", (Tier("http://a", "m", provider={"only": ["alpha"]}),), model="chat")
    observer = AttemptObserver([LiveRecorder(StepClock(datetime(2026, 12, 1, 12, 0, 30, tzinfo=UTC)), [batcher])])
    for attempt in (
        TierAttempt(Stage.FAILED_OVER, route, 1, reason=r.native("network_error"), provider="Alpha"),
        TierAttempt(Stage.SKIPPED, route, 1, reason=r.fixed(Cause.PINNED_EXCLUDED)),
        TierAttempt(Stage.FAILED_OVER, route, 1, reason=r.fixed(Cause.NO_ENDPOINTS)),
        TierAttempt(Stage.ANSWERED, route, 1, status=400),  # the request's own problem
        TierAttempt(Stage.COMMITTED, route, 1, latency_ms=80.0),  # counted when it ends
        TierAttempt(Stage.ENDED, route, 1, provider="Alpha"),
        TierAttempt(Stage.HANDED_LATER, route, 1, status=200),  # counted when it failed over
    ):
        observer.attempt(attempt)
    observer.judged(JudgedAnswer(route, 1, "Alpha", (CheckResult(LiveQuality.EMPTY, "ok"),
                                                     CheckResult(LiveQuality.TOOLS, "unknown_tool"))))
    batcher.flush()
    assert [(c.tag, c.provider_name, c.outcome, c.quality, c.reason) for c in sink.rows] == [
        ("alpha", "Alpha", LiveOutcome.UPSTREAM_ERROR, None, "network_error"),
        ("alpha", "Alpha", LiveOutcome.OK, None, None),
        ("alpha", "Alpha", LiveOutcome.OK, LiveQuality.EMPTY, "ok"),
        ("alpha", "Alpha", LiveOutcome.QUALITY_FAIL, LiveQuality.TOOLS, "unknown_tool"),
    ]
