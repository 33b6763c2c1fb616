"""Exclusion layers: exclusions.toml validation, tag matching, the merged ignore list, request preferences."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tasks.core.exclusions import (
    excluded_layers,
    load_builtin,
    matches,
    merge_ignore_list,
    merge_provider_preferences,
    parse_builtin,
    provider_preferences,
)
from tasks.core.types import (
    BuiltinExclusion,
    EndpointState,
    IgnoreEntry,
    IgnoreList,
    Layer,
    Mode,
    OperationalExclusion,
)
from tasks.errors import ConfigError

pytestmark = pytest.mark.unit

M = "meta-llama/llama-3.3-70b-instruct"
NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[2]
ENTRY = 'tag = "deepinfra/fp8"\nreason = "r"\nevidence = "e"\ndate = "2026-10-30"\n'


# -- exclusions.toml -----------------------------------------------------------------------------------------
def test_shipped_file_loads() -> None:
    assert isinstance(load_builtin(REPO / "tasks" / "exclusions.toml"), list)


def test_shipped_examples_parse_when_uncommented() -> None:
    text = (REPO / "tasks" / "exclusions.toml").read_text(encoding="utf-8")
    block = text[text.index("# [[exclusion]]") :]
    entries = parse_builtin(re.sub(r"^# ?", "", block, flags=re.M))
    assert [(e.tag, e.model, e.date) for e in entries] == [
        ("examplehost/fp4", M, "2026-10-28"),
        ("examplemixer", None, "2026-10-30"),
    ]
    assert all(e.reason and e.evidence for e in entries)


def test_parse_valid_entries() -> None:
    text = (
        f'[[exclusion]]\n{ENTRY}model = "{M}"\n\n[[exclusion]]\nprovider = "novita"\nreason = " x "\n'
        'evidence = "y"\ndate = 2026-10-31\n'
    )
    assert parse_builtin(text) == [
        BuiltinExclusion(tag="deepinfra/fp8", reason="r", evidence="e", date="2026-10-30", model=M),
        BuiltinExclusion(tag="novita", reason="x", evidence="y", date="2026-10-31"),
    ]
    assert parse_builtin("") == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[exclusion]\n", "not valid TOML"),
        ("[exclusions]\n", "unknown top-level key 'exclusions'"),
        ("exclusion = 3\n", "array of tables"),
        (f"[[exclusion]]\n{ENTRY}color = 'red'\n", r"exclusion\[0\]: unknown key 'color'"),
        (
            "[[exclusion]]\nreason = 'r'\nevidence = 'e'\ndate = '2026-10-30'\n",
            "exactly one of 'tag' or 'provider'",
        ),
        (f"[[exclusion]]\n{ENTRY}provider = 'x'\n", "exactly one of"),
        (
            "[[exclusion]]\ntag = 'DeepInfra'\nreason = 'r'\nevidence = 'e'\ndate = '2026-10-30'\n",
            "lower-case",
        ),
        ("[[exclusion]]\nprovider = 'a/b'\nreason = 'r'\nevidence = 'e'\ndate = '2026-10-30'\n", "base slug"),
        ("[[exclusion]]\ntag = 'x'\nreason = ''\nevidence = 'e'\ndate = '2026-10-30'\n", "reason must be"),
        ("[[exclusion]]\ntag = 'x'\nreason = 'r'\ndate = '2026-10-30'\n", "evidence must be"),
        (
            "[[exclusion]]\ntag = 'x'\nreason = 'r'\nevidence = 'e'\ndate = '30/10/2026'\n",
            "date must be YYYY-MM-DD",
        ),
        ("[[exclusion]]\ntag = 'x'\nreason = 'r'\nevidence = 'e'\ndate = '2026-02-30'\n", "date must be"),
        ("[[exclusion]]\ntag = 'x'\nreason = 'r'\nevidence = 'e'\n", "date must be"),
        (f"[[exclusion]]\n{ENTRY}model = 'llama'\n", "model must look like"),
        (f"[[exclusion]]\n{ENTRY}\n[[exclusion]]\ntag = 'y'\n", r"exclusion\[1\]: reason"),
    ],
)
def test_bad_file_names_entry_and_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        parse_builtin(text, "exclusions.toml")
    assert "\n" not in str(info.value) and str(info.value).startswith("exclusions: ")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_builtin(tmp_path / "nope.toml")


# -- matching ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("entry", "endpoint", "expected"),
    [
        ("deepinfra", "deepinfra", True),
        ("deepinfra", "deepinfra/fp8", True),
        ("deepinfra", "deepinfra-x/fp8", False),
        ("deepinfra/fp8", "deepinfra/fp8", True),
        ("deepinfra/fp8", "deepinfra", False),
        ("deepinfra/fp8", "deepinfra/fp4", False),
        ("DeepInfra", "deepinfra/turbo", True),
        ("novita", "deepinfra", False),
    ],
)
def test_matches(entry: str, endpoint: str, expected: bool) -> None:
    assert matches(entry, endpoint) is expected


# -- merging -------------------------------------------------------------------------------------------------
def suspended(
    tag: str, mode: Mode = Mode.ENFORCE, until: datetime = NOW + timedelta(hours=1), model: str = M
) -> EndpointState:
    return EndpointState(
        model=model, tag=tag, mode=mode, suspended_until=until, suspended_at=NOW, ladder_step=1
    )


def test_merge_union_sorted_with_layers() -> None:
    builtin = [
        BuiltinExclusion("novita", "bad json", "ev", "2026-10-01"),
        BuiltinExclusion("other/x", "other model", "ev", "2026-10-01", model="a/b"),
    ]
    operational = [
        OperationalExclusion(
            "fireworks/fast", "incident 42", "alice", NOW - timedelta(hours=1), until=NOW + timedelta(hours=2)
        ),
        OperationalExclusion("chutes", "expired", "bob", NOW - timedelta(days=2), until=NOW),
        OperationalExclusion("novita", "also novita", "bob", NOW, model=M),
    ]
    canary = {
        "deepinfra/fp8": suspended("deepinfra/fp8"),
        "x": suspended("x", until=NOW),
        "y": suspended("y", mode=Mode.OBSERVE),
        "z": suspended("z", model="a/b"),
        "w": EndpointState(model=M, tag="w", mode=Mode.ENFORCE),
    }
    got = merge_ignore_list(
        M, ["novita", "deepinfra/fp8", "chutes", "x", "y", "z", "w"], builtin, operational, canary, NOW
    )
    assert got == IgnoreList(
        model=M,
        ignore=("deepinfra/fp8", "fireworks/fast", "novita"),
        entries=(
            IgnoreEntry(
                "deepinfra/fp8", Layer.CANARY, "canary suspension (ladder step 1)", NOW + timedelta(hours=1)
            ),
            IgnoreEntry("fireworks/fast", Layer.OPERATIONAL, "incident 42", NOW + timedelta(hours=2)),
            IgnoreEntry("novita", Layer.BUILTIN, "bad json", None),
            IgnoreEntry("novita", Layer.OPERATIONAL, "also novita", None),
        ),
    )
    assert got.as_json()["ignore"] == ["deepinfra/fp8", "fireworks/fast", "novita"]


def test_canary_states_may_be_a_list_and_duplicates_keep_the_longest() -> None:
    ops = [
        OperationalExclusion("a", "short", "x", NOW, until=NOW + timedelta(hours=1)),
        OperationalExclusion("a", "forever", "x", NOW),
        OperationalExclusion("a", "long", "x", NOW, until=NOW + timedelta(days=1)),
    ]
    got = merge_ignore_list(M, [], [], ops, [suspended("b")], NOW)
    assert got.ignore == ("a", "b")
    assert [(e.tag, e.reason) for e in got.entries] == [
        ("a", "forever"),
        ("b", "canary suspension (ladder step 1)"),
    ]


def test_slug_entry_names_discovered_service_tier_endpoints() -> None:
    builtin = [BuiltinExclusion("openai", "r", "e", "2026-10-01")]
    got = merge_ignore_list(
        M, ["openai", "openai/priority", "openai/fp8", "google-vertex/flex"], builtin, [], {}, NOW
    )
    assert got.ignore == ("openai", "openai/priority")


def test_observe_states_never_reach_the_list() -> None:
    states = {t: suspended(t, mode=Mode.OBSERVE) for t in ("a", "b", "c")}
    assert merge_ignore_list(M, list(states), [], [], states, NOW).ignore == ()


def test_naive_now_is_refused() -> None:
    with pytest.raises(ValueError):
        merge_ignore_list(M, [], [], [], {}, datetime(2026, 1, 1))


def test_excluded_layers_for_the_policy() -> None:
    builtin = [BuiltinExclusion("deepinfra", "r", "e", "2026-10-01")]
    ops = [
        OperationalExclusion("deepinfra/fp8", "r", "a", NOW),
        OperationalExclusion("novita", "r", "a", NOW),
        OperationalExclusion("chutes", "r", "a", NOW, until=NOW - timedelta(seconds=1)),
        OperationalExclusion("groq", "r", "a", NOW, model="a/b"),
    ]
    got = excluded_layers(
        M, ["deepinfra/fp8", "deepinfra", "novita/fp8", "chutes", "groq", "fireworks"], builtin, ops, NOW
    )
    assert got == {
        "deepinfra": Layer.BUILTIN,
        "deepinfra/fp8": Layer.BUILTIN,
        "novita/fp8": Layer.OPERATIONAL,
    }


# -- request preferences -------------------------------------------------------------------------------------
IGNORE = IgnoreList(model=M, ignore=("deepinfra/fp8", "novita"), entries=())


def test_provider_preferences() -> None:
    assert provider_preferences(IGNORE) == {"ignore": ["deepinfra/fp8", "novita"]}
    assert provider_preferences(IgnoreList(M, (), ())) == {"ignore": []}


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        (None, {"ignore": ["deepinfra/fp8", "novita"]}),
        ({}, {"ignore": ["deepinfra/fp8", "novita"]}),
        (
            {"ignore": ["zeta", "novita"], "allow_fallbacks": True},
            {"ignore": ["zeta", "novita", "deepinfra/fp8"], "allow_fallbacks": True},
        ),
        (
            {"ignore": "zeta", "sort": "price"},
            {"ignore": ["zeta", "deepinfra/fp8", "novita"], "sort": "price"},
        ),
    ],
)
def test_merge_provider_preferences(existing: dict[str, object] | None, expected: dict[str, object]) -> None:
    before = None if existing is None else dict(existing)
    assert merge_provider_preferences(existing, IGNORE) == expected
    assert existing == before  # the caller's object is not modified


def test_describe_suspension_groups_reasons_by_contract() -> None:
    from tasks.core.exclusions import describe_suspension

    text = describe_suspension(
        [("structured", "schema_violation"), ("structured", "fenced_json"), ("language", "language_mix")],
        ["m/a@2026-12-03T06:00:00Z", "m/a@2026-12-03T06:30:00Z"],
    )
    assert text == ("failed language (language_mix), structured (fenced_json, schema_violation)"
                    " in rounds 2026-12-03T06:00:00Z, 2026-12-03T06:30:00Z")
    assert describe_suspension([], []) == "failed"
