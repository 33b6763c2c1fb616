"""Redaction rules, pure: the one documented shape list and matching by value (no registry, no environment).

`redact(text, values)` is the one rule: `values` and every secret shape masked, nothing remembered, no environment
read. tasks.runtime.secrets owns which values are secret: every sink calls `tasks.runtime.secrets.redact_known_secrets`
(`redact` over every value the process knows); pure code that must mask them too calls `redact_process_secrets`, which
is that function once an entry point installed it (`install_redactor`) and the shape rules only before.

* By value: each value's exact form and every derived form (`derived_forms`: JSON-escaped, URL-quoted,
  base64 standard and URL-safe with or without padding, HTTP Basic's `base64(value:)` / `base64(:value)`, and
  the characters only the value decides inside ANY longer base64 text, at each of the three alignments, so
  `Basic base64(anyuser:key)` is masked too; `Bearer <value>` is masked through the value itself), and any
  run of `FRAGMENT_CHARS` or more consecutive characters of it or of its base64 forms (a key cut by a length
  cap: a 15-character prefix, a tail). For a value that is a URL (a Slack webhook) only the part after the
  host counts for fragments.
* By shape (`SHAPES`): Slack webhook URLs, URL userinfo (`scheme://user:pass@`), `Authorization:` /
  `Proxy-Authorization:` / `X-Api-Key:` / `api_key=` values, `bearer <token>` in any case, OpenRouter keys
  `sk-or-…`, OpenAI-style keys `sk-` + 8 or more, Slack tokens `xox?-…` and `xapp-…`.
"""

from __future__ import annotations

import base64
import json
import re
import string
from collections.abc import Callable, Iterable, Iterator
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

MASK = "***"
#: Values shorter than this are not redacted by value (they would erase ordinary words; shapes still apply).
MIN_VALUE_CHARS = 6
#: A run of at least this many consecutive characters of a known secret is masked (truncated copies).
FRAGMENT_CHARS = 12

_TOKEN = r"[A-Za-z0-9._~+/=\-]"
#: The shape list: (name, pattern, replacement). Order matters: URLs first, `sk-or-` before `sk-`.
#: Replacements keep the kind visible ("sk-or-***", "Bearer ***") so a reader knows what was there.
SHAPES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "slack webhook URL",
        re.compile(r"(?i)(https?://hooks\.slack(?:-gov)?\.com/)[^\s\"'<>|\\]+"),
        r"\1" + MASK,
    ),
    ("URL userinfo", re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/?#@\"'<>]+@"), r"\1" + MASK + "@"),
    (
        "authorization header",
        re.compile(
            r"(?i)\b((?:proxy-)?authorization|x-api-key|api[_-]key)([\"']?\s*[:=]\s*[\"']?)"
            r"(?:(?:bearer|basic|token|bot)\s+)?[^\s\"',;&*]+"
        ),
        r"\1\2" + MASK,
    ),
    ("bearer token", re.compile(rf"(?i)\b(bearer)\s+{_TOKEN}+"), r"\1 " + MASK),
    ("openrouter key", re.compile(r"\bsk-or-[A-Za-z0-9_\-]+"), "sk-or-" + MASK),
    ("openai-style key", re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"), "sk-" + MASK),
    ("slack token", re.compile(r"\bxox[a-z]-[A-Za-z0-9\-]{3,}"), "xox?-" + MASK),
    ("slack app token", re.compile(r"\bxapp-[A-Za-z0-9\-]{3,}"), "xapp-" + MASK),
)

#: A base64 run shorter than this is not masked on its own (too likely to occur by chance).
MIN_BASE64_CORE = 8
_ENCODERS = (base64.b64encode, base64.urlsafe_b64encode)


def derived_forms(value: str) -> set[str]:
    """Every form in which `value` can travel: as it is, JSON-escaped, URL-quoted, base64 (both alphabets,
    padded or not) of the value, of `value:` and `:value` (HTTP Basic with an empty user or password), and
    the part of any longer base64 text that only the value decides (it may start at any of 3 alignments)."""
    forms = {value, json.dumps(value)[1:-1], quote(value, safe=""), quote(value), quote_plus(value)}
    raw = value.encode("utf-8")
    for encode in _ENCODERS:
        for data in (raw, raw + b":", b":" + raw):
            encoded = encode(data).decode("ascii")
            forms.update((encoded, encoded.rstrip("=")))
        for skip in (0, 1, 2):  # the value's bytes after the first group they share with what precedes them
            rest = raw[skip:]
            core = encode(rest).decode("ascii")[: 4 * (len(rest) // 3)]
            if len(core) >= MIN_BASE64_CORE:
                forms.add(core)
    return forms


class _ValueMatcher:
    """Compiled patterns for one set of values: exact and derived forms, then fragments of FRAGMENT_CHARS or
    more."""

    def __init__(self, values: tuple[str, ...]) -> None:
        forms: set[str] = set()
        for v in values:
            forms.update(derived_forms(v))
        ordered = sorted(forms, key=lambda f: (-len(f), f))
        self.forms = tuple(ordered)
        self.exact = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        # Fragments: of the value, and of its base64 forms (a cut `Basic ...` header is still the secret).
        self.sources = tuple(f for v in values for f in (_fragment_source(v), *_base64_sources(v)))
        grams = {s[i : i + FRAGMENT_CHARS] for s in self.sources for i in range(len(s) - FRAGMENT_CHARS + 1)}
        self.gram_set = frozenset(grams)
        # Fast path: secrets made of token characters can only sit inside runs of such characters, which are
        # rare in prose; only those runs are searched (16 KB of text: well under a millisecond).
        self.fast = all(set(s) <= _RUN_SET for s in self.sources)
        slow = grams and not self.fast
        self.grams = re.compile("|".join(map(re.escape, sorted(grams)))) if slow else None

    def sub(self, text: str) -> str:
        if self.exact is not None:
            text = self.exact.sub(MASK, text)
        if not self.gram_set:
            return text
        out: list[str] = []
        pos = 0
        for start, end in self._fragments(text):
            out.append(text[pos:start] + MASK)
            pos = end
        out.append(text[pos:])
        return "".join(out)

    def _fragments(self, text: str) -> Iterator[tuple[int, int]]:
        """Spans of `text` (in order, disjoint) that are runs of FRAGMENT_CHARS or more of a known secret."""
        if not self.fast:
            assert self.grams is not None
            pos = 0
            while m := self.grams.search(text, pos):
                span = self._extend(text, m.start(), m.end())
                yield span
                pos = span[1]
            return
        for run in _RUN.finditer(text):
            i, last = run.start(), run.end() - FRAGMENT_CHARS
            while i <= last:
                if text[i : i + FRAGMENT_CHARS] in self.gram_set:
                    span = self._extend(text, i, i + FRAGMENT_CHARS)
                    yield span
                    i = span[1]
                else:
                    i += 1

    def _extend(self, text: str, start: int, end: int) -> tuple[int, int]:
        """Grow a fragment match to the longest run of the same secret around it."""
        gram = text[start:end]
        best = (start, end)
        for s in self.sources:
            i = s.find(gram)
            while i >= 0:
                a, j = start, i
                while a > 0 and j > 0 and text[a - 1] == s[j - 1]:
                    a, j = a - 1, j - 1
                b, k = end, i + len(gram)
                while b < len(text) and k < len(s) and text[b] == s[k]:
                    b, k = b + 1, k + 1
                best = (min(best[0], a), max(best[1], b))
                i = s.find(gram, i + 1)
        return best


_RUN_SET = frozenset(string.ascii_letters + string.digits + "_-./+=:%~@")
_RUN = re.compile(r"[A-Za-z0-9_\-./+=:%~@]{" + str(FRAGMENT_CHARS) + ",}")


def _base64_sources(value: str) -> tuple[str, ...]:
    raw = value.encode("utf-8")
    return tuple(encode(raw).decode("ascii").rstrip("=") for encode in _ENCODERS)


def _fragment_source(value: str) -> str:
    """The part of a value whose fragments are secret: for a URL, what follows the host."""
    if "://" in value:
        parts = urlsplit(value)
        return urlunsplit(("", "", parts.path, parts.query, parts.fragment))
    return value


_matcher_cache: tuple[tuple[str, ...], _ValueMatcher] | None = None


def matcher_for(values: tuple[str, ...]) -> _ValueMatcher:
    """The compiled matcher of `values` (the last one is cached: the known set rarely changes)."""
    global _matcher_cache
    cached = _matcher_cache
    if cached is not None and cached[0] == values:
        return cached[1]
    matcher = _ValueMatcher(values)
    _matcher_cache = (values, matcher)
    return matcher


#: A shape can only match where its hint occurs (lower case): cheap tests that skip most regex scans.
_HINTS = {
    "slack webhook URL": ("hooks.slack",),
    "URL userinfo": ("@",),
    "authorization header": ("authorization", "api-key", "api_key"),
    "bearer token": ("bearer",),
    "openrouter key": ("sk-or-",),
    "openai-style key": ("sk-",),
    "slack token": ("xox",),
    "slack app token": ("xapp-",),
}


def redact_shapes(text: str) -> str:
    """Only the shape rules (for text that must not depend on the process's secrets, e.g. a unit test)."""
    lowered = text.lower()
    for name, pattern, replacement in SHAPES:
        if any(h in lowered for h in _HINTS[name]):
            text = pattern.sub(replacement, text)
    return text


def value_matcher(values: Iterable[str]) -> _ValueMatcher | None:
    """A matcher of exactly `values` (uncached: for a holder that keeps it, as the router keeps its tier keys'):
    `.sub(text)` masks them as `redact_values` does; `.forms` and `.sources` are what it looks for."""
    chosen = tuple(sorted({v for v in values if len(v) >= MIN_VALUE_CHARS}, key=lambda v: (-len(v), v)))
    return _ValueMatcher(chosen) if chosen else None


def redact_values(text: str, values: Iterable[str]) -> str:
    """Only the value rules, for exactly `values` (pure: no registry, no environment)."""
    chosen = _chosen(values)
    return _ValueMatcher(chosen).sub(text) if chosen else text


def redact(text: str, values: Iterable[str] = ()) -> str:
    """`text` with `values` (each in every derived form, and their long fragments) and every secret shape replaced
    by `MASK`. Pure: it remembers nothing and reads no environment. Text without secrets comes back unchanged."""
    chosen = _chosen(values)
    return redact_shapes(matcher_for(chosen).sub(text) if chosen else text)


def _chosen(values: Iterable[str]) -> tuple[str, ...]:
    """The values long enough to mask by value, longest first (the order the matcher needs)."""
    return tuple(sorted({v for v in values if len(v) >= MIN_VALUE_CHARS}, key=lambda v: (-len(v), v)))




# -- the process's redactor -----------------------------------------------------------------------------------
#: What `redact_process_secrets` uses. Pure code knows the shapes only; the shell (tasks/runtime/secrets.py, imported by
#: every process that can hold a secret) installs a redactor that also masks every secret value the process knows.
_redactor: Callable[[str], str] = redact_shapes


def install_redactor(fn: Callable[[str], str]) -> None:
    global _redactor
    _redactor = fn


def redact_process_secrets(text: str) -> str:
    """`text` through the process's redactor: every secret value the process knows (once an entry point installed
    tasks.runtime.secrets' `redact_known_secrets`) and every shape; the shapes only before that."""
    return _redactor(text)


def strip_userinfo(url: str) -> str:
    """`url` without its `user:pass@` part (what may be shown, logged or passed as a flow parameter)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_process_secrets(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
