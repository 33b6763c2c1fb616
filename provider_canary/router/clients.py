"""Who may use the router, and how often (pure; provider_canary/router/access.py is the shell that applies it).

    identify(callers, authorization)     the `Client` whose key the `Authorization: Bearer <key>` holds, else None
    take(bucket, rpm, now)               a client's token bucket after one request: (bucket, None) or (bucket, wait)
    new_key(token)                       a fresh client key (`sk-canary-...`) from random text the caller draws
    client_block(name, key, rpm)         the `[[client]]` block to paste into the routes file
    anonymous_refusal(routes, host)      why the router must not listen on `host` without clients, else None

`identify` hashes the presented key once and compares its digest with every caller's, each with
`hmac.compare_digest` and without stopping at a match, so the time it takes says nothing about which digest, or
how much of one, matched. The key is never kept: only its SHA-256 is compared, and a caller is named by its
`name` (`[[client]]`) or by its route's key (`key:<sha256 prefix>`).

The rate limit is a token bucket per client: it holds `requests_per_minute` tokens and refills at
`requests_per_minute / 60` per second, so a client may burst up to a minute's worth, then keeps the steady rate.
A request takes one token; with none left it waits `(1 - tokens) / rate` seconds (`Retry-After`, rounded up).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
from collections.abc import Sequence
from dataclasses import dataclass

from provider_canary.router.routes import Client, Routes

#: What a fresh key starts with: a secret scanner (and a reader) can tell it from an OpenRouter key.
KEY_PREFIX = "sk-canary-"
#: The digest no key has (all zeros): deploy/routes.toml ships it as a placeholder, so no key passes.
PLACEHOLDER_SHA256 = "0" * 64
_NO_KEY = bytes(32)


def bearer_key(authorization: str | None) -> str | None:
    """The key of an `Authorization: Bearer <key>` header (the scheme in any case), else None."""
    if authorization and authorization[:7].lower() == "bearer ":
        return authorization[7:].strip() or None
    return None


def key_sha256(key: str) -> str:
    """The hex digest a routes file names for `key` (what `printf %s "$KEY" | sha256sum` prints)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def identify(callers: Sequence[Client], authorization: str | None) -> Client | None:
    """The caller whose key the header holds; every digest is compared (constant time, no early exit)."""
    key = bearer_key(authorization)
    presented = hashlib.sha256(key.encode("utf-8")).digest() if key is not None else _NO_KEY
    found: Client | None = None
    for caller in callers:
        if hmac.compare_digest(caller.digest, presented) and key is not None:
            found = caller
    return found


@dataclass(frozen=True, slots=True)
class Bucket:
    """A client's tokens at monotonic time `at` (seconds)."""

    tokens: float
    at: float


def take(bucket: Bucket | None, rpm: int, now: float) -> tuple[Bucket, float | None]:
    """One request against a bucket of `rpm` tokens refilled at `rpm / 60` per second (a new client starts full).
    Returns the bucket after it and None when the request may go, else the unchanged-but-refilled bucket and the
    seconds until a token is there."""
    rate = rpm / 60.0
    if bucket is None:
        tokens = float(rpm)
    else:
        tokens = min(float(rpm), bucket.tokens + max(0.0, now - bucket.at) * rate)
    if tokens >= 1.0:
        return Bucket(tokens - 1.0, now), None
    return Bucket(tokens, now), (1.0 - tokens) / rate


def retry_after(wait_s: float) -> str:
    """A `Retry-After` value: whole seconds, rounded up, at least 1."""
    return str(max(1, math.ceil(wait_s - 1e-9)))


def new_key(token: str) -> str:
    """A client key from url-safe random text (`secrets.token_urlsafe(32)`: 256 bits)."""
    return KEY_PREFIX + token


def client_block(name: str, key: str, rpm: int) -> str:
    """The `[[client]]` block for `key` (only its digest is in it)."""
    limit = (f"requests_per_minute = {rpm}" if rpm else "# requests_per_minute = 600") + (
        "    # 0 or absent = no limit")
    return (f'[[client]]\nname = "{name}"\nkey_sha256 = "{key_sha256(key)}"\n{limit}\n')


def is_loopback(host: str) -> bool:
    """`localhost` or a loopback address (127.0.0.0/8, ::1); a name that must be resolved is not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def anonymous_refusal(routes: Routes, host: str) -> str | None:
    """Without any `[[client]]` the router serves whoever reaches it with the operator's upstream keys: it may
    listen beyond loopback only when `[router] allow_anonymous = true` says so. The one line why, else None."""
    if routes.clients or routes.settings.allow_anonymous or is_loopback(host):
        return None
    return (f"routes: the router would serve anyone who reaches {host} with your upstream keys: add a [[client]] "
            "(`canary router keys add NAME` prints one), listen on 127.0.0.1, or set [router] allow_anonymous = "
            "true if something in front of it checks who asks")
