"""Secrets: read inside I/O tasks, known to ONE redactor, never printed.

Every sink (DuckDB rows, rendered text, alerts, artifacts, logs, stderr, route events) calls `redact`, which
removes secrets in two ways:

1. **By value.** Every secret value the process knows: the environment variables in `ENV_SECRETS`, the
   userinfo of `OPENROUTER_BASE_URL`, and every value `register`ed: each `SecretStr` (so every value read from
   the environment or a Prefect Secret block by `read_secret`, and the routes files' key variables), and the
   userinfo of a configured `base_url` (tasks.config registers it). The exact value is masked, also in its
   JSON-escaped and URL-quoted forms, and so is any run of `FRAGMENT_CHARS` or more consecutive characters of
   a value (what is left of a key cut by a length cap: a 15-character prefix, a tail). Values shorter than
   `MIN_VALUE_CHARS` are not redacted by value (they would erase ordinary words); URL userinfo is still
   removed by shape. For a secret that is a URL (a Slack webhook) only the part after the host counts for
   fragments, so an unrelated URL on the same host is left alone.
2. **By shape** (`SHAPES`, the one documented list): Slack webhook URLs, URL userinfo (`scheme://user:pass@`),
   `Authorization:` / `Proxy-Authorization:` / `X-Api-Key:` / `api_key=` values, `bearer <token>` in any case,
   OpenRouter keys `sk-or-…`, OpenAI-style keys `sk-` + 8 or more, Slack tokens `xox?-…` and `xapp-…`.

`MASK` ("***") replaces what is removed. `SecretStr` keeps a value out of reprs, logs and flow parameters.
`RedactingFilter` / `install_log_redaction()` apply `redact` to log records (message, arguments, traceback).
"""

from __future__ import annotations

import json
import logging
import os
import re
import string
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from tasks.errors import ConfigError

MASK = "***"
#: Secret environment variables, read afresh at every `redact` (a test or an admin may change them).
ENV_SECRETS = ("OPENROUTER_API_KEY", "SLACK_BOT_TOKEN", "SLACK_WEBHOOK_URL")
#: Environment variables holding URLs whose userinfo (user:password@) is a secret.
ENV_URLS = ("OPENROUTER_BASE_URL",)
#: Values shorter than this are not redacted by value (shape rules still apply).
MIN_VALUE_CHARS = 6
#: A run of at least this many consecutive characters of a known secret is masked (truncated copies).
FRAGMENT_CHARS = 12

#: Prefect Secret block names consulted when the environment variable is not set.
SECRET_BLOCKS = {
    "OPENROUTER_API_KEY": "openrouter-api-key",
    "SLACK_BOT_TOKEN": "slack-bot-token",
    "SLACK_WEBHOOK_URL": "slack-webhook-url",
}

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

_registered: set[str] = set()
_credentialed_urls: set[str] = set()
_lock = threading.Lock()


class SecretStr:
    """A secret value: shown as '***', and known to the redactor from the moment it exists."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value
        register(value)

    def get(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "'***'"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)


def register(*values: str | SecretStr | None) -> None:
    """Make values known to `redact` for the life of the process (a URL: its userinfo too)."""
    found = {v for value in values for v in _derived(value)}
    if found - _registered:
        with _lock:
            _registered.update(found)


def register_url(url: str) -> None:
    """A URL that is not itself secret (a base URL): only its userinfo becomes known, and the URL is kept
    so that `with_known_userinfo` can give the userinfo back to its stripped form."""
    found = _userinfo_secrets(url)
    if found:
        with _lock:
            _registered.update(found)
            _credentialed_urls.add(url.strip().rstrip("/"))


def _derived(value: str | SecretStr | None) -> set[str]:
    raw = value.get() if isinstance(value, SecretStr) else value
    if not raw or not isinstance(raw, str):
        return set()
    out = {raw}
    out.update(_userinfo_secrets(raw))
    return out


def _userinfo_secrets(url: str) -> set[str]:
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return set()
    if "@" not in parts.netloc:
        return set()
    userinfo = parts.netloc.rpartition("@")[0]
    out = {userinfo}
    if parts.password:
        out.add(parts.password)
    return out


def url_userinfo_secrets(url: str) -> set[str]:
    """The secret parts of a URL's userinfo ('user:pass' and 'pass'); empty when it has none."""
    return _userinfo_secrets(url)


def strip_userinfo(url: str) -> str:
    """`url` without its `user:pass@` part (what may be shown, logged or passed as a flow parameter)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def with_known_userinfo(url: str) -> str:
    """Put back the registered userinfo of a URL that `strip_userinfo` removed (same scheme, host, path).

    How the real `base_url` reaches a flow whose parameter holds only the stripped form (see README)."""
    if "@" in urlsplit(url).netloc:
        return url
    target = url.rstrip("/")
    with _lock:
        candidates = sorted(_credentialed_urls)
    for value in candidates:
        if strip_userinfo(value) == target:
            return value
    return url


_known_cache: tuple[tuple[Any, ...], tuple[str, ...]] | None = None


def known_values(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Every secret value the process knows now (registered ones, the environment's), longest first."""
    global _known_cache
    env = os.environ if env is None else env
    key = (len(_registered), *(env.get(n) for n in (*ENV_SECRETS, *ENV_URLS)))  # the registry only grows
    cached = _known_cache
    if cached is not None and cached[0] == key:
        return cached[1]
    values = set(_registered)
    for name in ENV_SECRETS:
        if env.get(name):
            values.update(_derived(env[name]))
    for name in ENV_URLS:
        if env.get(name):
            values.update(_userinfo_secrets(env[name]))
    known = tuple(sorted((v for v in values if len(v) >= MIN_VALUE_CHARS), key=lambda v: (-len(v), v)))
    _known_cache = (key, known)
    return known


class _ValueMatcher:
    """Compiled patterns for one set of values: exact forms, then fragments of FRAGMENT_CHARS or more."""

    def __init__(self, values: tuple[str, ...]) -> None:
        forms: set[str] = set()
        for v in values:
            forms.add(v)
            forms.add(json.dumps(v)[1:-1])
            forms.add(quote(v, safe=""))
        ordered = sorted(forms, key=lambda f: (-len(f), f))
        self.exact = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self.sources = tuple(_fragment_source(v) for v in values)
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


def _fragment_source(value: str) -> str:
    """The part of a value whose fragments are secret: for a URL, what follows the host."""
    if "://" in value:
        parts = urlsplit(value)
        return urlunsplit(("", "", parts.path, parts.query, parts.fragment))
    return value


_matcher_cache: tuple[tuple[str, ...], _ValueMatcher] | None = None


def _matcher(values: tuple[str, ...]) -> _ValueMatcher:
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


def redact(text: str, *extra: str | SecretStr | None) -> str:
    """`text` with every known secret value (and `extra` values), its long fragments and every secret shape
    replaced by `MASK`. Text without secrets comes back unchanged."""
    if not text:
        return text
    if extra:
        register(*extra)
    return redact_shapes(_matcher(known_values()).sub(text))


def redact_opt(text: str | None) -> str | None:
    return None if text is None else redact(text)


def redact_values(text: str, values: Iterable[str]) -> str:
    """Only the value rules, for exactly `values` (pure: no registry, no environment)."""
    chosen = tuple(sorted({v for v in values if len(v) >= MIN_VALUE_CHARS}, key=lambda v: (-len(v), v)))
    return _ValueMatcher(chosen).sub(text) if chosen else text


def _from_block(block_name: str) -> str | None:
    try:
        from prefect.blocks.system import Secret

        block: Any = Secret.load(block_name, _sync=True)  # type: ignore[call-arg]
        value = block.get()
        return value if isinstance(value, str) and value else None
    except Exception:  # no server, no block, or the block is unreadable: fall through
        return None


def read_secret(
    name: str, *, env: Mapping[str, str] | None = None, use_blocks: bool = True, required: bool = False
) -> SecretStr | None:
    env = os.environ if env is None else env
    value = env.get(name)
    if not value and use_blocks and name in SECRET_BLOCKS:
        value = _from_block(SECRET_BLOCKS[name])
    if not value:
        if required:
            raise ConfigError(
                f"config: {name} is not set (export it, or create the Prefect Secret block "
                f"'{SECRET_BLOCKS.get(name, name.lower())}')"
            )
        return None
    return SecretStr(value)


def preload_secrets(names: Iterable[str] = tuple(SECRET_BLOCKS)) -> None:
    """Read every secret the process may use (environment, else its Prefect Secret block) so that each is
    known to `redact` before the first reply is recorded, not only once the task that needs it runs."""
    for name in names:
        read_secret(name)


# --- logs ---------------------------------------------------------------------------------------------------
#: Loggers whose records are redacted at creation (their children's records go through the handlers' filter
#: and the record factory installed by `install_log_redaction`).
REDACTED_LOGGERS = (
    "canary", "tasks", "flows", "router", "prefect", "prefect.flow_runs", "prefect.task_runs",
    "httpx", "httpcore",
)


class RedactingFilter(logging.Filter):
    """Rewrites a record's message (arguments merged in) and traceback text through `redact`."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "_canary_redacted", False):
            return True
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: keep what we can show
            message = f"{record.msg} {record.args!r}"
        record.msg, record.args = redact(message), ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        record._canary_redacted = True
        return True


_FILTER = RedactingFilter()
_factory_installed = False


def install_log_redaction(extra_loggers: Iterable[str] = ()) -> None:
    """Install `RedactingFilter` on the canary/prefect/httpx loggers, on their handlers and the root's, and in
    the log record factory (so a record of any logger is redacted before any handler sees it). Idempotent;
    call it again after logging is reconfigured (Prefect's dictConfig replaces handlers)."""
    global _factory_installed
    names = (*REDACTED_LOGGERS, *extra_loggers)
    loggers = [logging.getLogger(), *(logging.getLogger(n) for n in names)]
    for logger in loggers:
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
        for handler in logger.handlers:
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)
    if not _factory_installed:
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            _FILTER.filter(record)
            return record

        logging.setLogRecordFactory(factory)
        _factory_installed = True


install_log_redaction()  # from the first import on, in every process that can hold a secret
