"""Who may use the router (provider_canary/router/clients.py, the `[[client]]` blocks of
provider_canary/router/routes_loading.py): keys compared by digest in constant time, the token bucket on a step clock,
the block `canary router keys add` prints, and the refusal to listen beyond loopback without clients."""

from __future__ import annotations

import hashlib
import tomllib
from typing import Any

import pytest

import provider_canary.router.clients as clients
from provider_canary.router.clients import (
    Bucket,
    anonymous_refusal,
    client_block,
    identify,
    is_loopback,
    retry_after,
    take,
)
from provider_canary.router.routes import Client
from provider_canary.router.routes_loading import parse_client, parse_routes
from tasks.errors import RoutesError

pytestmark = pytest.mark.unit

TIER = {"base_url": "http://127.0.0.1:1/api/v1", "model": "m/a"}


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def routes_with(**top: Any) -> Any:
    return parse_routes({"route": [{"model": "chat", "tier": [TIER]}], **top})


def test_a_key_is_known_by_its_digest_and_an_unknown_or_absent_one_is_not() -> None:
    a, b = Client("team-a", digest("key-a")), Client("team-b", digest("key-b"))
    assert identify([a, b], "Bearer key-b") is b
    assert identify([a, b], "bearer key-a") is a  # the scheme in any case, as HTTP says
    for header in (None, "", "Bearer ", "Bearer key-c", "key-a", "Basic key-a", "Bearer key-a2"):
        assert identify([a, b], header) is None, header


def test_the_placeholder_digest_matches_no_request_even_one_without_a_key() -> None:
    placeholder = Client("team-a", clients.PLACEHOLDER_SHA256)
    assert identify([placeholder], None) is None and identify([placeholder], "Bearer ") is None


def test_every_digest_is_compared_even_after_a_match(monkeypatch: pytest.MonkeyPatch) -> None:
    """No early exit: the time taken says nothing about which client matched."""
    calls: list[bytes] = []
    real = clients.hmac.compare_digest

    def counting(x: bytes, y: bytes) -> bool:
        calls.append(x)
        return real(x, y)

    monkeypatch.setattr(clients.hmac, "compare_digest", counting)
    callers = [Client(f"c{i}", digest(f"k{i}")) for i in range(5)]
    assert identify(callers, "Bearer k0") is callers[0]
    assert calls == [c.digest for c in callers]


def test_the_token_bucket_bursts_a_minutes_worth_then_keeps_the_rate() -> None:
    bucket: Bucket | None = None
    for _ in range(60):  # rpm 60: a full bucket at the first request
        bucket, wait = take(bucket, 60, 100.0)
        assert wait is None
    bucket, wait = take(bucket, 60, 100.0)
    assert wait == pytest.approx(1.0)
    bucket, wait = take(bucket, 60, 100.5)  # half a token refilled
    assert wait == pytest.approx(0.5)
    bucket, wait = take(bucket, 60, 101.0)
    assert wait is None and bucket.tokens == pytest.approx(0.0)
    bucket, wait = take(bucket, 60, 1000.0)  # never more than rpm tokens, however long it waited
    assert wait is None and bucket.tokens == pytest.approx(59.0)


def test_retry_after_is_whole_seconds_rounded_up_and_at_least_one() -> None:
    assert [retry_after(s) for s in (0.0, 0.2, 1.0, 1.01, 29.5)] == ["1", "1", "1", "2", "30"]


def test_the_printed_block_parses_and_holds_the_keys_digest_never_the_key() -> None:
    key = clients.new_key("abc_DEF-123")
    assert key.startswith("sk-canary-")
    for rpm in (0, 600):
        block = client_block("team-a", key, rpm)
        assert key not in block
        routes = routes_with(**tomllib.loads(block))
        assert routes.clients == (Client("team-a", digest(key), rpm),)
        assert identify(routes.callers, f"Bearer {key}") == routes.clients[0]


def test_a_key_route_is_a_client_too_named_by_its_route_key() -> None:
    routes = parse_routes({
        "client": [{"name": "team-a", "key_sha256": digest("key-a")}],
        "route": [{"model": "chat", "tier": [TIER]}, {"api_key_sha256": digest("key-r"), "tier": [TIER]},
                  {"api_key_sha256": digest("key-a"), "tier": [TIER]}],
    })
    names = [(c.name, c.requests_per_minute) for c in routes.callers]
    assert names == [("team-a", 0), (f"key:{digest('key-r')[:12]}", 0)]  # key-a is team-a's, once


@pytest.mark.parametrize(("raw", "needle"), [
    ({"name": "team a", "key_sha256": "0" * 64}, "client[0].name must be"),
    ({"name": "", "key_sha256": "0" * 64}, "client[0].name must be"),
    ({"name": "t", "key_sha256": "ABC"}, "client[0].key_sha256 must be 64 lower-case hex"),
    ({"name": "t", "key_sha256": "0" * 64, "requests_per_minute": -1}, "requests_per_minute must be an integer"),
    ({"name": "t", "key_sha256": "0" * 64, "requests_per_minute": 1.5}, "requests_per_minute must be an integer"),
    ({"name": "t", "key_sha256": "0" * 64, "key": "sk-x"}, "unknown key 'key'"),
], ids=["space", "empty", "digest", "negative", "float", "the-key-itself"])
def test_a_bad_client_block_is_one_line(raw: dict[str, Any], needle: str) -> None:
    with pytest.raises(RoutesError, match="^routes: ") as caught:
        parse_client(raw, 0)
    assert needle in str(caught.value) and "\n" not in str(caught.value)
    assert "sk-x" not in str(caught.value)


def test_two_clients_may_not_share_a_name_or_a_key() -> None:
    with pytest.raises(RoutesError, match="share the name team-a"):
        routes_with(client=[{"name": "team-a", "key_sha256": "1" * 64}, {"name": "team-a", "key_sha256": "2" * 64}])
    with pytest.raises(RoutesError, match=r"share the key \(a digest\)"):
        routes_with(client=[{"name": "a", "key_sha256": "1" * 64}, {"name": "b", "key_sha256": "1" * 64}])


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.53", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("10.0.0.5", False), ("router.example", False),
])
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_without_clients_only_loopback_unless_anonymous_is_allowed() -> None:
    bare = routes_with()
    assert anonymous_refusal(bare, "127.0.0.1") is None
    refusal = anonymous_refusal(bare, "0.0.0.0")
    assert refusal is not None and "\n" not in refusal and "[[client]]" in refusal and "allow_anonymous" in refusal
    assert anonymous_refusal(routes_with(router={"allow_anonymous": True}), "0.0.0.0") is None
    assert anonymous_refusal(routes_with(client=[{"name": "a", "key_sha256": "1" * 64}]), "0.0.0.0") is None


def test_the_bucket_refills_and_waits_at_its_own_rate() -> None:
    empty = Bucket(0.0, 100.0)  # rpm 120: two tokens a second
    assert take(empty, 120, 100.25) == (Bucket(0.5, 100.25), pytest.approx(0.25))
    assert take(empty, 120, 100.5) == (Bucket(0.0, 100.5), None)


@pytest.mark.parametrize("host", ["X127.0.0.1", "127.0.0.1X", "[127.0.0.1]X"])
def test_a_loopback_address_with_anything_around_it_is_not_loopback(host: str) -> None:
    assert is_loopback(host) is False


def test_the_refusal_and_the_printed_block_word_for_word() -> None:
    assert anonymous_refusal(routes_with(), "0.0.0.0") == (
        "routes: the router would serve anyone who reaches 0.0.0.0 with your upstream keys: add a [[client]] "
        "(`canary router keys add NAME` prints one), listen on 127.0.0.1, or set [router] allow_anonymous = "
        "true if something in front of it checks who asks")
    sha = digest("sk-canary-x")
    assert client_block("team-a", "sk-canary-x", 0) == (
        f'[[client]]\nname = "team-a"\nkey_sha256 = "{sha}"\n# requests_per_minute = 600    # 0 or absent = no limit\n')
    assert client_block("team-a", "sk-canary-x", 60) == (
        f'[[client]]\nname = "team-a"\nkey_sha256 = "{sha}"\nrequests_per_minute = 60    # 0 or absent = no limit\n')
