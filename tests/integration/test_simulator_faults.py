"""Every fault kind over a real loopback connection, time compressed (time_scale) so the file runs fast (the protocol
violations: test_simulator_protocol_faults.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import jsonschema
import pytest

from provider_canary.simulator.app import base_url_at
from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.language import detect_language
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from provider_canary.simulator.text import corpus
from tasks.runtime.clock import StepClock
from tests.support.simulator_faults import (
    EN,
    FORMAT,
    MODEL,
    PT,
    SCALE,
    SCHEMA,
    _body,
    _data,
    _stream,
    _text,
    fault_simulator,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
sim = pytest.fixture(scope="module", name="sim")(fault_simulator)


def test_healthy_reply_is_fast_and_complete(sim: SimulatorHandle) -> None:
    lines, err = _stream(sim, _body("healthy"))
    assert err is None and lines[-1][1] == b"data: [DONE]"
    first_data = next(t for t, line in lines if line.startswith(b"data: {"))
    assert first_data < 0.5 and 1 <= sum(line.startswith(b":") for _, line in lines) <= 3
    assert detect_language(_text(lines)) == "pt"


def test_slow_first_token_sends_keepalives_meanwhile(sim: SimulatorHandle) -> None:
    lines, err = _stream(sim, _body("slow"))
    first = next(i for i, (_, line) in enumerate(lines) if line.startswith(b"data: {"))
    assert err is None and all(line == b": OPENROUTER PROCESSING" for _, line in lines[:first])
    assert first >= 6  # one at once, then one every 2 of the 12 simulated seconds
    assert lines[first][0] >= 12 * SCALE * 0.9


def test_role_only_chunk_then_slow_text(sim: SimulatorHandle) -> None:
    lines, err = _stream(sim, _body("roleonly"))
    events = _data(lines)
    assert err is None and events[0]["choices"][0]["delta"] == {"content": "", "role": "assistant"}
    arrivals = [t for t, line in lines if line.startswith(b"data: {")]
    assert arrivals[1] - arrivals[0] >= 12 * SCALE * 0.9


def test_stall_after_headers_sends_nothing(sim: SimulatorHandle) -> None:
    lines, err = _stream(sim, _body("stall"))
    assert lines == [] and isinstance(err, httpx.ReadTimeout)


def test_die_after_tokens_cuts_the_connection(sim: SimulatorHandle) -> None:
    lines, err = _stream(sim, _body("die"))
    assert isinstance(err, httpx.RemoteProtocolError)
    assert len(_data(lines)) == 3 and b"data: [DONE]" not in [line for _, line in lines]


def test_midstream_error_chunk_ends_the_stream(sim: SimulatorHandle) -> None:
    lines, err = _stream(sim, _body("midstream"))
    events = _data(lines)
    assert err is None and len(events) == 3 and lines[-1][1] != b"data: [DONE]"
    assert list(events[-1]) == ["id", "object", "created", "model", "provider", "error", "choices"]
    assert events[-1]["error"] == {
        "code": 429,
        "message": "Rate limit exceeded",
        "metadata": {"error_type": "rate_limit_exceeded"},
    }
    assert events[-1]["choices"] == [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]
    done_lines, _ = _stream(sim, _body("midstreamdone"))
    assert done_lines[-1][1] == b"data: [DONE]" and "error" in _data(done_lines)[-1]


@pytest.mark.parametrize(
    ("tag", "check"),
    [
        ("switch", lambda t, fin: detect_language(t) == "de"),
        ("mojibake", lambda t, fin: "Ã" in t or "Â" in t),
        ("refusal", lambda t, fin: t == corpus()["pt"]["refusal"] and fin == ("stop", "stop")),
        ("filter", lambda t, fin: t == "" and fin == ("content_filter", "SAFETY")),
        ("empty", lambda t, fin: t == "" and fin == ("stop", "stop")),
        ("truncated", lambda t, fin: len(t.split()) == 4 and fin == ("length", "length")),
    ],
)
def test_text_faults(sim: SimulatorHandle, tag: str, check: Any) -> None:
    lines, err = _stream(sim, _body(tag))
    last = _data(lines)[-1]["choices"][0]
    assert err is None and check(_text(lines), (last["finish_reason"], last["native_finish_reason"]))


def test_pin_not_honoured_reports_another_provider(sim: SimulatorHandle) -> None:
    lines, _ = _stream(sim, _body("pin"))
    assert {ev["provider"] for ev in _data(lines)} == {"Healthy"}


def test_structured_replies_healthy_and_broken(sim: SimulatorHandle) -> None:
    healthy = _text(_stream(sim, _body("healthy", response_format=FORMAT))[0])
    jsonschema.validate(json.loads(healthy), SCHEMA)
    with pytest.raises(ValueError):
        json.loads(_text(_stream(sim, _body("invalid", response_format=FORMAT))[0]))
    fenced = _text(_stream(sim, _body("fenced", response_format=FORMAT))[0])
    assert fenced.startswith("```json\n") and fenced.endswith("\n```")
    jsonschema.validate(json.loads(fenced[8:-4]), SCHEMA)
    violating = json.loads(_text(_stream(sim, _body("violation", response_format=FORMAT))[0]))
    with pytest.raises(jsonschema.ValidationError, match="is not one of"):
        jsonschema.validate(violating, SCHEMA)
    # a structured-only fault leaves text replies alone
    assert detect_language(_text(_stream(sim, _body("fenced"))[0])) == "pt"


def test_non_streaming_slow_start_sends_bare_newlines(sim: SimulatorHandle) -> None:
    body = _body("slow", stream=False)
    raw = httpx.post(
        sim.base_url + "/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {sim.api_key}"},
        timeout=5,
    ).content
    assert raw.startswith(b"\n\n") and json.loads(raw)["object"] == "chat.completion"


def test_default_fleet_reproduces_the_two_incidents() -> None:
    openings = {s for lang in corpus().values() for s in lang["sentences"]}
    with start_simulator(time_scale=0.001) as sim:

        def corrupted(tag: str) -> int:
            texts = [_text(_stream(sim, _body(tag, EN, seed=s))[0]) for s in range(20)]
            return sum(not any(t.startswith(o) for o in openings) for t in texts)

        assert corrupted("hyperbolic/fp8") == 19
        assert corrupted("fireworks") == 0
        mixed = _text(_stream(sim, _body("gmicloud/fp8", PT))[0])
        assert any(s in mixed for s in corpus()["es"]["sentences"])
        assert any(s in mixed for s in corpus()["pt"]["sentences"])
        clean = _text(_stream(sim, _body("gmicloud/fp8", EN))[0])
        assert detect_language(clean) == "en" and not any(s in clean for s in corpus()["es"]["sentences"])


def test_set_fleet_and_windows_follow_the_injected_clock() -> None:
    clock = StepClock(datetime(2026, 11, 1, 10, tzinfo=UTC))
    window = {"start": "2026-11-01T12:00:00Z", "end": "2026-11-01T13:00:00Z"}
    fleet = parse_fleet(
        {
            "models": [
                {
                    "id": MODEL,
                    "endpoints": [
                        {
                            "tag": "w",
                            "provider_name": "W",
                            "faults": [{"kind": "empty_reply", "windows": [window]}],
                        }
                    ],
                }
            ]
        }
    )
    with start_simulator(time_scale=0.001, now=clock) as sim:
        sim.set_fleet(fleet)
        assert _text(_stream(sim, _body("w"))[0]) != ""
        clock.advance(timedelta(hours=2, minutes=30))
        assert _text(_stream(sim, _body("w"))[0]) == ""
        clock.advance(timedelta(hours=1))
        assert _text(_stream(sim, _body("w"))[0]) != ""


def test_a_request_under_at_is_served_at_that_simulated_time() -> None:
    """`/at/<unix>/api/v1/...` (provider_canary/demo/pipeline.py): the path's time, not the clock's, picks the faults,
    and the ids' `created`; the clock itself does not move."""
    clock = StepClock(datetime(2026, 11, 1, 10, tzinfo=UTC))
    window = {"start": "2026-11-01T12:00:00Z", "end": "2026-11-01T13:00:00Z"}
    endpoint = {"tag": "w", "provider_name": "W", "faults": [{"kind": "empty_reply", "windows": [window]}]}
    fleet = parse_fleet({"models": [{"id": MODEL, "endpoints": [endpoint]}]})
    inside, after = datetime(2026, 11, 1, 12, 30, tzinfo=UTC), datetime(2026, 11, 1, 13, tzinfo=UTC)
    with start_simulator(fleet, time_scale=0.001, now=clock) as sim:
        at_inside = SimulatorHandle.__new__(SimulatorHandle)  # the same server, another base_url
        at_inside.base_url, at_inside.api_key = base_url_at(sim.base_url, inside), sim.api_key
        lines, _ = _stream(at_inside, _body("w"))
        assert _text(lines) == "" and _data(lines)[0]["created"] == int(inside.timestamp())
        assert _text(_stream(sim, _body("w"))[0]) != ""  # the clock's now (10:00) is outside the window
        at_inside.base_url = base_url_at(sim.base_url, after)  # the window's end is exclusive
        assert _text(_stream(at_inside, _body("w"))[0]) != ""
        listing = httpx.get(base_url_at(sim.base_url, inside) + f"/models/{MODEL}/endpoints", timeout=5)
        assert listing.status_code == 200 and listing.json()["data"]["endpoints"][0]["tag"] == "w"
        assert httpx.get(sim.base_url.replace("/api/v1", "/at/x/api/v1") + "/models", timeout=5).status_code == 404
        with pytest.raises(ValueError):
            base_url_at("http://127.0.0.1:1/v2", inside)
