"""Fleet file parsing, fault rates and windows: pure, no server."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from provider_canary.simulator.faults import FAULT_KINDS, Fault, FaultCounters, Window, fires, select_fault
from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.fleet_file import DEFAULT_FLEET_PATH, load_fleet
from tasks.errors import FleetError

pytestmark = pytest.mark.unit

GOOD: dict[str, Any] = {
    "models": [
        {
            "id": "a/b",
            "endpoints": [
                {"tag": "x/fp8", "provider_name": "X", "quantization": "fp8"},
                {
                    "tag": "y",
                    "provider_name": "Y",
                    "faults": [
                        {"kind": "corrupted_opening", "rate": 0.95},
                        {"kind": "slow_first_token", "delay_s": 3, "windows": [{"hours": [22, 6]}]},
                    ],
                },
            ],
        }
    ]
}


def _bad(path: list[Any], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(GOOD)
    node: Any = data
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


_DELETE = object()
EP = ["models", 0, "endpoints", 1]
FAULT = [*EP, "faults", 0]

BAD_CASES = [
    ("no-models", ["models"], [], "models must be a non-empty list"),
    ("unknown-top-key", ["extra"], 1, "unknown key 'extra'"),
    ("model-id-shape", ["models", 0, "id"], "nope", "models[0].id must look like 'author/slug'"),
    ("missing-tag", [*EP, "tag"], _DELETE, "models[0].endpoints[1].tag must be a non-empty string"),
    ("upper-case-tag", [*EP, "tag"], "Y", "tag must be a lower-case slug"),
    ("duplicate-tag", [*EP, "tag"], "x/fp8", "duplicate tag 'x/fp8'"),
    ("bad-quantization", [*EP, "quantization"], "fp7", "quantization must be one of"),
    ("bad-status", [*EP, "status"], 3, "status must be one of"),
    ("bad-uptime", [*EP, "uptime_last_30m"], 120, "uptime_last_30m must be a percentage"),
    ("bad-price", [*EP, "pricing"], {"prompt": "cheap"}, "pricing.prompt must be a decimal string"),
    ("unknown-endpoint-key", [*EP, "colour"], "red", "endpoints[1]: unknown key 'colour'"),
    ("unknown-kind", [*FAULT, "kind"], "gremlins", "faults[0].kind must be one of"),
    ("rate-too-high", [*FAULT, "rate"], 1.5, "faults[0].rate must be a number between 0 and 1 (got 1.5)"),
    ("rate-bool", [*FAULT, "rate"], True, "rate must be a number between 0 and 1"),
    ("bad-applies-to", [*FAULT, "applies_to"], "images", "applies_to must be one of"),
    ("unknown-param", [*FAULT, "delay_s"], 3, "unknown parameter 'delay_s' for kind 'corrupted_opening'"),
    ("param-type", [*EP, "faults", 1, "delay_s"], "slow", "faults[1].delay_s must be"),
    ("param-negative", [*EP, "faults", 1, "delay_s"], -1, "delay_s must be >= 0"),
    ("bad-hours", [*EP, "faults", 1, "windows", 0, "hours"], [3, 3], "hours must be [from, to]"),
    ("bad-window-time", [*EP, "faults", 1, "windows", 0, "start"], "yesterday", "start must be an ISO-8601"),
]


@pytest.mark.parametrize(
    ("path", "value", "expected"), [c[1:] for c in BAD_CASES], ids=[c[0] for c in BAD_CASES]
)
def test_bad_fleet_names_the_key_and_value(path: list[Any], value: Any, expected: str) -> None:
    with pytest.raises(FleetError) as info:
        parse_fleet(_bad(path, value))
    message = str(info.value)
    assert expected in message
    assert "\n" not in message and message.startswith("fleet: ")


def test_good_fleet_parses_with_defaults() -> None:
    fleet = parse_fleet(GOOD)
    model = fleet.model("a/b")
    assert model is not None and [e.tag for e in model.endpoints] == ["x/fp8", "y"]
    opening, slow = model.endpoints[1].faults
    assert (opening.rate, opening.applies_to, opening.params["prefixes"][0]) == (0.95, "text", '",')
    assert (slow.params["delay_s"], slow.params["keepalive_s"], slow.windows[0].hours) == (3, 2.0, (22, 6))
    assert fleet.providers() == {"x": "X", "y": "Y"}


def test_default_fleet_reproduces_both_incidents() -> None:
    fleet = load_fleet(DEFAULT_FLEET_PATH)
    (model,) = fleet.models
    assert model.id == "meta-llama/llama-3.3-70b-instruct" and len(model.endpoints) >= 14
    kinds = {e.tag: [f.kind for f in e.faults] for e in model.endpoints}
    corrupting = [t for t, k in kinds.items() if "corrupted_opening" in k]
    assert len(corrupting) == 1
    (bad,) = [e for e in model.endpoints if e.tag == corrupting[0]]
    assert bad.faults[0].rate == 0.95
    mixers = [
        e
        for e in model.endpoints
        if any(f.kind == "language_mix" and "pt" in f.params["only_from"] for f in e.faults)
    ]
    assert len(mixers) == 1
    healthy = [t for t, k in kinds.items() if not k]
    assert len(healthy) >= 7
    for kind in (
        "slow_first_token",
        "http_error_before_stream",
        "die_after_tokens",
        "content_filter",
        "refusal",
    ):
        assert any(kind in k for k in kinds.values()), kind


def test_load_fleet_reports_bad_toml_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text("[[models]\nid = 1\n", encoding="utf-8")
    with pytest.raises(FleetError, match=r"^fleet: .* is not valid TOML"):
        load_fleet(path)
    with pytest.raises(FleetError, match="cannot read"):
        load_fleet(tmp_path / "missing.toml")


@pytest.mark.parametrize(("rate", "faulty_of_20"), [(0.95, 19), (0.5, 10), (1.0, 20), (0.0, 0), (0.05, 1)])
def test_rates_are_exact_and_deterministic(rate: float, faulty_of_20: int) -> None:
    pattern = [fires(n, rate) for n in range(40)]
    assert sum(pattern[:20]) == faulty_of_20 and pattern[:20] == pattern[20:]


def test_rate_095_first_request_is_the_clean_one() -> None:
    assert [fires(n, 0.95) for n in range(3)] == [False, True, True]


def test_windows_gate_faults_by_simulated_time() -> None:
    night = Window(hours=(22, 6))
    assert night.is_active(datetime(2026, 11, 1, 23, tzinfo=UTC))
    assert night.is_active(datetime(2026, 11, 2, 5, 59, tzinfo=UTC))
    assert not night.is_active(datetime(2026, 11, 2, 12, tzinfo=UTC))
    span = Window(start=datetime(2026, 11, 1, tzinfo=UTC), end=datetime(2026, 11, 2, tzinfo=UTC))
    assert span.is_active(datetime(2026, 11, 1, 10, tzinfo=UTC))
    assert not span.is_active(datetime(2026, 11, 2, tzinfo=UTC))


def test_select_fault_respects_applies_to_windows_and_counters() -> None:
    faults = (
        Fault("fenced_json", 0.5, "structured", FAULT_KINDS["fenced_json"].params),
        Fault("schema_violation", 1.0, "structured", {"mode": "missing_required"}),
        Fault("refusal", 1.0, "text", {"text": ""}, (Window(hours=(0, 12)),)),
    )
    counters = FaultCounters()
    morning, evening = datetime(2026, 11, 1, 9, tzinfo=UTC), datetime(2026, 11, 1, 18, tzinfo=UTC)

    def pick(structured: bool, now: datetime) -> str | None:
        chosen = select_fault(
            "m", "t", faults, structured=structured, stream=True, now=now, language="en", counters=counters
        )
        return chosen.kind if chosen else None

    assert [pick(True, morning) for _ in range(4)] == [
        "schema_violation",
        "fenced_json",
        "schema_violation",
        "fenced_json",
    ]
    assert pick(False, morning) == "refusal"
    assert pick(False, evening) is None


def test_language_mix_only_for_listed_prompt_languages() -> None:
    faults = (Fault("language_mix", 1.0, "text", {"with": "es", "only_from": ["pt"]}),)
    counters = FaultCounters()
    now = datetime(2026, 11, 1, tzinfo=UTC)

    def pick(lang: str) -> Fault | None:
        return select_fault(
            "m", "t", faults, structured=False, stream=True, now=now, language=lang, counters=counters
        )

    assert pick("pt") is not None
    assert pick("en") is None and pick("es") is None
