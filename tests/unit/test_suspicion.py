"""Suspicion rules (tasks/core/suspicion.py): table cases and Hypothesis properties.

A suspicion only ever asks for a confirmation round: it never suspends by itself, below `min_requests` it never
triggers, 429s are never failures, and what the probes then say is read by `resolution`.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

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
    SuspicionStatus,
    confirmation_request,
    resolution,
    suspect,
    tally,
    uptime_suspicion,
)
from tasks.core.types import Action, Endpoint, EndpointState, IgnoreList, Mode, RoundStatus

pytestmark = pytest.mark.unit

M = "acme/model"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
RULES = SuspicionRules(window_s=300, min_requests=20, failure_rate=0.5, uptime_drop=20, cooldown_s=900, peer_margin=0.3)
EPS = [Endpoint(M, "alpha", "Alpha"), Endpoint(M, "deepinfra/fp8", "DeepInfra"),
       Endpoint(M, "deepinfra/turbo", "DeepInfra")]
NO_IGNORE = IgnoreList(M, (), ())
SUSPEND = {Action.SUSPEND, Action.WOULD_SUSPEND}


def count(outcome: LiveOutcome, n: int, tag: str | None = "alpha", provider: str | None = None,
          ago_s: float = 60) -> LiveCount:
    return LiveCount((NOW - timedelta(seconds=ago_s)).replace(second=0), M, "model:chat", 1, tag, provider,
                     outcome, n)


def run(counts: list[LiveCount], endpoints: list[Endpoint] = EPS, **kw: object) -> list:  # type: ignore[type-arg]
    args = {"states": {}, "ignore": NO_IGNORE, "last_suspected": {}, "rules": RULES, "cleared": None} | kw
    return suspect(M, counts, endpoints, args["states"], args["ignore"], args["last_suspected"],  # type: ignore[arg-type]
                   args["rules"], NOW, args["cleared"])  # type: ignore[arg-type]


@pytest.mark.parametrize(("counts", "expected"), [
    pytest.param([count(LiveOutcome.OK, 10), count(LiveOutcome.PROTOCOL_VIOLATION, 10)], ["alpha"],
                 id="half-failed-at-min-requests"),
    pytest.param([count(LiveOutcome.OK, 11), count(LiveOutcome.CUT_STREAM, 9)], [], id="below-the-rate"),
    pytest.param([count(LiveOutcome.FIRST_CHUNK_TIMEOUT, 19)], [], id="below-min-requests"),
    pytest.param([count(LiveOutcome.HTTP_429, 200), count(LiveOutcome.OK, 5)], [], id="429s-are-not-failures"),
    pytest.param([count(LiveOutcome.UPSTREAM_ERROR, 30, ago_s=400)], [], id="outside-the-window"),
    pytest.param([count(LiveOutcome.HTTP_5XX, 30, tag=None, provider="DeepInfra")],
                 ["deepinfra/fp8", "deepinfra/turbo"], id="provider-name-counts-for-each-of-its-tags"),
    pytest.param([count(LiveOutcome.HTTP_5XX, 30, tag=None, provider="Unknown")], [], id="unknown-provider"),
])
def test_live_failure_rate(counts: list[LiveCount], expected: list[str]) -> None:
    found = run(counts)
    assert [s.tag for s in found] == expected
    assert all(s.signal is Signal.LIVE_FAILURE_RATE for s in found)


def test_judged_answer_rows_are_not_attempts() -> None:
    """A row with a quality class counts judged answers of requests whose attempt row is already counted:
    however many failed their check, the attempt rate does not see them (no double count, no suspicion)."""
    judged = replace(count(LiveOutcome.QUALITY_FAIL, 40), quality=LiveQuality.TOOLS, reason="schema_violation")
    passed = replace(count(LiveOutcome.OK, 60), quality=LiveQuality.TOOLS, reason="ok")
    assert run([count(LiveOutcome.OK, 40), judged, passed]) == []  # 40/100 judged answers failed: below the rate
    assert [s.signal for s in run([judged])] == [Signal.LIVE_QUALITY]  # the quality signal's, not the attempts'


def test_the_evidence_names_the_signal_and_the_counts() -> None:
    [s] = run([count(LiveOutcome.OK, 8), count(LiveOutcome.PROTOCOL_VIOLATION, 12), count(LiveOutcome.HTTP_429, 5)])
    assert (s.requests, s.failures, s.failure_rate) == (20, 12, 0.6)
    assert s.evidence == ("live failures 12/20 (60%) >= suspect_failure_rate 50% in 300 s "
                          "(protocol_violation 12)")


def test_out_of_traffic_and_recently_suspected_endpoints_are_not_suspected() -> None:
    bad = [count(LiveOutcome.CUT_STREAM, 40)]
    suspended = {"alpha": EndpointState(M, "alpha", Mode.ENFORCE, suspended_until=NOW + timedelta(days=1))}
    assert run(bad, states=suspended) == []
    assert run(bad, ignore=IgnoreList(M, ("alpha",), ())) == []
    assert run(bad, last_suspected={"alpha": NOW - timedelta(seconds=600)}) == []
    assert [s.tag for s in run(bad, last_suspected={"alpha": NOW - timedelta(seconds=901)})] == ["alpha"]
    # without a cooldown, only requests after the previous suspicion count (its evidence is spent)
    no_cooldown = SuspicionRules(300, 20, 0.5, 20, 0)
    assert run([count(LiveOutcome.CUT_STREAM, 40, ago_s=240)], rules=no_cooldown,
               last_suspected={"alpha": NOW - timedelta(seconds=120)}) == []


@pytest.mark.parametrize(("e", "hit"), [
    pytest.param(Endpoint(M, "a", "A", uptime_last_5m=60.0, uptime_last_1d=99.5), True, id="sharp-drop"),
    pytest.param(Endpoint(M, "a", "A", uptime_last_5m=85.0, uptime_last_1d=99.5), False, id="wobble"),
    pytest.param(Endpoint(M, "a", "A", uptime_last_30m=70.0, uptime_last_1d=99.0), True, id="5m-null-uses-30m"),
    pytest.param(Endpoint(M, "a", "A", uptime_last_5m=70.0), True, id="1d-null-means-100"),
    pytest.param(Endpoint(M, "a", "A", uptime_last_1d=40.0), False, id="recent-null-never-triggers"),
    pytest.param(Endpoint(M, "a", "A", status=-2, uptime_last_5m=95.0, uptime_last_1d=99.0), False,
                 id="status-alone-never-triggers"),
])
def test_uptime_drop(e: Endpoint, hit: bool) -> None:
    s = uptime_suspicion(e, RULES, NOW)
    assert (s is not None) is hit
    if s is not None:
        assert s.signal is Signal.UPTIME_DROP and "suspect_uptime_drop (20)" in s.evidence


def test_resolution_reads_what_the_probes_said() -> None:
    assert resolution(RoundStatus.FAIL) is SuspicionStatus.CONFIRMED
    assert resolution(RoundStatus.CLEAN) is SuspicionStatus.CLEARED
    assert resolution(RoundStatus.TRANSPORT) is SuspicionStatus.UNCONFIRMED
    assert resolution(None) is SuspicionStatus.UNCONFIRMED


OUTCOMES = st.sampled_from(list(LiveOutcome))
COUNTS = st.lists(st.tuples(OUTCOMES, st.integers(1, 50), st.integers(0, 299)), max_size=20)


@settings(max_examples=200, deadline=None)
@given(COUNTS, st.integers(1, 100), st.floats(0.01, 1.0))
def test_below_min_requests_never_triggers(raw: list[tuple[LiveOutcome, int, int]], minimum: int,
                                           rate: float) -> None:
    rules = SuspicionRules(300, minimum, rate, 0, 900)
    counts = [count(o, n, ago_s=a) for o, n, a in raw]
    counted = sum(c.requests for c in counts if c.outcome.is_counted)
    found = run(counts, rules=rules)
    if counted < minimum:
        assert found == []
    for s in found:
        assert s.requests is not None and s.requests >= minimum and s.failures is not None
        # The rule compares the exact rate; the evidence records it rounded to 4 digits (which may fall below
        # a threshold the exact rate reached, e.g. 1/3 -> 0.3333 against 0.33333).
        assert s.failures / s.requests >= rate
        assert s.failure_rate == round(s.failures / s.requests, 4)


def test_a_rate_at_the_threshold_triggers_though_its_rounding_falls_below() -> None:
    rules = SuspicionRules(300, 3, 0.33333, 0, 900)
    found = run([count(LiveOutcome.CUT_STREAM, 1), count(LiveOutcome.OK, 2)], rules=rules)
    assert [(s.requests, s.failures, s.failure_rate) for s in found] == [(3, 1, 0.3333)]


@settings(max_examples=200, deadline=None)
@given(COUNTS, st.integers(1, 30))
def test_more_failures_never_clear_a_suspicion(raw: list[tuple[LiveOutcome, int, int]], extra: int) -> None:
    before = run([count(o, n, ago_s=a) for o, n, a in raw])
    after = run([count(o, n, ago_s=a) for o, n, a in raw] + [count(LiveOutcome.CUT_STREAM, extra)])
    assert {s.tag for s in before} <= {s.tag for s in after}


STATES = st.builds(
    lambda fail, clean, suspended: EndpointState(M, "alpha", Mode.ENFORCE, fail_streak=fail, clean_streak=clean,
                                                 suspended_until=NOW + timedelta(hours=1) if suspended else None),
    st.integers(0, 5), st.integers(0, 5), st.booleans())


@settings(max_examples=200, deadline=None)
@given(STATES, st.sampled_from([RoundStatus.CLEAN, RoundStatus.TRANSPORT, RoundStatus.INCONCLUSIVE, None]),
       COUNTS)
def test_a_suspicion_never_suspends_by_itself(state: EndpointState, probed: RoundStatus | None,
                                              raw: list[tuple[LiveOutcome, int, int]]) -> None:
    """Whatever live traffic says, the only thing a suspicion adds is a partial round; unless its pinned
    probes fail the endpoint, that round suspends nothing (and the suspicion is not confirmed)."""
    suspends_nothing_by_itself(state, probed, [count(o, n, ago_s=a) for o, n, a in raw])


def suspends_nothing_by_itself(state: EndpointState, probed: RoundStatus | None,
                               counts: list[LiveCount]) -> list[Suspicion]:
    found = run(counts, endpoints=[Endpoint(M, "alpha", "Alpha")], states={"alpha": state})
    if state.fail_streak >= 2 or state.is_suspended:  # the policy acts on its own streak, suspicion or not
        return found
    rnd = RoundInput("confirm", NOW, M, {"alpha": probed} if probed else {},
                     discovered=("alpha", "b", "c", "d"))
    _, decisions = decide({"alpha": state}, rnd, PolicyConfig(mode=Mode.ENFORCE))
    assert not [d for d in decisions if d.action in SUSPEND]
    assert all(resolution(probed) is not SuspicionStatus.CONFIRMED for _ in found)
    return found


@pytest.mark.parametrize("probed_as", [RoundStatus.CLEAN, RoundStatus.TRANSPORT, RoundStatus.INCONCLUSIVE, None])
@pytest.mark.parametrize("fail_streak", [0, 1])
def test_a_raised_suspicion_suspends_nothing_by_itself(probed_as: RoundStatus | None, fail_streak: int) -> None:
    """The property's case that matters, for certain: a suspicion is raised, and still nothing is suspended."""
    state = EndpointState(M, "alpha", Mode.ENFORCE, fail_streak=fail_streak)
    found = suspends_nothing_by_itself(state, probed_as, [count(LiveOutcome.CUT_STREAM, 30)])
    assert [(s.tag, s.signal) for s in found] == [("alpha", Signal.LIVE_FAILURE_RATE)]


def test_tally_spends_evidence_from_before_a_previous_suspicion() -> None:
    counts = [count(LiveOutcome.CUT_STREAM, 30, ago_s=240), count(LiveOutcome.OK, 5, ago_s=30)]
    t = tally(counts, EPS, since={"alpha": NOW - timedelta(seconds=120)}, until=NOW + timedelta(minutes=1))
    assert (t["alpha"].requests, t["alpha"].failures) == (5, 0)


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
