"""Pure tier ordering and cooldowns (provider_canary/router/tiers.py); its status classes and Retry-After parser are the
shared ones (tests/unit/test_wire_rules.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provider_canary.router import tiers as t

pytestmark = pytest.mark.unit



def test_walk_order_keeps_key_order_and_defers_cooling_tiers_to_the_end() -> None:
    ids = ["a", "b", "c"]
    assert t.walk_order(ids, t.EMPTY_COOLDOWNS, 100.0) == (0, 1, 2)
    cooling = t.cool_down(t.EMPTY_COOLDOWNS, "a", 100.0, 30, 300)
    assert t.walk_order(ids, cooling, 110.0) == (1, 2, 0)
    assert t.walk_order(ids, cooling, 130.0) == (0, 1, 2)  # cooled down exactly at 130


@given(
    n=st.integers(min_value=1, max_value=6),
    cooling=st.sets(st.integers(min_value=0, max_value=5)),
)
def test_walk_order_is_a_permutation_that_never_reorders_within_a_group(n: int, cooling: set[int]) -> None:
    ids = [f"u{i}" for i in range(n)]
    cd: t.Cooldowns = t.EMPTY_COOLDOWNS
    for i in cooling:
        cd = t.cool_down(cd, f"u{i}", 0.0, 10, 300)
    order = t.walk_order(ids, cd, 5.0)
    assert sorted(order) == list(range(n))
    ready = [i for i in order if i not in cooling]
    late = [i for i in order if i in cooling]
    assert order == tuple(ready + late) and ready == sorted(ready) and late == sorted(late)


def test_cool_down_is_capped_and_never_shortened() -> None:
    cd = t.cool_down(t.EMPTY_COOLDOWNS, "a", 0.0, 10_000, 300)
    assert cd["a"] == 300.0
    assert t.cool_down(cd, "a", 1.0, 5, 300)["a"] == 300.0
    assert t.cool_down(cd, "b", 0.0, None, 300) is cd
    assert t.cool_down(cd, "b", 0.0, 0, 300) is cd


def test_shortest_wait_and_prune() -> None:
    cd = t.cool_down(t.cool_down(t.EMPTY_COOLDOWNS, "a", 0.0, 10, 300), "b", 0.0, 4, 300)
    assert t.shortest_wait(cd, ["a", "b"], 1.0) == 3.0
    assert t.shortest_wait(cd, ["c"], 1.0) is None
    assert dict(t.prune(cd, 5.0)) == {"a": 10.0}


NO_ALLOWED = b'{"error":{"message":"No allowed providers are available for the selected model.","code":404}}'


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (404, NO_ALLOWED, "no_allowed_providers"),
        (404, b'{"error":{"message":"No endpoints found for acme/x.","code":404}}', None),
        (400, NO_ALLOWED, None),
        (429, b"", "http_429"),
        (503, b"", "http_503"),
    ],
    ids=["no-allowed-providers", "other-404", "400", "429", "503"],
)
def test_failover_reason(status: int, body: bytes, reason: str | None) -> None:
    found = t.failover_reason(status, body)
    assert (str(found) if found is not None else None) == reason


@pytest.mark.parametrize(
    ("provider", "skipped"),
    [
        ({"order": ["lambda/fp8"], "allow_fallbacks": False, "ignore": ["lambda/fp8"]}, True),
        ({"order": ["lambda/fp8"], "allow_fallbacks": False, "ignore": ["lambda"]}, True),  # base slug
        ({"order": ["Lambda/FP8"], "allow_fallbacks": False, "ignore": ["lambda/fp8"]}, True),
        ({"order": ["lambda"], "allow_fallbacks": False, "ignore": ["lambda/fp8"]}, False),  # other variants
        ({"order": ["lambda/fp8"], "ignore": ["lambda/fp8"]}, False),  # fallbacks allowed
        ({"order": ["a", "b"], "allow_fallbacks": False, "ignore": ["a"]}, False),
        ({"only": ["a", "b"], "ignore": ["b", "a"]}, True),
        ({"only": ["a"], "ignore": []}, False),
        ({"order": [], "allow_fallbacks": False, "ignore": ["a"]}, False),
        (None, False),
    ],
)
def test_a_tier_is_skipped_only_when_every_pinned_provider_is_ignored(
    provider: dict[str, object] | None, skipped: bool
) -> None:
    assert t.pinned_all_excluded(provider) is skipped
