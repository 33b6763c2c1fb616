"""Golden tests of the tools contract from real simulator streams (tests/data/record_tool_attempts.py).

Each fixture holds both turns (call turn, control turn) recorded through the real probe client and the
outcome/reason its fault must get, declared by hand in the recorder. The round judge runs here as in a round.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tasks.config import CanaryConfig
from tasks.core.judge import judge_round
from tasks.core.types import Attempt, Contract, Endpoint, ErrorClass, ToolCall, Usage

pytestmark = pytest.mark.unit
RECORDED = Path(__file__).parents[2] / "data" / "recorded" / "tools"
FIXTURES = sorted(RECORDED.glob("*.json"))


def attempt_from_json(raw: dict[str, Any]) -> Attempt:
    raw = dict(raw)
    raw["contract"] = Contract(raw["contract"])
    raw["started_at"] = datetime.fromisoformat(raw["started_at"])
    raw["usage"] = Usage(**raw["usage"])
    raw["error_class"] = ErrorClass(raw["error_class"]) if raw["error_class"] else None
    raw["tool_calls"] = tuple(ToolCall(**c) for c in raw["tool_calls"])
    return Attempt(**raw)


def load(path: Path) -> tuple[dict[str, Any], list[Attempt]]:
    fx = json.loads(path.read_text(encoding="utf-8"))
    return fx, [attempt_from_json(a) for a in fx["attempts"]]


def test_every_outcome_and_fail_kind_is_covered() -> None:
    expected = {tuple(json.loads(p.read_text())["expect"].values()) for p in FIXTURES}
    assert {
        ("pass", "ok"),
        ("fail", "no_call"),
        ("fail", "bad_json_args"),
        ("fail", "unknown_tool"),
        ("fail", "schema_violation"),
        ("fail", "unneeded_call"),
        ("inconclusive", "truncated"),
        ("transport", "http_429"),
    } <= expected


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_recorded_tools_turns_get_their_expected_outcome(path: Path) -> None:
    fx, attempts = load(path)
    assert [a.attempt_no for a in attempts] == [1, 2]
    a = attempts[0]
    endpoint = Endpoint(
        model=a.model, tag=a.tag, provider_name=a.provider_name, supported_parameters=("tools",)
    )
    results = [r for r in judge_round(attempts, [endpoint], CanaryConfig()) if r.contract is Contract.TOOLS]
    assert len(results) == 1
    r = results[0]
    assert (str(r.outcome), r.reason) == (fx["expect"]["outcome"], fx["expect"]["reason"]), r.evidence
    assert r.attempt_ids == tuple(x.attempt_id for x in attempts)


def test_the_schema_violation_evidence_is_the_path() -> None:
    _, attempts = load(RECORDED / "tools_schema_violating_args_nested.json")
    endpoint = Endpoint(
        attempts[0].model, attempts[0].tag, attempts[0].provider_name, supported_parameters=("tools",)
    )
    r = next(r for r in judge_round(attempts, [endpoint], CanaryConfig()) if r.contract is Contract.TOOLS)
    assert "roll_dice $.dice." in r.evidence and "is not of type 'integer'" in r.evidence


def test_a_healthy_recording_streamed_its_arguments_in_pieces() -> None:
    _, (call_turn, control_turn) = load(RECORDED / "tools_healthy.json")
    assert call_turn.finish_reason == "tool_calls" and call_turn.chunk_count > 5
    assert [c.name for c in call_turn.tool_calls] == ["roll_dice"]
    assert call_turn.tool_calls[0].id and call_turn.tool_calls[0].id.startswith("call_")
    assert control_turn.tool_calls == () and control_turn.text.strip()
