"""Boundaries of the router's tier rules (provider_canary/router/tiers.py) that test_router_tiers.py's values stay clear
of: short cooldowns, a cap of zero, a cooldown renewed to the same instant, and how much of a 404 body is read."""

from __future__ import annotations

import pytest

from provider_canary.router import tiers as t

pytestmark = pytest.mark.unit


def test_cooldowns_under_two_seconds_are_kept() -> None:
    cd = t.cool_down(t.EMPTY_COOLDOWNS, "a", 100.0, 0.5, 300)
    assert dict(cd) == {"a": 100.5} and t.is_cooling(cd, "a", 100.4) and not t.is_cooling(cd, "a", 100.5)
    assert dict(t.cool_down(t.EMPTY_COOLDOWNS, "a", 100.0, 1, 300)) == {"a": 101.0}
    assert dict(t.cool_down(t.EMPTY_COOLDOWNS, "a", 100.0, 30, 1)) == {"a": 101.0}  # a cap of one second


def test_a_cap_of_zero_turns_cooldowns_off() -> None:
    assert t.cool_down(t.EMPTY_COOLDOWNS, "a", 100.0, 30, 0) is t.EMPTY_COOLDOWNS


def test_a_cooldown_renewed_to_the_same_instant_leaves_the_mapping_as_it_was() -> None:
    cd = t.cool_down(t.EMPTY_COOLDOWNS, "a", 0.0, 10, 300)
    assert t.cool_down(cd, "a", 5.0, 5, 300) is cd


MARKER = b"No endpoints found that"  # the words of rule 3, read case-blind


def test_a_404_is_read_in_its_first_4096_bytes() -> None:
    inside = b" " * (4096 - len(MARKER)) + MARKER
    assert t.failover_reason(404, inside) is not None
    beyond = b" " + inside  # the marker's last byte is the 4097th
    assert t.failover_reason(404, beyond) is None
