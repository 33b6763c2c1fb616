"""The suspicion keys (tasks/config/__init__.py): defaults, overrides, and one clear line for a bad value."""

from __future__ import annotations

import pytest

from tasks.config import CanaryConfig
from tasks.config.loading import apply_overrides, config_from_mapping
from tasks.core.suspicion import rules_of
from tasks.errors import ConfigError

pytestmark = pytest.mark.unit


def test_defaults_and_overrides_reach_the_rules() -> None:
    cfg = CanaryConfig()
    assert (cfg.suspect_confirm_after_s, cfg.suspect_window_s, cfg.suspect_min_requests) == (90, 300, 20)
    assert (cfg.suspect_failure_rate, cfg.suspect_uptime_drop, cfg.suspect_cooldown_s) == (0.5, 20.0, 900)
    assert cfg.suspect_peer_margin == 0.3
    tuned = apply_overrides(cfg, {"suspect_failure_rate": "0.3", "suspect_min_requests": "50",
                                "suspect_uptime_drop": "0", "suspect_peer_margin": "0.2"})
    rules = rules_of(tuned)
    assert (rules.failure_rate, rules.min_requests, rules.uptime_drop, rules.peer_margin) == (0.3, 50, 0.0, 0.2)


@pytest.mark.parametrize(("key", "value"), [
    ("suspect_failure_rate", 0), ("suspect_failure_rate", 1.5), ("suspect_failure_rate", "half"),
    ("suspect_uptime_drop", -1), ("suspect_uptime_drop", 101), ("suspect_min_requests", 0),
    ("suspect_peer_margin", -0.1), ("suspect_peer_margin", 1.5), ("suspect_peer_margin", "far"),
    ("suspect_confirm_after_s", 5), ("suspect_window_s", 10), ("suspect_cooldown_s", -1),
])
def test_a_bad_value_is_one_line_naming_the_key(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"^config: {key} ") as err:
        config_from_mapping({key: value})
    assert "\n" not in str(err.value)
