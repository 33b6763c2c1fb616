"""Every derived form of a known secret is redacted by value (issue 21): `Bearer <key>`, HTTP Basic of
`user:pass` and of the key, URL-encoded, base64 standard and URL-safe with and without padding, inside a longer
base64 text at any alignment, and a cut base64 form. Pure rules (tasks.core.redaction.redact_values)."""

from __future__ import annotations

import base64
from urllib.parse import quote, quote_plus

import pytest

from tasks.core.redaction import MASK, redact_values

pytestmark = pytest.mark.unit

KEY = "Zq8tShapelessKeyValue+/=9x1"  # no shape the shape rules know: only its value can catch it
USERINFO = "user:pa55word"


def b64(text: str, urlsafe: bool = False, pad: bool = True) -> str:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    out = encode(text.encode()).decode()
    return out if pad else out.rstrip("=")


FORMS = {
    "bearer": f"Bearer {KEY}",
    "basic of user:pass": "Basic " + b64(USERINFO),
    "basic of key:": "Basic " + b64(KEY + ":"),
    "basic of :key": "Basic " + b64(":" + KEY),
    "url-encoded": quote(KEY, safe=""),
    "url-encoded plus": quote_plus(KEY),
    "base64": b64(KEY),
    "base64 no padding": b64(KEY, pad=False),
    "base64 urlsafe": b64(KEY, urlsafe=True),
    "base64 urlsafe no padding": b64(KEY, urlsafe=True, pad=False),
    "basic of anyuser:key (alignment 1)": b64("a:" + KEY),
    "basic of anyuser:key (alignment 2)": b64("ab:" + KEY),
    "base64 of a header holding the key": b64(f"Authorization: Bearer {KEY}"),
    "cut base64 (15 characters)": b64(KEY)[3:18],
}


@pytest.mark.parametrize("form", list(FORMS.values()), ids=list(FORMS))
def test_a_derived_form_is_masked(form: str) -> None:
    text = f"upstream said: {form} (echoed)"
    out = redact_values(text, [KEY, USERINFO, "pa55word"])
    assert MASK in out
    assert KEY not in out and b64(KEY)[4:16] not in out and b64(USERINFO) not in out
    assert "upstream said:" in out and "(echoed)" in out


def test_ordinary_text_and_other_base64_stay() -> None:
    text = "ttft_ms (12400) > 10000; " + b64("an unrelated payload of some length")
    assert redact_values(text, [KEY, USERINFO]) == text
