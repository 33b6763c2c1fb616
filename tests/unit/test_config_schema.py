"""canary.toml's schema (tasks/config/schema.py) and its one-line adapter (tasks/config/schema_lines.py): the model
holds every file key with CanaryConfig's default, and each kind of fault is told as the line the CLI has always
printed."""

from __future__ import annotations

from dataclasses import fields
from datetime import timedelta

import pytest

from tasks.config import FILE_KEYS, CanaryConfig
from tasks.config.loading import INT_BOUNDS, config_from_mapping
from tasks.config.schema import CanaryFile
from tasks.errors import ConfigError

pytestmark = pytest.mark.unit


def told(raw: dict[str, object]) -> str:
    with pytest.raises(ConfigError) as info:
        config_from_mapping(raw)
    return str(info.value)


def test_the_model_holds_every_file_key_with_the_records_default() -> None:
    assert set(CanaryFile.model_fields) == FILE_KEYS
    defaults = CanaryConfig()
    for f in fields(CanaryConfig):
        if f.name in FILE_KEYS:
            assert CanaryFile.model_fields[f.name].default == getattr(defaults, f.name), f.name
    assert CanaryFile().config() == defaults


def test_integer_bounds_are_read_from_the_model() -> None:
    assert INT_BOUNDS["concurrency"] == (1, 4096) and INT_BOUNDS["min_hosts"] == (0, 1000)
    assert set(INT_BOUNDS) == {n for n, f in CanaryFile.model_fields.items() if f.annotation is int}


@pytest.mark.parametrize(("raw", "line"), [
    ({"concurrency": "12"}, "config: concurrency must be an integer (got '12')"),  # wrong type: what it must be
    ({"concurrency": True}, "config: concurrency must be an integer (got True)"),
    ({"concurrency": 5000}, "config: concurrency must be between 1 and 4096 (got 5000)"),  # a bound: why
    ({"ttft_s": -1}, "config: ttft_s must be a finite number of seconds > 0 (got -1.0)"),
    ({"ttft_s": "8"}, "config: ttft_s must be a number of seconds (got '8')"),
    ({"suspect_uptime_drop": 101}, "config: suspect_uptime_drop must be >= 0 and <= 100 (got 101)"),
    ({"budget_usd_per_day": -1}, "config: budget_usd_per_day must be between 0 and 1e+06, 0 = no budget (got -1)"),
    ({"mode": "loud"}, "config: mode must be 'observe' or 'enforce' (got 'loud')"),  # an enum
    ({"live_source": "file"}, 'config: live_source must be "db" or "prometheus" (got \'file\')'),
    ({"models": ["acme/x", 3]}, "config: models must be a list of strings (got ['acme/x', 3])"),  # the whole list
    ({"ladder": ["1d", "soon"]}, "config: ladder must be a duration like '1d' or '12h' (got 'soon')"),  # an item
    ({"ladder_decay": -2}, "config: ladder_decay must be >= 0 (got -2)"),
    ({"zeta": 1, "alpha": 2, "ttft_s": "x"}, "config: unknown key 'alpha' (known: "),  # unknown keys come first
])
def test_each_kind_of_fault_is_told_in_todays_words(raw: dict[str, object], line: str) -> None:
    assert told(raw).startswith(line)


def test_a_ladder_step_is_shown_as_the_file_wrote_it() -> None:
    """One ladder rule (between keys): the step the file wrote is shown, a default step in the ladder's words."""
    assert told({"ladder": [-1]}).endswith("(got -1)")
    assert told({"ladder": [0.01], "interval_min": 60}).endswith("(interval_min = 1h) (got 0.01)")
    assert told({"interval_min": 2880}).endswith("(interval_min = 2d) (got '1d')")
    assert config_from_mapping({"ladder": ["2h"], "interval_min": 120}).ladder == (timedelta(hours=2),)
