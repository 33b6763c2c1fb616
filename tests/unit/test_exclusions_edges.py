"""Edges of the three exclusion layers (tasks/core/exclusions.py): the merged ignore list whole (model-specific
entries, which service-tier endpoints a slug adds, the reasons and times kept, a tie between two entries), the
layer that excludes each endpoint, and each refusal's one line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tasks.core.exclusions import describe_suspension, excluded_layers, matches, merge_ignore_list, parse_builtin
from tasks.core.types import BuiltinExclusion, EndpointState, IgnoreEntry, Layer, Mode, OperationalExclusion
from tasks.errors import ConfigError

pytestmark = pytest.mark.unit
M = "acme/m"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(hours=2)
TAGS = ["deepinfra/fp8", "deepinfra/priority", "deepinfra/priority/x", "fireworks", "lambda/flex", "novita"]


def test_the_merged_list_whole() -> None:
    builtin = [BuiltinExclusion("deepinfra", "bad quant", "ev", "2026-01-01", model=M),
               BuiltinExclusion("fireworks", "other model only", "ev", "2026-01-01", model="acme/other")]
    operational = [OperationalExclusion("lambda", "maintenance", "ana", NOW, model=M, until=LATER),
                   OperationalExclusion("novita", "first", "ana", NOW, until=LATER),
                   OperationalExclusion("novita", "second", "bo", NOW, until=LATER)]
    states = [EndpointState(M, "fireworks", Mode.ENFORCE, suspended_until=LATER, suspended_at=NOW, ladder_step=2)]
    got = merge_ignore_list(M, TAGS, builtin, operational, states, NOW, evidence={"fireworks": "failed tools"})
    assert got.ignore == ("deepinfra", "deepinfra/priority", "fireworks", "lambda", "lambda/flex", "novita")
    assert got.entries == (
        IgnoreEntry("deepinfra", Layer.BUILTIN, "bad quant"),
        IgnoreEntry("deepinfra/priority", Layer.BUILTIN, "bad quant"),
        IgnoreEntry("fireworks", Layer.CANARY, "canary suspension (ladder step 2): failed tools", LATER),
        IgnoreEntry("lambda", Layer.OPERATIONAL, "maintenance", LATER),
        IgnoreEntry("lambda/flex", Layer.OPERATIONAL, "maintenance", LATER),
        IgnoreEntry("novita", Layer.OPERATIONAL, "first", LATER))


def test_the_layer_that_excludes_each_endpoint_for_this_model_only() -> None:
    builtin = [BuiltinExclusion("deepinfra", "r", "e", "d", model=M)]
    operational = [OperationalExclusion("novita", "r", "ana", NOW, model=M)]
    assert excluded_layers(M, TAGS, builtin, operational, NOW) == {
        "deepinfra/fp8": Layer.BUILTIN, "deepinfra/priority": Layer.BUILTIN, "deepinfra/priority/x": Layer.BUILTIN,
        "novita": Layer.OPERATIONAL}
    assert excluded_layers("acme/other", TAGS, builtin, operational, NOW) == {}


def test_a_tag_entry_covers_only_itself_and_a_round_is_named_by_its_time() -> None:
    assert not matches("deepinfra/fp8", "deepinfra/fp8/priority") and matches("deepinfra", "deepinfra/fp8")
    assert describe_suspension([("tools", "no_call")], ["org@v2/m@2026-12-01T10:00Z"]) == (
        "failed tools (no_call) in rounds 2026-12-01T10:00Z")


@pytest.mark.parametrize(("text", "line"), [
    ("exclusion = [1]", "exclusions: mine.toml: exclusion[0] must be a table"),
    ('[[exclusion]]\ntag = "a"\nwhy = "x"',
     "exclusions: mine.toml: exclusion[0]: unknown key 'why' (known: date, evidence, model, provider, reason, tag)"),
])
def test_each_refusal_names_the_file_and_the_entry(text: str, line: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_builtin(text, "mine.toml")
    assert str(caught.value) == line


def test_a_naive_time_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^exclusions need timezone-aware datetimes \(got datetime"):
        merge_ignore_list(M, TAGS, [], [], [], datetime(2026, 12, 1, 12, 0))


def test_the_file_is_named_exclusions_toml_by_default() -> None:
    with pytest.raises(ConfigError, match=r"^exclusions: exclusions\.toml: exclusion\[0\] must be a table$"):
        parse_builtin("exclusion = [1]")


def test_times_in_the_list_are_utc_whatever_the_local_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    import time
    from datetime import timezone
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        tokyo = LATER.astimezone(timezone(timedelta(hours=9)))
        got = merge_ignore_list(M, TAGS, [], [OperationalExclusion("novita", "r", "ana", NOW, until=tokyo)], [], NOW)
        assert [(e.until, e.until.tzinfo) for e in got.entries] == [(LATER, UTC)]
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
