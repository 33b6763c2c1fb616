"""The tools contract over a real loopback connection: every tool fault of the simulator, streamed and not,
through the real probe client (`tasks.probe.attempt.probe_once` on httpx) and judged by the contract.

The non-streaming form goes through the same client with a transport that turns `"stream": true` into
false in the body, so the probe's JSON-body path (`_read_json_body`) reads a whole `message.tool_calls`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks.config import CanaryConfig
from tasks.core.contracts import tools
from tasks.core.probe_request import build_request
from tasks.core.types import Attempt, Contract, Endpoint, Outcome
from tasks.probe.attempt import probe_once
from tasks.runtime.clock import SystemClock

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

MODEL = "canary-test/tools-70b"
CFG = CanaryConfig(probe_budget_s=10.0, read_timeout_s=5.0, connect_timeout_s=5.0)
FAULTS: dict[str, dict[str, Any]] = {
    "healthy": {},
    "nocall": {"kind": "no_call"},
    "badjson": {"kind": "bad_json_args", "mode": "trailing_comma"},
    "unknown": {"kind": "unknown_tool", "name": "dice_roller"},
    "badargs": {"kind": "schema_violating_args", "mode": "missing_required"},
    "eager": {"kind": "call_when_none_needed"},
    "halfway": {"kind": "schema_violating_args", "mode": "wrong_enum", "rate": 0.5},
}
#: tag -> (outcome, reason, evidence fragment) of the contract over both turns
EXPECTED: dict[str, tuple[Outcome, str, str]] = {
    "healthy": (Outcome.PASS, "ok", "control turn pass ok"),
    "nocall": (Outcome.FAIL, "no_call", "finish_reason (stop)"),
    "badjson": (Outcome.FAIL, "bad_json_args", "roll_dice arguments do not parse"),
    "unknown": (Outcome.FAIL, "unknown_tool", "name (dice_roller) not offered"),
    "badargs": (Outcome.FAIL, "schema_violation", "roll_dice $: 'character' is a required property"),
    "eager": (Outcome.FAIL, "unneeded_call", "control turn: tool_calls (1: roll_dice)"),
}


class NonStreaming(httpx.HTTPTransport):
    """Sends the probe's body with `"stream": false` (everything else untouched)."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.read())
        body["stream"] = False
        content = json.dumps(body).encode()
        headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(content)).encode()))
        rebuilt = httpx.Request(request.method, request.url, headers=headers, content=content)
        rebuilt.extensions = request.extensions
        return super().handle_request(rebuilt)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    endpoints = [
        {
            "tag": tag,
            "provider_name": tag.capitalize(),
            "faults": [spec] if spec else [],
        }
        for tag, spec in FAULTS.items()
    ]
    fleet = parse_fleet({"models": [{"id": MODEL, "endpoints": endpoints}]})
    with start_simulator(fleet, time_scale=0.02) as handle:
        yield handle


@pytest.fixture(scope="module", params=["stream", "json"])
def client(request: pytest.FixtureRequest) -> Iterator[httpx.Client]:
    transport = NonStreaming() if request.param == "json" else None
    with httpx.Client(transport=transport) as c:
        c.headers["x-test-form"] = request.param
        yield c


def endpoint(tag: str) -> Endpoint:
    return Endpoint(MODEL, tag, tag.capitalize(), supported_parameters=("max_tokens", "tools"))


def both_turns(sim: SimulatorHandle, client: httpx.Client, tag: str) -> list[Attempt]:
    return [
        probe_once(
            client,
            base_url=sim.base_url,
            api_key=sim.api_key,
            endpoint=endpoint(tag),
            contract=Contract.TOOLS,
            round_id="it",
            attempt_no=n,
            language=None,
            cfg=CFG,
            clock=SystemClock(),
        )
        for n in (1, 2)
    ]


@pytest.mark.parametrize("tag", sorted(EXPECTED))
def test_each_tool_fault_gets_its_outcome(sim: SimulatorHandle, client: httpx.Client, tag: str) -> None:
    attempts = both_turns(sim, client, tag)
    assert all(a.error_class is None and a.http_status == 200 for a in attempts), attempts
    j = tools.judge(attempts, CFG)
    outcome, reason, evidence = EXPECTED[tag]
    assert (j.outcome, j.reason) == (outcome, reason), j.evidence
    assert evidence in j.evidence


def test_the_two_forms_differ_only_in_framing(sim: SimulatorHandle, client: httpx.Client) -> None:
    call_turn, control_turn = both_turns(sim, client, "healthy")
    streamed = client.headers["x-test-form"] == "stream"
    assert call_turn.chunk_count > 5 if streamed else call_turn.chunk_count == 1
    assert call_turn.finish_reason == "tool_calls" and call_turn.ttft_ms is None
    assert [c.index for c in call_turn.tool_calls] == [0]
    call = call_turn.tool_calls[0]
    assert call.name == "roll_dice" and call.id and call.id.startswith("call_")
    assert isinstance(json.loads(call.arguments), dict)
    assert control_turn.finish_reason == "stop" and control_turn.text.strip() and not control_turn.tool_calls


def test_a_rate_fault_counts_every_tool_request(sim: SimulatorHandle, client: httpx.Client) -> None:
    sim.set_fleet(sim.fleet)  # restart the counters: at rate 0.5 request 0 is clean, request 1 faulty
    call_turns = [both_turns(sim, client, "halfway")[0] for _ in range(2)]  # requests 0 and 2: both clean
    assert [tools.judge([a], CFG).reason for a in call_turns] == ["ok", "ok"]
    sim.set_fleet(sim.fleet)
    clean = probe_call_turn(sim, client, "halfway")
    faulty = probe_call_turn(sim, client, "halfway")
    assert tools.judge([clean], CFG).outcome is Outcome.PASS
    j = tools.judge([faulty], CFG)
    assert (j.outcome, j.reason) == (Outcome.FAIL, "schema_violation")
    assert "$.check: 'not-a-listed-value' is not one of" in j.evidence


def probe_call_turn(sim: SimulatorHandle, client: httpx.Client, tag: str) -> Attempt:
    return probe_once(
        client,
        base_url=sim.base_url,
        api_key=sim.api_key,
        endpoint=endpoint(tag),
        contract=Contract.TOOLS,
        round_id="it",
        attempt_no=1,
        language=None,
        cfg=CFG,
        clock=SystemClock(),
    )


def raw(sim: SimulatorHandle, tag: str, stream: bool) -> httpx.Response:
    body = build_request(Contract.TOOLS, MODEL, tag, None, CFG, attempt_no=1)
    body["stream"] = stream
    headers = {"Authorization": f"Bearer {sim.api_key}"}
    return httpx.post(sim.base_url + "/chat/completions", json=body, headers=headers, timeout=10)


def test_stream_wire_format_follows_the_openrouter_recording(sim: SimulatorHandle) -> None:
    response = raw(sim, "healthy", stream=True)
    assert response.headers["content-type"].startswith("text/event-stream")
    frames = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: {")]
    calls = [f for f in frames if f["choices"][0]["delta"].get("tool_calls")]
    head = calls[0]["choices"][0]["delta"]
    assert list(head) == ["content", "role", "tool_calls"] and head["content"] is None
    assert set(head["tool_calls"][0]) == {"index", "id", "type", "function"}
    assert head["tool_calls"][0]["function"]["arguments"] == ""
    assert all(set(f["choices"][0]["delta"]["tool_calls"][0]) == {"index", "function"} for f in calls[1:])
    assert len(calls) > 3  # arguments split across chunks
    finish = [f for f in frames if f["choices"][0]["finish_reason"]]
    assert finish[0]["choices"][0]["delta"] == {"content": "", "role": "assistant"}
    assert {f["choices"][0]["finish_reason"] for f in finish} == {"tool_calls"}
    assert "usage" in frames[-1] and response.text.endswith("data: [DONE]\n\n")


def test_non_stream_message_carries_whole_calls(sim: SimulatorHandle) -> None:
    body = raw(sim, "healthy", stream=False).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["type"] == "function" and call["function"]["name"] == "roll_dice"
    assert isinstance(json.loads(call["function"]["arguments"]), dict)
