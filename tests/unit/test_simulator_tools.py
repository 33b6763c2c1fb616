"""The simulator's tool calling (provider_canary/simulator/tools.py, plan.py, wire.py), pure: which turn needs a call,
what each tool fault does to it, and how calls are framed."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from provider_canary.simulator import catalog_wire, wire
from provider_canary.simulator import tools as sim_tools
from provider_canary.simulator.faults import FAULT_KINDS, Fault
from provider_canary.simulator.fleet_file import load_fleet
from provider_canary.simulator.plan import has_tools, plan_reply
from tasks.config import CanaryConfig
from tasks.core.probe_request import build_request
from tasks.core.tool_prompts import tool_schemas
from tasks.core.types import Contract

pytestmark = pytest.mark.unit
FLEET = load_fleet("provider_canary/simulator/fleets/tools.toml")
MODEL = FLEET.models[0]


def body(attempt_no: int = 1, **more: Any) -> dict[str, Any]:
    b = build_request(Contract.TOOLS, MODEL.id, "fireworks", None, CanaryConfig(), attempt_no=attempt_no)
    b.update(more)
    return b


def plan(kind: str | None, attempt_no: int = 1, **params: Any) -> Any:
    fault = None
    if kind:
        spec = FAULT_KINDS[kind]
        fault = Fault(kind, 1.0, spec.applies_to, {k: p.default for k, p in spec.params.items()} | params)
    return plan_reply(body(attempt_no), MODEL, MODEL.endpoints[0], fault, 7)


def user(b: dict[str, Any]) -> str:
    return str(b["messages"][-1]["content"])


def test_the_call_turn_wants_roll_dice_and_the_control_turn_nothing() -> None:
    assert sim_tools.wanted_tool(body(1), user(body(1))) == "roll_dice"
    assert sim_tools.wanted_tool(body(2), user(body(2))) is None
    assert has_tools(body(1)) and not has_tools({"messages": []})


def test_tool_choice_overrides_the_words() -> None:
    assert sim_tools.wanted_tool(body(1, tool_choice="none"), user(body(1))) is None
    forced = {"type": "function", "function": {"name": "lookup_rule"}}
    assert sim_tools.wanted_tool(body(2, tool_choice=forced), user(body(2))) == "lookup_rule"
    assert sim_tools.wanted_tool(body(2, tool_choice="required"), user(body(2))) == "roll_dice"


def test_a_healthy_call_is_valid_against_the_offered_schema() -> None:
    p = plan(None)
    assert (p.finish_reason, p.content, p.pieces) == ("tool_calls", "", ())
    (call,) = p.tool_calls
    assert call.name == "roll_dice" and call.id.startswith("call_") and len(call.id) == 29
    jsonschema.validate(json.loads(call.arguments), tool_schemas()["roll_dice"])
    assert "".join(call.pieces) == call.arguments and len(call.pieces) > 3


def test_the_healthy_control_turn_is_prose() -> None:
    p = plan(None, attempt_no=2)
    assert p.tool_calls == () and p.finish_reason == "stop" and len(p.content) > 100


@pytest.mark.parametrize(
    ("kind", "params", "check"),
    [
        ("no_call", {}, lambda p: p.tool_calls == () and p.finish_reason == "stop" and p.content),
        ("bad_json_args", {"mode": "trailing_comma"}, lambda p: p.tool_calls[0].arguments.endswith(",}")),
        ("unknown_tool", {}, lambda p: p.tool_calls[0].name == "functions.roll_dice"),
        ("unknown_tool", {"name": "dice"}, lambda p: p.tool_calls[0].name == "dice"),
        (
            "schema_violating_args",
            {"mode": "nested"},
            lambda p: isinstance(json.loads(p.tool_calls[0].arguments)["dice"]["count"], list),
        ),
        (
            "schema_violating_args",
            {"mode": "missing_required"},
            lambda p: "character" not in json.loads(p.tool_calls[0].arguments),
        ),
        ("truncated", {}, lambda p: p.tool_calls == () and p.finish_reason == "length"),
        ("call_when_none_needed", {}, lambda p: p.tool_calls[0].name == "roll_dice"),  # call turn: as healthy
    ],
)
def test_call_turn_faults(kind: str, params: dict[str, Any], check: Any) -> None:
    assert check(plan(kind, **params))


def test_schema_faults_break_the_schema_and_json_faults_the_json() -> None:
    schema = tool_schemas()["roll_dice"]
    for mode in ("missing_required", "wrong_enum", "wrong_type", "extra_key", "nested"):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(
                json.loads(plan("schema_violating_args", mode=mode).tool_calls[0].arguments), schema
            )
    for mode in ("truncated", "trailing_comma", "single_quotes"):
        with pytest.raises(ValueError):
            json.loads(plan("bad_json_args", mode=mode).tool_calls[0].arguments)


def test_control_turn_faults() -> None:
    assert plan("call_when_none_needed", attempt_no=2).tool_calls[0].name == "roll_dice"
    for kind in ("no_call", "bad_json_args", "unknown_tool", "schema_violating_args"):
        assert plan(kind, attempt_no=2).tool_calls == ()  # nothing to break when no call is made


def test_tool_faults_apply_to_tool_requests_only_and_text_faults_not_to_them() -> None:
    tool_fault = Fault("no_call", 1.0, FAULT_KINDS["no_call"].applies_to)
    assert tool_fault.applies(structured=False, stream=True, tools=True)
    assert not tool_fault.applies(structured=False, stream=True, tools=False)
    text_fault = Fault("refusal", 1.0, FAULT_KINDS["refusal"].applies_to)
    assert not text_fault.applies(structured=False, stream=True, tools=True)
    assert Fault("http_error_before_stream", 1.0, "all").applies(structured=False, stream=True, tools=True)


def test_stream_deltas_follow_the_recording() -> None:
    (call,) = plan(None).tool_calls
    deltas = wire.tool_call_deltas((call,))
    assert deltas[0] == {
        "index": 0,
        "id": call.id,
        "type": "function",
        "function": {"name": "roll_dice", "arguments": ""},
    }
    assert deltas[1] == {"index": 0, "function": {"arguments": ""}}
    assert "".join(d["function"]["arguments"] for d in deltas) == call.arguments
    frame = wire.tool_call_chunk(wire.chunk_head("gen-1-x", 1, MODEL.id, "Fireworks"), None, deltas[2])
    assert wire.dumps(frame["choices"][0]["delta"]).startswith(
        '{"content":null,"role":"assistant","tool_calls":['
    )


def test_endpoints_list_tools_only_where_the_fleet_says() -> None:
    listed = {
        e["tag"]: e["supported_parameters"]
        for e in catalog_wire.endpoints_payload(MODEL, authenticated=True)["data"]["endpoints"]
    }
    assert "tools" in listed["novita"] and "tools" not in listed["lepton"]
    assert "tools" in catalog_wire.model_entry(MODEL)["supported_parameters"]
