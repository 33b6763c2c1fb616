"""The one redactor (tasks.runtime.secrets `redact_known_secrets`, the rule tasks.core.redaction `redact`): secrets
known by value (environment, registered values, URL userinfo) and by shape never survive it, whatever surrounds them;
text without secrets comes back unchanged."""

from __future__ import annotations

import logging
import os
import string
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tasks.runtime import secrets
from tasks.runtime.secrets import FRAGMENT_CHARS, MASK, SecretStr, redact_values, register_url, strip_userinfo
from tasks.runtime.secrets import redact_known_secrets as redact
from tests.support.secrets_registry import fresh_secret_registry  # noqa: F401 (autouse)

pytestmark = pytest.mark.unit

SHAPELESS = "Zq8pLk2mNw7xRt4vBy6cHd9fGj3sQw1e"  # the example: not shaped like any token


@contextmanager
def env(**values: str) -> Iterator[None]:
    """Set environment variables for the block (hypothesis examples cannot use monkeypatch)."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# --- by value -------------------------------------------------------------------------------------
def test_a_shapeless_key_from_the_environment_is_redacted_whole_and_truncated() -> None:
    with env(OPENROUTER_API_KEY=SHAPELESS):
        assert redact(f"your key is {SHAPELESS}, thanks") == f"your key is {MASK}, thanks"
        assert SHAPELESS[:15] not in redact(f"evidence: reply `{SHAPELESS[:15]}…`")  # cut by an excerpt
        assert SHAPELESS[-13:] not in redact(f"…{SHAPELESS[-13:]} end")  # the tail of a cut
        short = SHAPELESS[: FRAGMENT_CHARS - 1]
        assert redact(f"!{short}!") == f"!{short}!"  # too short to tell from ordinary text
    assert redact(f"your key is {SHAPELESS}") == f"your key is {SHAPELESS}"  # no longer a secret


@pytest.mark.parametrize("name", ["OPENROUTER_API_KEY", "SLACK_BOT_TOKEN", "SLACK_WEBHOOK_URL"])
def test_every_secret_variable_is_known(name: str) -> None:
    value = "Qm7" + SHAPELESS[::-1]
    with env(**{name: value}):
        assert value not in redact(f"[{value}]")


def test_registered_values_and_secret_str_are_known() -> None:
    value = "Rt4v" + SHAPELESS
    assert redact(value) == value
    SecretStr(value)  # e.g. a routes file's key variable, or a Prefect Secret block's value
    assert redact(f"a {value} b") == f"a {MASK} b"


def test_url_userinfo_is_a_secret_everywhere_once_the_url_is_known() -> None:
    url = "http://canary-user:pw-9f8e7d6c@proxy.internal:8080/api/v1"
    register_url(url)
    assert redact("password pw-9f8e7d6c alone") == f"password {MASK} alone"
    assert redact(f"GET {url}/models failed") == f"GET http://{MASK}@proxy.internal:8080/api/v1/models failed"
    assert strip_userinfo(url) == "http://proxy.internal:8080/api/v1"


def test_userinfo_of_openrouter_base_url_in_the_environment_is_known() -> None:
    with env(OPENROUTER_BASE_URL="https://u:Pw0rdFromEnv@gw.example/api/v1"):
        assert "Pw0rdFromEnv" not in redact("auth failed for Pw0rdFromEnv")


def test_escaped_forms_of_a_value_are_redacted() -> None:
    value = 'Ab/Cd+Ef"Gh' + SHAPELESS[:8]
    with env(SLACK_BOT_TOKEN=value):
        assert redact('{"t": "Ab/Cd+Ef\\"Gh' + SHAPELESS[:8] + '"}') == '{"t": "' + MASK + '"}'
        assert "Ab%2FCd%2BEf" not in redact("q=Ab%2FCd%2BEf%22Gh" + SHAPELESS[:8])


def test_short_values_are_not_redacted_by_value() -> None:
    assert redact_values("a cat sat", ["cat"]) == "a cat sat"


# --- by shape -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("key sk-or-v1-0123456789abcdef0123", "key sk-or-***"),
        ("key sk-abcd1234", "key sk-***"),  # a short sk- key
        ("tok xoxb-1111-2222-abcdef", "tok xox?-***"),
        ("tok xoxp-123-abc", "tok xox?-***"),
        ("app xapp-1-A0B1-2233", "app xapp-***"),
        ("hdr bearer abc.def-123", "hdr bearer ***"),  # lowercase
        ("hdr BEARER Zz9", "hdr BEARER ***"),
        ("https://hooks.slack.com/services/T0/B0/XyZ", "https://hooks.slack.com/***"),
        ('{"url":"https://hooks.slack.com/services/T/B/X"}', '{"url":"https://hooks.slack.com/***"}'),
        ("http://user:s3cret@host/api/v1", "http://***@host/api/v1"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: ***"),
        ("x-api-key: 0123abcd", "x-api-key: ***"),
        ("ordinary text, a task-list and sk-8", "ordinary text, a task-list and sk-8"),
    ],
)
def test_shapes(raw: str, expected: str) -> None:
    assert secrets.redact_shapes(raw) == expected
    assert redact(raw) == expected


def test_redaction_is_idempotent() -> None:
    text = "Authorization: Bearer sk-or-v1-abc123 at http://u:p4ssword@h/x"
    once = redact(text)
    assert redact(once) == once


# --- properties -----------------------------------------------------------------------------------
TOKEN_CHARS = string.ascii_letters + string.digits
token_secrets = st.text(TOKEN_CHARS, min_size=16, max_size=64)
# Any characters but the mask's own (a secret made of "*" could be rebuilt from masks around it).
odd_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="*\x00")  # \x00: not in env
odd_secrets = st.text(odd_chars, min_size=16, max_size=40)
secret_values = st.one_of(token_secrets, odd_secrets)
# Text of any characters, or text built from pieces of the secret itself (the hardest surroundings).
surroundings = st.text(max_size=80)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    secret=secret_values, before=surroundings, after=surroundings, var=st.sampled_from(secrets.ENV_SECRETS)
)
def test_a_planted_secret_never_survives(secret: str, before: str, after: str, var: str) -> None:
    with env(**{var: secret}):
        out = redact(before + secret + after)
        assert secret not in out
        for cut in (15, FRAGMENT_CHARS):  # truncated copies, as an excerpt or a cap leaves them
            out = redact(before + secret[:cut] + "…" + after)
            assert secret[:cut] not in out
            out = redact(before + "…" + secret[-cut:] + after)
            assert secret[-cut:] not in out


@settings(max_examples=100, deadline=None)
@given(secret=secret_values, pieces=st.lists(st.integers(0, 63), max_size=6), glue=st.text(max_size=4))
def test_a_secret_amid_pieces_of_itself_never_survives(secret: str, pieces: list[int], glue: str) -> None:
    noise = glue.join(secret[i % len(secret) :][:5] for i in pieces)
    with env(OPENROUTER_API_KEY=secret):
        assert secret not in redact(noise + secret + noise)


PROSE = string.ascii_letters + string.digits + " .,;!?'\"()[]{}\n\téèüßçñждяאבعربي中文日本語"


@settings(max_examples=200, deadline=None)
@given(text=st.text(PROSE, max_size=300), secret=token_secrets)
def test_text_without_secrets_is_unchanged(text: str, secret: str) -> None:
    lowered = text.lower()
    assume(not any(w in lowered for w in ("bearer", "authorization", "api_key", "api-key", "x-api-key")))
    assume(not any(secret[i : i + FRAGMENT_CHARS] in text for i in range(len(secret))))
    with env(OPENROUTER_API_KEY=secret):
        assert redact(text) == text


# --- the sinks call it ----------------------------------------------------------------------------
def test_render_store_alerts_and_route_events_use_the_one_redactor() -> None:
    from provider_canary.router.route_events import route_event_to_json
    from tasks.alerts.slack_settings import SlackSettings
    from tasks.core.render.text import clean
    from tasks.core.types import RouteEvent
    from tasks.runtime.secrets import redact_known_secrets_opt as row_redact
    from tasks.store.rows import one_line

    with env(OPENROUTER_API_KEY=SHAPELESS):
        assert SHAPELESS[:15] not in clean(f"reply: {SHAPELESS}", cap=20)  # cut after redaction
        assert row_redact(f"t {SHAPELESS}") == f"t {MASK}"
        assert SHAPELESS not in (one_line(f"err\n{SHAPELESS}") or "")
        assert SlackSettings().scrub(f"a {SHAPELESS} xapp-1-2-3") == f"a {MASK} xapp-{MASK}"
        event = RouteEvent(datetime(2026, 1, 1, tzinfo=UTC), "k", 1, f"http://u:{SHAPELESS}@h/v1 m", "r")
        assert SHAPELESS not in str(route_event_to_json(event))


def test_redact_is_pure_it_masks_what_it_is_given_and_remembers_nothing() -> None:
    from tasks.core.redaction import redact as pure_redact

    value = "Rt4v" + SHAPELESS
    assert pure_redact(f"a {value} b sk-or-v1-abcdef123456", [value]) == f"a {MASK} b sk-or-{MASK}"
    assert pure_redact(f"a {value} b") == f"a {value} b"  # it was not remembered
    assert secrets.known_values() == () and redact(f"a {value} b") == f"a {value} b"


def test_redacting_known_secrets_makes_nothing_known() -> None:
    value = "Rt4v" + SHAPELESS
    assert redact(f"a {value}") == f"a {value}"
    assert secrets.known_values() == ()
    secrets.register(value)  # making a value known is `register`'s job alone
    assert redact(f"a {value}") == f"a {MASK}"


def test_the_recorder_makes_its_key_known_and_masks_it_in_an_error_detail() -> None:
    from tasks.core.types import ErrorClass
    from tasks.probe.recorder import AttemptRecorder

    key = "Kx" + SHAPELESS
    rec = AttemptRecorder(cap_bytes=24, t0=0.0, secret=key)
    rec.fail(ErrorClass.HTTP_STATUS, code=401, detail=f"bad key {key}")
    assert rec.error_detail == f"bad key {MASK}" and key in secrets.known_values()


def test_the_recorder_redacts_reply_text_before_anything_judges_it() -> None:
    from tasks.core.types import Contract, Endpoint
    from tasks.probe.recorder import AttemptRecorder

    rec = AttemptRecorder(cap_bytes=24, t0=0.0, secret="")
    with env(OPENROUTER_API_KEY=SHAPELESS):
        rec.on_chunk({"choices": [{"delta": {"content": "echo: " + SHAPELESS}}], "provider": SHAPELESS}, 0.1)
        a = rec.to_attempt(
            round_id="r", endpoint=Endpoint(model="a/b", tag="t", provider_name="T"), contract=Contract.TTFT,
            attempt_no=1, started_at=datetime(2026, 1, 1, tzinfo=UTC), language="en", end=0.2,
        )
    assert a.text_truncated and SHAPELESS[:FRAGMENT_CHARS] not in a.text  # cut at 24 bytes, then redacted
    assert a.served_provider == MASK


def test_log_records_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    secrets.install_redaction()
    with env(OPENROUTER_API_KEY=SHAPELESS), caplog.at_level(logging.INFO):
        for name in ("canary", "canary.alerts", "prefect.flow_runs", "httpx", "some.library"):
            logging.getLogger(name).warning("leak %s via %s", SHAPELESS, name)
        try:
            raise RuntimeError(f"boom {SHAPELESS}")
        except RuntimeError:
            logging.getLogger("canary").exception("failed")
    assert len(caplog.records) == 6
    for record in caplog.records:
        assert SHAPELESS not in record.getMessage()
        assert SHAPELESS not in (record.exc_text or "")
    assert SHAPELESS not in caplog.text
