"""Every fault kind over a real loopback connection, time compressed (time_scale) so the file runs fast."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import jsonschema
import pytest

from simulator.app import base_url_at
from simulator.fleet import parse_fleet
from simulator.language import detect_language
from simulator.server import SimulatorHandle, start_simulator
from simulator.text import corpus
from tasks.clock import StepClock

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

MODEL = "meta-llama/llama-3.3-70b-instruct"
SCALE = 0.02
PT = "Continue a cena na taverna, por favor. Ela está esperando você perto da lareira."
EN = "Continue the scene at the inn, please. She is waiting for you by the fire."
SCHEMA = {
    "type": "object",
    "properties": {
        "line": {"type": "string"},
        "mood": {"type": "string", "enum": ["calm", "tense"]},
        "intensity": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "required": ["line", "mood", "intensity"],
    "additionalProperties": False,
}
FORMAT = {"type": "json_schema", "json_schema": {"name": "reply", "strict": True, "schema": SCHEMA}}

FAULTS: dict[str, dict[str, Any]] = {
    "healthy": {},
    "slow": {"kind": "slow_first_token", "delay_s": 12, "keepalive_s": 2},
    "roleonly": {"kind": "role_only_then_slow", "delay_s": 12},
    "stall": {"kind": "stall_after_headers"},
    "die": {"kind": "die_after_tokens", "tokens": 3},
    "midstream": {"kind": "midstream_error", "tokens": 2, "code": 429},
    "midstreamdone": {"kind": "midstream_error", "tokens": 1, "code": 502, "done": True},
    "switch": {"kind": "language_switch", "to": "de"},
    "mojibake": {"kind": "mojibake"},
    "refusal": {"kind": "refusal"},
    "filter": {"kind": "content_filter"},
    "empty": {"kind": "empty_reply"},
    "truncated": {"kind": "truncated", "words": 4},
    "pin": {"kind": "pin_not_honoured"},
    "invalid": {"kind": "invalid_json"},
    "fenced": {"kind": "fenced_json"},
    "violation": {"kind": "schema_violation", "mode": "wrong_enum"},
    "html": {"kind": "html_body"},
    "htmljson": {"kind": "html_body", "content_type": "application/json"},
    "utf8": {"kind": "invalid_utf8", "tokens": 1},
    "huge": {"kind": "huge_line", "size_bytes": 3_000_000},
    "hugedefault": {"kind": "huge_line"},
}


def _fleet() -> Any:
    endpoints = [
        {"tag": tag, "provider_name": tag.capitalize(), "faults": [spec] if spec else []}
        for tag, spec in FAULTS.items()
    ]
    return parse_fleet({"models": [{"id": MODEL, "endpoints": endpoints}]})


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(_fleet(), time_scale=SCALE) as handle:
        yield handle


def _body(tag: str, prompt: str = PT, **more: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "stream": True,
        "messages": [{"role": "user", "content": prompt}],
        "provider": {"only": [tag], "allow_fallbacks": False},
        **more,
    }


_CLIENT = httpx.Client()


def _stream(
    sim: SimulatorHandle, body: dict[str, Any]
) -> tuple[list[tuple[float, bytes]], BaseException | None]:
    """(arrival time, line) for each non-empty line, and the transport error that ended the stream, if any."""
    lines: list[tuple[float, bytes]] = []
    start = time.monotonic()
    headers = {"Authorization": f"Bearer {sim.api_key}"}
    timeout = httpx.Timeout(5.0, read=0.5)
    try:
        with _CLIENT.stream(
            "POST", sim.base_url + "/chat/completions", json=body, headers=headers, timeout=timeout
        ) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if line:
                    lines.append((time.monotonic() - start, line.encode()))
    except (httpx.RemoteProtocolError, httpx.ReadTimeout) as exc:
        return lines, exc
    return lines, None


def _data(lines: list[tuple[float, bytes]]) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for _, line in lines if line.startswith(b"data: {")]


def _text(lines: list[tuple[float, bytes]]) -> str:
    return "".join(ev["choices"][0]["delta"].get("content") or "" for ev in _data(lines) if "error" not in ev)


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
    """`/at/<unix>/api/v1/...` (demo/pipeline.py): the path's time, not the clock's, picks the faults,
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


# --- protocol violations: HTTP 200, then a body the client cannot use --------------------------------------


def _raw(
    sim: SimulatorHandle, body: dict[str, Any], limit: int = 50_000_000
) -> tuple[httpx.Response, bytes, int]:
    """(response, the first 64 KiB, total bytes read up to `limit`) through the real httpx client."""
    head, total = b"", 0
    headers = {"Authorization": f"Bearer {sim.api_key}"}
    with _CLIENT.stream(
        "POST", sim.base_url + "/chat/completions", json=body, headers=headers, timeout=10
    ) as response:
        for data in response.iter_bytes():
            if len(head) < 65536:
                head += data[: 65536 - len(head)]
            total += len(data)
            if total >= limit:
                break
    return response, head, total


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "non-stream"])
def test_html_body_is_a_200_page(sim: SimulatorHandle, stream: bool) -> None:
    response, head, total = _raw(sim, _body("html", stream=stream))
    assert response.status_code == 200 and response.headers["content-type"] == "text/html; charset=utf-8"
    assert head.startswith(b"<!DOCTYPE html>") and head.rstrip().endswith(b"</html>") and total == len(head)
    response, head, _ = _raw(sim, _body("htmljson", stream=stream))
    assert response.headers["content-type"] == "application/json" and head.startswith(b"<!DOCTYPE html>")


def test_invalid_utf8_stream_carries_one_undecodable_chunk_then_ends_normally(sim: SimulatorHandle) -> None:
    response, raw, _ = _raw(sim, _body("utf8"))
    assert response.headers["content-type"] == "text/event-stream"
    frames = [f for f in raw.split(b"\n\n") if f.startswith(b"data: ")]
    undecodable = []
    for i, frame in enumerate(frames):
        try:
            frame.decode("utf-8")
        except UnicodeDecodeError:
            undecodable.append(i)
    assert undecodable == [1]  # after one text chunk
    assert b"\xc3\x28\xff\xfe" in frames[1] and frames[-1] == b"data: [DONE]"
    json.loads(frames[1][6:].decode("utf-8", "replace"))  # a chunk, apart from its bytes


def test_invalid_utf8_non_stream_body_is_json_with_undecodable_bytes(sim: SimulatorHandle) -> None:
    response, raw, _ = _raw(sim, _body("utf8", stream=False))
    assert response.headers["content-type"] == "application/json"
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    assert json.loads(raw.decode("utf-8", "replace"))["object"] == "chat.completion"


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "non-stream"])
def test_huge_line_is_one_line_of_the_configured_size(sim: SimulatorHandle, stream: bool) -> None:
    response, head, total = _raw(sim, _body("huge", stream=stream))
    assert response.status_code == 200
    assert 3_000_000 < total < 3_010_000
    first_line = head.split(b"\n\n")[1] if stream else head
    assert b"\n" not in first_line and first_line.startswith(b"data: {" if stream else b"{")


def test_huge_line_default_is_twenty_megabytes_and_stops_when_the_client_hangs_up(
    sim: SimulatorHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    import simulator.protocol

    sent: list[int] = []
    generate = simulator.protocol._huge

    async def counted(*args: Any, **kwargs: Any) -> Any:
        async for part in generate(*args, **kwargs):
            sent.append(len(part))
            yield part

    monkeypatch.setattr(simulator.protocol, "_huge", counted)
    _, _, total = _raw(sim, _body("hugedefault"))
    assert 20_000_000 < total < 20_010_000 and sum(sent) == total
    sent.clear()
    _, _, total = _raw(sim, _body("hugedefault"), limit=1_000_000)  # hang up after 1 MB
    assert total < 1_200_000
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:  # let the server notice
        time.sleep(0.1)
    assert sum(sent) < 8_000_000  # generation stopped long before 20 MB (socket buffers hold a few MB)


def test_protocol_fault_parameters_are_validated() -> None:
    from simulator.fleet import parse_fleet as parse
    from tasks.errors import FleetError

    def fleet(fault: dict[str, Any]) -> dict[str, Any]:
        return {
            "models": [{"id": MODEL, "endpoints": [{"tag": "x", "provider_name": "X", "faults": [fault]}]}]
        }

    parsed = parse(fleet({"kind": "huge_line"})).models[0].endpoints[0].faults[0]
    assert (parsed.params["size_bytes"], parsed.applies_to) == (20_000_000, "all")
    assert parse(fleet({"kind": "html_body"})).models[0].endpoints[0].faults[0].params == {
        "content_type": "text/html; charset=utf-8"
    }
    with pytest.raises(FleetError, match=r"faults\[0\]\.size_bytes must be >= 1 \(got 0\)"):
        parse(fleet({"kind": "huge_line", "size_bytes": 0}))
    with pytest.raises(FleetError, match=r"faults\[0\]\.tokens must be an integer"):
        parse(fleet({"kind": "invalid_utf8", "tokens": "2"}))
