"""Suspicion's live quality signal (tasks/core/suspicion.py, tallied by tasks/core/live_tally.py): the router's
judged answers per endpoint and class against the peers, table cases and Hypothesis properties; and the
confirmation round a quality suspicion asks for.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.core.contracts import probed
from tasks.core.live_records import LiveCount, LiveOutcome, LiveQuality
from tasks.core.policy import PolicyConfig, RoundInput, decide
from tasks.core.suspicion import (
    CLEARED_RATE_KEEPS,
    ClearedRate,
    Signal,
    Suspicion,
    SuspicionRules,
    confirmation_request,
)
from tasks.core.types import Endpoint, EndpointState, Mode, RoundStatus
from tests.support.suspicion_cases import EPS, NOW, STATES, SUSPEND, M, count, run

pytestmark = pytest.mark.unit


# -- live quality: the router's judged answers, per endpoint and class, against the peers ---------------------
Q = LiveQuality
PEERS = [Endpoint(M, t, t.title()) for t in ("alpha", "beta", "gamma", "delta")]


def judged(quality: LiveQuality, tag: str | None, ok: int, failed: int, reason: str = "schema_violation",
           provider: str | None = None, ago_s: float = 60) -> list[LiveCount]:
    """`ok` passed and `failed` failed judged answers of `quality` on `tag` (or the provider name only)."""
    at = (NOW - timedelta(seconds=ago_s)).replace(second=0)
    out = []
    if ok:
        out.append(LiveCount(at, M, "model:chat", 1, tag, provider, LiveOutcome.OK, ok, quality, "ok"))
    if failed:
        out.append(LiveCount(at, M, "model:chat", 1, tag, provider, LiveOutcome.QUALITY_FAIL, failed, quality,
                             reason))
    return out


def quality_run(counts: list[LiveCount], endpoints: list[Endpoint] = PEERS, **kw: object) -> list:  # type: ignore[type-arg]
    return [(s.tag, s.quality) for s in run(counts, endpoints, **kw)]


@pytest.mark.parametrize(("counts", "expected"), [
    pytest.param(judged(Q.TOOLS, "alpha", 2, 18) + judged(Q.TOOLS, "beta", 19, 1) + judged(Q.TOOLS, "gamma", 20, 0),
                 [("alpha", Q.TOOLS)], id="one-endpoint-breaks-its-tool-calls"),
    pytest.param([c for t in ("alpha", "beta", "gamma", "delta") for c in judged(Q.STRUCTURED, t, 0, 30)], [],
                 id="an-impossible-client-schema-fails-everywhere"),
    pytest.param([c for t in ("alpha", "beta", "gamma") for c in judged(Q.TOOLS, t, 12, 18)], [],
                 id="a-client-bug-fails-everywhere-alike"),
    pytest.param(judged(Q.TOOLS, "alpha", 0, 30) + [c for t in ("beta", "gamma") for c in judged(Q.TOOLS, t, 15, 15)],
                 [("alpha", Q.TOOLS)], id="clearly-above-a-noisy-client"),
    pytest.param(judged(Q.TOOLS, "alpha", 7, 23) + [c for t in ("beta", "gamma") for c in judged(Q.TOOLS, t, 15, 15)],
                 [], id="not-clearly-above-the-peers"),
    pytest.param(judged(Q.TOOLS, "alpha", 1, 18) + judged(Q.TOOLS, "beta", 20, 0), [], id="below-min-judged"),
    pytest.param(judged(Q.TOOLS, "alpha", 0, 25), [("alpha", Q.TOOLS)], id="no-peer-evidence-tier-1-alone"),
    pytest.param(judged(Q.TOOLS, "alpha", 0, 25) + judged(Q.TOOLS, "beta", 0, 10), [("alpha", Q.TOOLS)],
                 id="too-few-peer-answers-are-no-evidence"),  # 10 failing peers would excuse alpha: too few
    pytest.param(judged(Q.EMPTY, "alpha", 5, 20, "empty_reply") + judged(Q.ENCODING, "alpha", 5, 20, "mojibake")
                 + judged(Q.EMPTY, "beta", 30, 0) + judged(Q.ENCODING, "beta", 30, 0),
                 [("alpha", Q.EMPTY), ("alpha", Q.ENCODING)], id="two-classes-two-suspicions"),
    pytest.param(judged(Q.TOOLS, "alpha", 0, 30) + judged(Q.STRUCTURED, "beta", 0, 30), [("alpha", Q.TOOLS),
                 ("beta", Q.STRUCTURED)], id="peers-are-per-class"),
    pytest.param(judged(Q.TOOLS, "alpha", 0, 30, ago_s=400) + judged(Q.TOOLS, "beta", 30, 0), [],
                 id="outside-the-window"),
])
def test_live_quality(counts: list[LiveCount], expected: list[tuple[str, LiveQuality]]) -> None:
    assert quality_run(counts) == expected


def test_a_provider_name_is_never_its_own_peer() -> None:
    """Counts known only by DeepInfra's name stand for both of its tags: they are evidence for each, never the
    peers of either (else a fault of DeepInfra's would hide behind itself)."""
    counts = judged(Q.TOOLS, None, 0, 30, provider="DeepInfra") + judged(Q.TOOLS, "alpha", 30, 0)
    assert quality_run(counts, EPS) == [("deepinfra/fp8", Q.TOOLS), ("deepinfra/turbo", Q.TOOLS)]


def test_the_quality_evidence_names_the_class_the_counts_and_the_peers() -> None:
    [s] = run(judged(Q.TOOLS, "alpha", 2, 15) + judged(Q.TOOLS, "alpha", 0, 3, "bad_json_args")
              + judged(Q.TOOLS, "beta", 19, 1) + judged(Q.TOOLS, "gamma", 20, 0), PEERS)
    assert (s.signal, s.quality, s.requests, s.failures, s.failure_rate, s.reference_rate) == (
        Signal.LIVE_QUALITY, Q.TOOLS, 20, 18, 0.9, 0.025)
    assert s.evidence == ("live tools answers failed 18/20 (90%) >= suspect_failure_rate 50% and >= 2% + "
                          "suspect_peer_margin 0.3 (the peers' 2% (1/40 on 2 endpoints)) in 300 s "
                          "(bad_json_args 3, schema_violation 15)")
    assert s.suspicion_id == f"{M}|alpha|live_quality:tools|{NOW.isoformat()}"
    [alone] = run(judged(Q.TOOLS, "alpha", 0, 25), PEERS)
    assert "no peer evidence (0 judged tools answers elsewhere < 20)" in alone.evidence


def test_a_rate_the_probes_cleared_stands_in_for_missing_peers() -> None:
    """Tier 1 takes all the traffic and a client's schema fails on it: one suspicion, the probes clear it;
    from then on only a rate clearly above the cleared one suspects that endpoint and class again, for a day."""
    cleared = {("alpha", Q.TOOLS): ClearedRate(NOW - timedelta(hours=1), 0.6)}
    client_bug = judged(Q.TOOLS, "alpha", 10, 15)  # 60 %
    assert quality_run(client_bug) == [("alpha", Q.TOOLS)]
    assert quality_run(client_bug, cleared=cleared) == []
    assert quality_run(judged(Q.TOOLS, "alpha", 1, 24), cleared=cleared) == [("alpha", Q.TOOLS)]  # 96 % >= 90 %
    assert quality_run(judged(Q.STRUCTURED, "alpha", 10, 15), cleared=cleared) == [("alpha", Q.STRUCTURED)]
    a_day_ago = {("alpha", Q.TOOLS): ClearedRate(NOW - CLEARED_RATE_KEEPS, 0.6)}
    assert quality_run(client_bug, cleared=a_day_ago) == [("alpha", Q.TOOLS)]
    impossible = {("alpha", Q.TOOLS): ClearedRate(NOW - timedelta(hours=1), 1.0)}
    assert quality_run(judged(Q.TOOLS, "alpha", 0, 100), cleared=impossible) == []


def test_live_attempts_win_over_quality_and_quality_over_the_uptime() -> None:
    dipping = [Endpoint(M, "alpha", "Alpha", uptime_last_5m=40.0, uptime_last_1d=99.0), *PEERS[1:]]
    bad_tools = judged(Q.TOOLS, "alpha", 0, 30)
    assert [s.signal for s in run(bad_tools + [count(LiveOutcome.CUT_STREAM, 30)], dipping)] == [
        Signal.LIVE_FAILURE_RATE]
    assert [s.signal for s in run(bad_tools, dipping)] == [Signal.LIVE_QUALITY]
    assert [s.signal for s in run([], dipping)] == [Signal.UPTIME_DROP]


@pytest.mark.parametrize(("quality", "contracts"), [
    (Q.TOOLS, ("tools",)), (Q.STRUCTURED, ("structured",)), (Q.EMPTY, ("refusal",)),
    (Q.ENCODING, ("ttft", "refusal", "language")),  # language, and the free-text replies `opening` reads
])
def test_a_quality_confirmation_probes_the_contracts_of_its_class(quality: LiveQuality,
                                                                  contracts: tuple[str, ...]) -> None:
    s = Suspicion(M, "alpha", Signal.LIVE_QUALITY, NOW, "e", quality=quality)
    request = confirmation_request(M, [s], ["alpha", "beta", "ctl"], ["ctl"], NOW)
    assert request.contracts["alpha"] == contracts
    # the refusal controls come along exactly when refusal is probed (tasks/core/judge.py rule 2)
    assert ("ctl" in request.contracts) is ("refusal" in contracts)
    assert request.due == NOW and request.confirms == "suspicion:alpha@2026-12-01T12:00:00Z"


def test_a_confirmation_probes_the_union_of_what_an_endpoints_suspicions_ask() -> None:
    found = [Suspicion(M, "alpha", Signal.LIVE_QUALITY, NOW, "e", quality=Q.TOOLS),
             Suspicion(M, "alpha", Signal.LIVE_QUALITY, NOW, "e", quality=Q.STRUCTURED),
             Suspicion(M, "beta", Signal.UPTIME_DROP, NOW, "e")]
    request = confirmation_request(M, found, ["alpha", "beta"], [], NOW)
    assert dict(request.contracts) == {"alpha": ("structured", "tools"), "beta": probed()}
    assert request.confirms.startswith("suspicion:alpha+beta@")


CLASSES = st.sampled_from(list(LiveQuality))
TAGS = ("alpha", "beta", "gamma", "delta")
#: per endpoint: (passed, failed) judged answers of one class
SPLITS = st.tuples(st.integers(0, 60), st.integers(0, 60))


@settings(max_examples=300, deadline=None)
@given(CLASSES, st.lists(SPLITS, min_size=4, max_size=4), st.integers(1, 60), st.floats(0.01, 1.0),
       st.floats(0.0, 1.0))
def test_quality_below_min_never_triggers(quality: LiveQuality, splits: list[tuple[int, int]], minimum: int,
                                          rate: float, margin: float) -> None:
    rules = SuspicionRules(300, minimum, rate, 0, 900, margin)
    counts = [c for tag, (ok, bad) in zip(TAGS, splits, strict=True) for c in judged(quality, tag, ok, bad)]
    for s in run(counts, PEERS, rules=rules):
        ok, bad = splits[TAGS.index(s.tag)]
        assert ok + bad >= minimum and s.requests == ok + bad
        assert s.failure_rate is not None and s.failure_rate >= rate - 1e-4
        assert s.reference_rate is not None and s.failure_rate >= s.reference_rate + margin - 1e-3


@settings(max_examples=300, deadline=None)
@given(CLASSES, st.integers(1, 60), st.integers(0, 60), st.integers(2, 4), st.integers(1, 60), st.floats(0.0, 1.0))
def test_a_class_failing_equally_on_every_endpoint_never_triggers(
        quality: LiveQuality, ok: int, bad: int, endpoints: int, minimum: int, margin: float) -> None:
    """However often, a class that fails alike on every endpoint of the model (a client's own bug) suspects none
    of them, at any margin: every endpoint's rate is its peers' rate."""
    rules = SuspicionRules(300, minimum, 0.01, 0, 900, max(margin, 1e-6))
    counts = [c for tag in TAGS[:endpoints] for c in judged(quality, tag, ok, bad)]
    assert run(counts, PEERS[:endpoints], rules=rules) == []


@settings(max_examples=300, deadline=None)
@given(CLASSES, st.lists(SPLITS, min_size=4, max_size=4), st.integers(1, 40), st.sampled_from(TAGS))
def test_more_failures_on_one_endpoint_never_clear_its_quality_suspicion(
        quality: LiveQuality, splits: list[tuple[int, int]], extra: int, tag: str) -> None:
    counts = [c for t, (ok, bad) in zip(TAGS, splits, strict=True) for c in judged(quality, t, ok, bad)]
    before = {s.tag for s in run(counts, PEERS)}
    after = {s.tag for s in run(counts + judged(quality, tag, 0, extra), PEERS)}
    assert tag not in before or tag in after


@settings(max_examples=200, deadline=None)
@given(CLASSES, st.lists(SPLITS, min_size=4, max_size=4), STATES,
       st.sampled_from([RoundStatus.CLEAN, RoundStatus.TRANSPORT, RoundStatus.INCONCLUSIVE, None]))
def test_a_quality_suspicion_never_changes_a_state(quality: LiveQuality, splits: list[tuple[int, int]],
                                                   state: EndpointState, probed_as: RoundStatus | None) -> None:
    """A quality suspicion is only a request for probes: the states it is given are left as they were, and
    a confirmation round whose pinned probes do not fail the endpoint decides nothing about it."""
    counts = [c for t, (ok, bad) in zip(TAGS, splits, strict=True) for c in judged(quality, t, ok, bad)]
    quality_suspicion_changes_nothing(state, probed_as, counts)


def quality_suspicion_changes_nothing(state: EndpointState, probed_as: RoundStatus | None,
                                      counts: list[LiveCount]) -> list[Suspicion]:
    states = {"alpha": state}
    found = run(counts, PEERS, states=states)
    assert states == {"alpha": state} and all(s.signal is Signal.LIVE_QUALITY for s in found)
    if state.fail_streak >= 2 or state.is_suspended:
        return found
    request = confirmation_request(M, found, TAGS, [], NOW) if found else None
    rnd = RoundInput("confirm", NOW, M, {t: probed_as for t in (request.contracts if request else ())
                                         if probed_as is not None}, discovered=TAGS)
    _, decisions = decide(states, rnd, PolicyConfig(mode=Mode.ENFORCE))
    assert not [d for d in decisions if d.action in SUSPEND]
    return found


@pytest.mark.parametrize("probed_as", [RoundStatus.CLEAN, RoundStatus.TRANSPORT, RoundStatus.INCONCLUSIVE, None])
@pytest.mark.parametrize("quality", list(LiveQuality))
def test_a_raised_quality_suspicion_changes_no_state(quality: LiveQuality, probed_as: RoundStatus | None) -> None:
    """The property's case that matters, for certain: alpha is suspected, and nothing is decided about it."""
    state = EndpointState(M, "alpha", Mode.ENFORCE, fail_streak=1)
    counts = judged(quality, "alpha", 0, 30) + [c for t in TAGS[1:] for c in judged(quality, t, 30, 0)]
    found = quality_suspicion_changes_nothing(state, probed_as, counts)
    assert [(s.tag, s.quality) for s in found] == [("alpha", quality)]
