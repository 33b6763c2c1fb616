"""The simulator's protocol violations over HTTP: a 200, then a body the client cannot use (an HTML page, invalid UTF-8,
a huge line), through the real httpx client; and the validation of those faults' parameters."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from provider_canary.simulator.server import SimulatorHandle
from tests.support.simulator_faults import (
    _CLIENT,
    MODEL,
    _body,
    fault_simulator,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
sim = pytest.fixture(scope="module", name="sim")(fault_simulator)


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
    import provider_canary.simulator.protocol  # noqa: F401 (loads the submodule)
    from provider_canary import simulator

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
    from provider_canary.simulator.fleet import parse_fleet as parse
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
