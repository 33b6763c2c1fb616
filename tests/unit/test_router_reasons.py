"""The router's one vocabulary of failover reasons (provider_canary/router/reasons.py): the strings route events, the
503 body and metric labels show (provider_canary/router/ROUTES.md: an interface), and what each counts as in
`live_requests`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import provider_canary.router.reasons as r
from provider_canary.router.reasons import Cause
from tasks.core.live_records import LiveOutcome

pytestmark = pytest.mark.unit

ROUTES_MD = (Path(__file__).resolve().parents[2] / "provider_canary" / "router" / "ROUTES.md").read_text(
    encoding="utf-8")


@pytest.mark.parametrize(("reason", "text", "outcome", "word"), [
    (r.fixed(Cause.CONNECT), "connect", LiveOutcome.TRANSPORT, None),
    (r.http(429), "http_429", LiveOutcome.HTTP_429, "429"),
    (r.http(503), "http_503", LiveOutcome.HTTP_5XX, "503"),
    (r.http(408), "http_408", LiveOutcome.HTTP_5XX, "408"),
    (r.error_in_200(502), "error_in_200_502", LiveOutcome.UPSTREAM_ERROR, "502"),
    (r.native("network_error"), "native_network_error", LiveOutcome.UPSTREAM_ERROR, "network_error"),
    (r.native("Upstream Timeout!"), "native_upstream_timeout", LiveOutcome.UPSTREAM_ERROR, "upstream_timeout"),
    (r.fixed(Cause.EMPTY_ANSWER), "empty_answer", LiveOutcome.OK, None),
    (r.failed_check("schema_violation"), "failed_check_schema_violation", LiveOutcome.OK, None),
    (r.fixed(Cause.NO_ENDPOINTS), "no_endpoints_for_parameters", None, None),
    (r.fixed(Cause.PINNED_EXCLUDED), "pinned_providers_excluded", None, None),
    (r.fixed(Cause.NO_ALLOWED_PROVIDERS), "no_allowed_providers", LiveOutcome.TRANSPORT, None),
    (r.fixed(Cause.FIRST_CHUNK_TIMEOUT), "first_chunk_timeout", LiveOutcome.FIRST_CHUNK_TIMEOUT, None),
    (r.fixed(Cause.ERROR_CHUNK_BEFORE_COMMIT, 429), "error_chunk_before_commit", LiveOutcome.UPSTREAM_ERROR, "429"),
    (r.fixed(Cause.BAD_FRAME_BEFORE_COMMIT), "bad_frame_before_commit", LiveOutcome.PROTOCOL_VIOLATION, None),
    (r.fixed(Cause.STREAM_ENDED_BEFORE_COMMIT), "stream_ended_before_commit", LiveOutcome.UPSTREAM_ERROR, None),
    (r.fixed(Cause.STREAM_ERROR_BEFORE_COMMIT), "stream_error_before_commit", LiveOutcome.CUT_STREAM, None),
    (r.fixed(Cause.IDLE_TIMEOUT_AFTER_COMMIT), "idle_timeout_after_commit", LiveOutcome.CUT_STREAM, None),
])
def test_each_reason_says_its_string_its_live_outcome_and_the_upstreams_word(
    reason: r.FailoverReason, text: str, outcome: LiveOutcome | None, word: str | None
) -> None:
    assert (str(reason), reason.live_outcome, reason.upstream_word) == (text, outcome, word)


def test_every_cause_has_a_live_outcome_and_every_reason_is_documented() -> None:
    """The families are data (a cause and a word), never prefixes parsed back; every cause and family is in
    provider_canary/router/ROUTES.md's list of route-event reasons."""
    for cause in Cause:
        reason = r.FailoverReason(cause, "7") if cause.is_family else r.fixed(cause)
        assert reason.live_outcome is None or isinstance(reason.live_outcome, LiveOutcome)
        documented = f"`{cause.value}_<" if cause.is_family else f"`{cause.value}`"
        assert documented in ROUTES_MD, cause


def test_an_upstreams_word_is_bounded_and_label_safe() -> None:
    word = r.native("a" * 500 + "\n{x}").word or ""
    assert len(word) <= r.WORD_CHARS and re.fullmatch(r"[a-z0-9_]+", word)
    assert str(r.native("")) == "native_error"


def test_only_the_routers_own_judgements_never_cool_a_tier_down() -> None:
    assert r.http(429).cools_down and r.fixed(Cause.FIRST_CHUNK_TIMEOUT).cools_down
    assert not r.fixed(Cause.EMPTY_ANSWER).cools_down and not r.failed_check("invalid_json").cools_down
