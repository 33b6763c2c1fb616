"""The tier keys never reach a client: every byte the router relays is masked of them, in every form the canary
masks in its own records (tasks/core/redaction.py: the key as it is, JSON-escaped, URL-encoded, base64 in both
alphabets with or without padding, HTTP Basic's `base64(user:key)` at any alignment, `Bearer <key>` through the
key itself, and any run of `FRAGMENT_CHARS` (12) or more characters of the key or of its base64 forms).

    mask = RelayMask(tier_keys)
    mask(data) -> data, or a copy with each form replaced by `***`

An upstream that echoes the `Authorization` it received (a misbehaving or compromised provider) would otherwise
put the router's key into the answer. The relay forwards whole SSE events only (provider_canary/router/stream.py holds
an incomplete one until its end arrives), so a key split across two reads of the upstream's bytes is masked whole:
the tail kept before sending is that incomplete event, and the first chunk waits for nothing more.

Cost: one `bytes.translate` and a few `find`s locate the runs of the forms' own characters 11 bytes or longer;
each is looked at in steps of `BLOCK` bytes, a set lookup each (a form of 11 bytes or more always holds a whole
aligned block of itself), and the full masking runs only on a hit; shorter forms are searched for directly.
A key split across events (a few characters in each of several content deltas) is masked only where each piece
is a fragment of 12 characters or more: the relay never parses an event to join the deltas.
"""

from __future__ import annotations

from collections.abc import Iterable

from tasks.core.redaction import value_matcher

#: Bytes per step of the pre-check: any run of 2 x BLOCK - 1 bytes or more holds a whole block at a multiple of
#: BLOCK, so every form (and fragment, 12 characters at least) of 11 bytes or more is seen.
BLOCK = 6
_RUN = b"a" * (2 * BLOCK - 1)


class RelayMask:
    def __init__(self, values: Iterable[str]) -> None:
        self.matcher = value_matcher(values)
        texts = set(self.matcher.forms) | set(self.matcher.sources) if self.matcher is not None else set()
        encoded = {t.encode("utf-8") for t in texts}
        self.grams = frozenset(e[i : i + BLOCK] for e in encoded for i in range(len(e) - BLOCK + 1))
        self.short = tuple(sorted(e for e in encoded if len(e) < 2 * BLOCK - 1))
        # a form sits inside a run of its own characters: each byte of theirs becomes "a", any other a space, and
        # only the runs long enough to hold a block are looked into
        alphabet = set(b"".join(encoded))
        self.table = bytes(0x61 if b in alphabet else 0x20 for b in range(256))

    def __bool__(self) -> bool:
        return self.matcher is not None

    def may_hold(self, data: bytes) -> bool:
        """Whether `data` may hold a key form (False: it certainly holds none)."""
        grams, classes = self.grams, data.translate(self.table)
        start = classes.find(_RUN)
        while start >= 0:
            end = classes.find(b" ", start)
            end = len(data) if end < 0 else end
            for i in range(start, end - BLOCK + 1, BLOCK):
                if data[i : i + BLOCK] in grams:
                    return True
            start = classes.find(_RUN, end)
        return any(s in data for s in self.short)

    def __call__(self, data: bytes) -> bytes:
        if self.matcher is None or not self.may_hold(data):
            return data
        text = data.decode("utf-8", "surrogateescape")
        masked = self.matcher.sub(text)
        return data if masked == text else masked.encode("utf-8", "surrogateescape")

    def text(self, value: str) -> str:
        """A header value, masked."""
        return self(value.encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape")
