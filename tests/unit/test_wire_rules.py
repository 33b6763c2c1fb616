"""The wire rules shared by the probe, the router and the Slack client: status classes and Retry-After
(tasks/core/http_rules.py, pure) and what an httpx exception means (tasks/probe/http_errors.py).

Like httpx's test_httpcore_all_exceptions_mapped: when httpx grows a TransportError subclass, this fails until
EXCEPTION_CLASSES says what it means for an attempt.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from provider_canary.router.tiers import failover_reason
from provider_canary.router.upstream import _request_failure
from tasks.alerts.slack_client import _retry_after
from tasks.core.classify import exchange_judgement
from tasks.core.http_rules import is_redirect_status, is_try_again_status, parse_retry_after
from tasks.core.types import Attempt, Contract, ErrorClass, Outcome
from tasks.errors import ConfigError, StoreError
from tasks.probe.discover import DiscoveryUnreachable
from tasks.probe.http_errors import (
    EXCEPTION_CLASSES,
    classify_exception,
    is_orchestrator_blip,
    is_retryable_exception,
)

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 1, 10, 0, 0, tzinfo=UTC)


# --- status classes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "try_again"),
    [(408, True), (429, True), (500, True), (502, True), (503, True), (524, True), (529, True), (599, True)]
    + [(None, False), (200, False), (301, False), (400, False), (401, False), (402, False), (403, False)]
    + [(404, False), (413, False), (422, False), (600, False)],
)
def test_try_again_statuses(code: int | None, try_again: bool) -> None:
    assert is_try_again_status(code) is try_again


@pytest.mark.parametrize(("code", "redirect"), [(300, True), (302, True), (399, True), (200, False), (400, False),
                                                (None, False)])
def test_redirect_statuses(code: int | None, redirect: bool) -> None:
    assert is_redirect_status(code) is redirect


def test_the_router_fails_over_on_exactly_the_codes_the_probe_calls_transport() -> None:
    """One class of codes: the router's failover (besides its 404 "no allowed providers") is the probe's
    `transport`, for every status from 100 to 699."""
    for code in range(100, 700):
        judged = exchange_judgement(_http_attempt(code)) if code != 200 else None
        transport = judged is not None and judged.outcome is Outcome.TRANSPORT
        assert (failover_reason(code, b"") is not None) is transport, code
    assert failover_reason(404, b'{"error": {"message": "No allowed providers are available"}}') is not None
    assert exchange_judgement(_http_attempt(404)).outcome is Outcome.INCONCLUSIVE  # type: ignore[union-attr]


def _http_attempt(code: int) -> Attempt:
    return Attempt(
        round_id="r", model="m/x", tag="t", provider_name="T", contract=Contract.TTFT, attempt_no=1,
        started_at=NOW, http_status=code, error_class=ErrorClass.HTTP_STATUS, error_code=code,
    )


# --- Retry-After --------------------------------------------------------------------------------------------

#: value -> seconds. Before the one parser, three read the header: the probe's (tasks/probe/attempt.py), the router's
#: (provider_canary/router/tiers.py) and Slack's (tasks/alerts/slack_client.py, delta-seconds only). The comment says
#: where one
#: differed.
RETRY_AFTER_GOLDEN: list[tuple[str | None, float | None, str]] = [
    ("7", 7.0, ""),
    ("0", 0.0, ""),
    (" 30 ", 30.0, ""),
    (" 1.5 ", 1.5, "a decimal fraction is read (the simulator sends one for a scaled clock)"),
    ("-3", None, "was 0.0 in all three: a sign is not delta-seconds"),
    ("+5", None, "was 5.0 in all three"),
    ("1e3", None, "was 1000.0 in all three"),
    ("1_000", None, "was 1000.0 in all three (Python's float reads '_')"),
    ("\u0661\u0662", None, "Arabic-Indic digits: was 12.0 in all three"),
    ("inf", None, "was inf in the router's and Slack's (Slack's outbox then could not compute a time)"),
    ("nan", None, "was 0.0 in Slack's"),
    ("9" * 400, None, "beyond a float: was inf in the router's and Slack's"),
    ("Sun, 01 Nov 2026 10:00:30 GMT", 30.0, "IMF-fixdate: was None in Slack's"),
    ("Sunday, 01-Nov-26 10:00:45 GMT", 45.0, "RFC 850 date: was None in Slack's"),
    ("Sun Nov  1 10:01:00 2026", 60.0, "asctime date (no zone: UTC): was None in Slack's"),
    ("Sun, 01 Nov 2026 12:00:10 +0200", 10.0, "a zone offset is applied"),
    ("Sun, 01 Nov 2026 09:00:00 GMT", 0.0, "a date in the past: retry now"),
    ("Sun, 31 Feb 2026 10:00:00 GMT", None, "no such day"),
    ("soon", None, ""),
    ("", None, ""),
    ("   ", None, ""),
    (None, None, ""),
]


@pytest.mark.parametrize(("value", "seconds", "why"), RETRY_AFTER_GOLDEN, ids=[repr(v[0])[:30] for v in
                                                                             RETRY_AFTER_GOLDEN])
def test_parse_retry_after(value: str | None, seconds: float | None, why: str) -> None:
    assert parse_retry_after(value, NOW) == seconds, why


@given(st.integers(min_value=0, max_value=10**15))
def test_any_delta_seconds_is_read_as_itself(n: int) -> None:
    assert parse_retry_after(str(n), NOW) == float(n)


@given(st.text(max_size=40))
def test_any_header_is_none_or_a_finite_wait(value: str) -> None:
    seconds = parse_retry_after(value, NOW)
    assert seconds is None or (math.isfinite(seconds) and seconds >= 0)


@given(st.integers(min_value=0, max_value=10**6))
def test_a_date_is_read_as_the_seconds_until_it(n: int) -> None:
    when = NOW + timedelta(seconds=n)
    assert parse_retry_after(when.strftime("%a, %d %b %Y %H:%M:%S GMT"), NOW) == float(n)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "30"}, 30.0),
        ({"retry-after": ["7"]}, 7.0),  # urllib's multi-valued headers
        ({"Retry-After": "Sun, 01 Nov 2026 10:00:45 GMT"}, 45.0),  # was None: an HTTP-date was not read
        ({"Retry-After": "inf"}, None),  # was inf
        ({"Retry-After": "-1"}, None),  # was 0.0 (the same wait: the outbox waits max(0, seconds or 0))
        ({"Content-Type": "application/json"}, None),
        (None, None),
    ],
)
def test_slacks_retry_after_is_read_by_the_shared_parser(headers: dict[str, object] | None,
                                                         seconds: float | None) -> None:
    assert _retry_after(headers, NOW) == seconds


# --- httpx exceptions ---------------------------------------------------------------------------------------


def _subclasses(cls: type) -> set[type]:
    found: set[type] = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def test_every_httpx_transport_error_is_mapped_explicitly() -> None:
    public = {c for c in _subclasses(httpx.TransportError) if c.__module__.startswith("httpx")}
    assert len(public) >= 15, "httpx exposes TransportError subclasses"
    missing = sorted(c.__name__ for c in public if c not in EXCEPTION_CLASSES)
    assert missing == []


def test_map_keys_are_httpx_errors_and_values_error_classes() -> None:
    for cls, value in EXCEPTION_CLASSES.items():
        assert issubclass(cls, httpx.HTTPError) and cls.__module__.startswith("httpx")
        assert isinstance(value, ErrorClass)


@pytest.mark.parametrize(
    ("exc", "expected", "router_reason"),
    [
        (httpx.ConnectTimeout("x"), ErrorClass.CONNECT, "connect"),  # more specific than TimeoutException
        (httpx.ConnectError("x"), ErrorClass.CONNECT, "connect"),
        (httpx.ReadTimeout("x"), ErrorClass.TIMEOUT, "timeout"),
        (httpx.WriteTimeout("x"), ErrorClass.TIMEOUT, "timeout"),
        (httpx.PoolTimeout("x"), ErrorClass.TIMEOUT, "router_overloaded"),  # the router's own pool, not the tier
        (httpx.ReadError("x"), ErrorClass.STREAM_CUT, "transport_error"),
        (httpx.RemoteProtocolError("x"), ErrorClass.STREAM_CUT, "transport_error"),
        (httpx.CloseError("x"), ErrorClass.STREAM_CUT, "transport_error"),
        # the router said transport_error for these four: nothing reached the upstream, as the probe says
        (httpx.WriteError("x"), ErrorClass.CONNECT, "connect"),
        (httpx.LocalProtocolError("x"), ErrorClass.CONNECT, "connect"),
        (httpx.ProxyError("x"), ErrorClass.CONNECT, "connect"),
        (httpx.UnsupportedProtocol("x"), ErrorClass.CONNECT, "connect"),
        (httpx.DecodingError("x"), ErrorClass.PROTOCOL, "transport_error"),  # a body that does not decode
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else str(v),
)
def test_classification_picks_the_most_specific_entry_for_the_probe_and_the_router(
    exc: httpx.HTTPError, expected: ErrorClass, router_reason: str
) -> None:
    assert classify_exception(exc) is expected
    failure = _request_failure(exc, 12.0)
    assert (str(failure.reason), failure.detail, failure.latency_ms) == (router_reason, type(exc).__name__, 12.0)


def test_an_unknown_subclass_falls_back_to_its_nearest_mapped_base() -> None:
    class FutureReadTimeout(httpx.ReadTimeout):
        pass

    assert classify_exception(FutureReadTimeout("x")) is ErrorClass.TIMEOUT


def test_a_foreign_class_with_an_httpx_name_is_not_mistaken_for_httpx() -> None:
    class ConnectError(Exception):  # noqa: N818 - deliberately named like httpx's
        pass

    assert classify_exception(ConnectError("x")) is ErrorClass.STREAM_CUT
    assert not is_retryable_exception(ConnectError("x"))


@pytest.mark.parametrize(
    ("exc", "retry"),
    [
        (httpx.ConnectError("x"), True),
        (httpx.ReadTimeout("x"), True),
        (DiscoveryUnreachable("http://127.0.0.1:9/api/v1 unreachable"), True),
        (StoreError("database is locked", busy=True), True),
        (StoreError("store: cannot read or write c.duckdb: IO Error: Could not read enough bytes"), False),
        (httpx.DecodingError("x"), False),
        (ConfigError("bad"), False),
        (ValueError("bug"), False),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else str(v),
)
def test_retry_predicate_retries_the_network_and_the_store_lock_only(exc: BaseException, retry: bool) -> None:
    assert is_retryable_exception(exc) is retry


def _status_error(code: int) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "http://127.0.0.1:4200/api/task_runs/")
    return httpx.HTTPStatusError("x", request=request, response=httpx.Response(code, request=request))


@pytest.mark.parametrize(
    ("exc", "retry"),
    [
        (_status_error(503), True),
        (_status_error(429), True),
        (_status_error(502), True),
        (httpx.ConnectError("x"), True),
        (httpx.ReadTimeout("x"), True),
        (_status_error(404), False),
        (_status_error(422), False),
        (ValueError("a round's own bug"), False),
        (ConfigError("bad"), False),
    ],
    ids=lambda v: f"{type(v).__name__}-{getattr(getattr(v, 'response', None), 'status_code', '')}",
)
def test_a_round_is_retried_when_the_orchestrator_did_not_answer_only(exc: BaseException, retry: bool) -> None:
    assert is_orchestrator_blip(exc) is retry


def test_prefects_status_error_is_an_orchestrator_blip() -> None:
    from prefect.exceptions import PrefectHTTPStatusError

    exc = PrefectHTTPStatusError.from_httpx_error(_status_error(503))
    assert is_orchestrator_blip(exc)
