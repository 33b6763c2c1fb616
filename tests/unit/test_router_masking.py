"""The tier keys masked out of every byte the router relays (provider_canary/router/masking.py), in every form the
canary masks."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provider_canary.router.masking import RelayMask
from tasks.core.redaction import derived_forms

pytestmark = pytest.mark.unit

KEY = "sk-or-v1-" + "3f9a0c7d5e1b2468" * 4
MASK = RelayMask([KEY])


def event(text: str) -> bytes:
    doc = {"id": "gen-1734567890-AbCdEfGhIjKlMnOp", "object": "chat.completion.chunk", "created": 1,
           "model": "meta-llama/llama-3.3-70b-instruct", "provider": "Echo",
           "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


FORMS = {
    "as is": KEY,
    "bearer": f"Authorization: Bearer {KEY}",
    "url-encoded": quote(f"Bearer {KEY}", safe=""),
    "base64": base64.b64encode(KEY.encode()).decode(),
    "base64 url-safe, no padding": base64.urlsafe_b64encode(KEY.encode()).decode().rstrip("="),
    "basic with a user": "Basic " + base64.b64encode(f"router:{KEY}".encode()).decode(),
    "basic with no user": "Basic " + base64.b64encode(f":{KEY}".encode()).decode(),
    "cut to 20 characters": KEY[:20],
    "its last 12 characters": KEY[-12:],
}


@pytest.mark.parametrize("form", list(FORMS.values()), ids=list(FORMS))
def test_every_form_of_a_tier_key_is_masked_and_the_event_stays_valid(form: str) -> None:
    out = MASK(event(f"I received {form} from you."))
    text = json.loads(out[6:])["choices"][0]["delta"]["content"]
    assert "***" in text and KEY not in text and KEY[9:21] not in text
    assert base64.b64encode(KEY.encode()).decode()[:16] not in text
    assert text.startswith("I received ") and text.endswith(" from you.")


def test_bytes_without_a_key_are_returned_as_they_are() -> None:
    clean = event("sk-or-v1- is how OpenRouter keys begin; 3f9a0c7d is a hex word.")
    assert MASK(clean) is clean


def test_no_key_no_mask() -> None:
    assert not RelayMask([]) and RelayMask([]).__call__(event(KEY)) == event(KEY)
    assert not RelayMask(["short"])  # under the redactor's minimum length: never masked by value


def test_a_header_value_is_masked() -> None:
    assert MASK.text(f"gen-{KEY}") == "gen-***"


@settings(max_examples=200, deadline=None)
@given(prefix=st.text(max_size=80), suffix=st.text(max_size=80),
       form=st.sampled_from(sorted(derived_forms(KEY))), start=st.integers(0, 60), length=st.integers(12, 200))
def test_the_pre_check_never_misses_a_form_or_a_fragment(prefix: str, suffix: str, form: str, start: int,
                                                         length: int) -> None:
    """Whatever surrounds it, and at any offset: a whole derived form, or any 12+ character piece of the key or
    of its base64 forms, is seen by the cheap pre-check and masked."""
    for secret in (form, KEY[start : start + length]):
        if len(secret) < 12:
            continue
        data = (prefix + secret + suffix).encode("utf-8", "surrogateescape")
        assert MASK.may_hold(data)
        assert secret.encode() not in MASK(data)
