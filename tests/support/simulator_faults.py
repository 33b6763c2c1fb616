"""The simulator fault tests' fleet (tests/integration/test_simulator*faults.py): one endpoint per fault kind, the
simulator serving it (`sim`, module-scoped), a request body pinned to one endpoint, and the streamed lines read back."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator

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


def fault_simulator() -> Iterator[SimulatorHandle]:
    """The simulator serving the fault fleet: each test module's `sim` fixture
    (`sim = pytest.fixture(scope="module", name="sim")(fault_simulator)`)."""
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
