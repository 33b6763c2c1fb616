"""The relay's key mask (provider_canary/router/masking.py) built inside each test, on what test_router_masking.py's
shared mask does not reach: a key's pieces at every alignment, a key in the first or a middle one of several runs of its
characters, keys too short for the block pre-check, and bytes that are not UTF-8 around a key."""

from __future__ import annotations

import base64

import pytest

from provider_canary.router.masking import RelayMask
from tasks.core.redaction import derived_forms

pytestmark = pytest.mark.unit
KEY = "sk-or-v1-" + "3f9a0c7d5e1b2468" * 4
ALT = "gsk_Vq3x9LmT0-bZk2HwYp8Rt"  # another provider's key: url-safe characters, nothing repeated
OTHER_RUN = "0000000000000000"  # characters of the key's forms, but no piece of one


def masked(mask: RelayMask, text: str) -> bytes:
    data = text.encode()
    assert mask.may_hold(data)
    return mask(data)


@pytest.mark.parametrize("key", [KEY, ALT], ids=["openrouter", "urlsafe"])
def test_every_form_and_every_12_character_end_is_masked_at_every_alignment(key: str) -> None:
    mask = RelayMask([key])
    b64 = base64.b64encode(key.encode()).decode().rstrip("=")
    pieces = sorted(derived_forms(key)) + [key[:12], key[-12:], key[-13:], b64[:12], b64[-12:], b64[-13:]]
    # the run of the forms' characters starts with the piece, or up to 5 of them before it: every block alignment
    pads = ['"' * n for n in range(6)] + [key[0] * n for n in range(1, 6)]
    for piece in pieces:
        for pad in pads:
            out = masked(mask, pad + piece + '"')
            assert piece.encode() not in out and b"***" in out, (piece, pad)


@pytest.mark.parametrize("runs", [
    [KEY, OTHER_RUN],  # the key in the first run, another after it
    [OTHER_RUN, KEY, OTHER_RUN],  # in the middle one
    [OTHER_RUN, OTHER_RUN, KEY[-12:], OTHER_RUN],
], ids=["first", "middle", "fragment-third"])
def test_a_key_is_found_in_whichever_run_of_its_characters_it_is(runs: list[str]) -> None:
    text = " ".join(f'"{r}"' for r in runs)
    out = masked(RelayMask([KEY]), text)
    assert b"***" in out and KEY[-12:].encode() not in out and out.count(OTHER_RUN.encode()) == runs.count(OTHER_RUN)


@pytest.mark.parametrize("key", ["hunter", "hunter2x", "0123456789"], ids=["6", "8", "10"])
def test_keys_shorter_than_the_blocks_are_masked_too(key: str) -> None:
    out = masked(RelayMask([key]), f'{{"p": "{key}"}}')
    assert out == b'{"p": "***"}'


def test_bytes_that_are_not_utf8_around_a_key_are_kept_as_they_are() -> None:
    mask = RelayMask([KEY])
    data = b'data: {"x": "\xff\xfe ' + KEY.encode() + b' \xc3"}\n\n'
    assert mask(data) == b'data: {"x": "\xff\xfe *** \xc3"}\n\n'
    assert mask.text(f"gen-\udcff{KEY}") == "gen-\udcff***"
