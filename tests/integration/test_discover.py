"""Discovery: pure parsing of the endpoints payload, and fetch_endpoints against the loopback simulator."""

from __future__ import annotations

import copy
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks.core.types import Endpoint
from tasks.errors import CanaryError, ConfigError
from tasks.probe.discover import DiscoveryUnreachable, endpoints_path, fetch_endpoints, parse_endpoints

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

MODEL = "moonshotai/kimi-k3"

#: [CAP-K3] trimmed (docs/openrouter-api.md §1a), plus the degraded Alibaba endpoint of the same capture.
CAP_K3: dict[str, Any] = {
    "data": {
        "id": MODEL,
        "name": "MoonshotAI: Kimi K3",
        "created": 1784215858,
        "endpoints": [
            {
                "name": "Fireworks | moonshotai/kimi-k3-20260715",
                "model_id": MODEL,
                "model_name": "MoonshotAI: Kimi K3",
                "context_length": 1048576,
                "pricing": {"prompt": "0.000003", "completion": "0.000015", "discount": 0},
                "provider_name": "Fireworks",
                "tag": "fireworks",
                "quantization": "unknown",
                "max_completion_tokens": None,
                "supported_parameters": ["reasoning", "max_tokens", "response_format", "structured_outputs"],
                "status": 0,
                "uptime_last_30m": 99.82397465234993,
                "latency_last_30m": {"p50": 2687, "p75": 4162.25, "p90": 5954, "p99": 30351.36},
            },
            {"provider_name": "Alibaba", "tag": "alibaba", "quantization": None, "status": -2},
        ],
    }
}


@pytest.mark.unit
def test_parse_real_capture() -> None:
    assert parse_endpoints(MODEL, CAP_K3) == [
        Endpoint(model=MODEL, tag="alibaba", provider_name="Alibaba", quantization=None, status=-2),
        Endpoint(
            model=MODEL,
            tag="fireworks",
            provider_name="Fireworks",
            quantization="unknown",
            supported_parameters=("reasoning", "max_tokens", "response_format", "structured_outputs"),
            status=0,
            context_length=1048576,
            prompt_price_usd=0.000003,
            completion_price_usd=0.000015,
            uptime_last_30m=99.82397465234993,  # OpenRouter's own figures (a suspicion at most)
            latency_p50_ms=2687,
            latency_p75_ms=4162.25,
            latency_p90_ms=5954,
            latency_p99_ms=30351.36,
        ),
    ]


@pytest.mark.unit
@pytest.mark.parametrize(
    "payload",
    [
        None,
        [],
        "x",
        {},
        {"data": None},
        {"data": []},
        {"data": {"endpoints": None}},
        {"data": {"endpoints": {}}},
    ],
    ids=repr,
)
def test_parse_tolerates_any_shape(payload: Any) -> None:
    assert parse_endpoints(MODEL, payload) == []


@pytest.mark.unit
def test_parse_skips_malformed_items_and_keeps_well_typed_fields_only() -> None:
    payload = copy.deepcopy(CAP_K3)
    payload["data"]["endpoints"] += [
        "junk",
        None,
        {"tag": "", "provider_name": "Empty"},
        {"tag": "noname"},
        {"tag": 5, "provider_name": "Num"},
        {"tag": "fireworks", "provider_name": "Duplicate"},
        {
            "tag": " novita/fp8 ",
            "provider_name": "NovitaAI",
            "status": True,
            "context_length": "big",
            "quantization": 8,
            "supported_parameters": ["tools", 3, None],
        },
    ]
    endpoints = parse_endpoints(MODEL, payload)
    assert [e.tag for e in endpoints] == ["alibaba", "fireworks", "novita/fp8"]
    assert endpoints[1].provider_name == "Fireworks"  # the first of a duplicated tag wins
    assert endpoints[2] == Endpoint(
        model=MODEL, tag="novita/fp8", provider_name="NovitaAI", supported_parameters=("tools",)
    )


@pytest.mark.unit
@pytest.mark.parametrize(
    ("model", "path"),
    [
        ("meta-llama/llama-3.3-70b-instruct", "/models/meta-llama/llama-3.3-70b-instruct/endpoints"),
        ("nex-agi/nex-n2.5-pro:free", "/models/nex-agi/nex-n2.5-pro%3Afree/endpoints"),
    ],
)
def test_endpoints_path_encodes_variants(model: str, path: str) -> None:
    assert endpoints_path(model) == path


@pytest.mark.unit
@pytest.mark.parametrize("model", ["noslash", "a/b/c", "/x", "x/", " a/b"])
def test_endpoints_path_rejects_malformed_models(model: str) -> None:
    with pytest.raises(ConfigError, match="author/slug"):
        endpoints_path(model)


FLEET = parse_fleet(
    {
        "models": [
            {
                "id": "meta-llama/llama-3.3-70b-instruct",
                "endpoints": [
                    {"tag": "together", "provider_name": "Together", "quantization": "fp8"},
                    {
                        "tag": "deepinfra/fp8",
                        "provider_name": "DeepInfra",
                        "quantization": "fp8",
                        "status": -2,
                    },
                ],
            },
            {"id": "nex-agi/nex-n2.5-pro:free", "endpoints": [{"tag": "chutes", "provider_name": "Chutes"}]},
        ]
    }
)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(FLEET, time_scale=0.01) as handle:
        yield handle


def test_fetch_from_simulator(sim: SimulatorHandle) -> None:
    with httpx.Client() as client:
        endpoints = fetch_endpoints(client, sim.base_url, sim.api_key, "meta-llama/llama-3.3-70b-instruct")
    assert [(e.tag, e.provider_name, e.quantization, e.status) for e in endpoints] == [
        ("deepinfra/fp8", "DeepInfra", "fp8", -2),
        ("together", "Together", "fp8", 0),
    ]
    assert all(e.model == "meta-llama/llama-3.3-70b-instruct" and e.supported_parameters for e in endpoints)


def test_fetch_a_variant_model_id(sim: SimulatorHandle) -> None:
    with httpx.Client() as client:
        endpoints = fetch_endpoints(client, sim.base_url + "/", None, "nex-agi/nex-n2.5-pro:free")
    assert [e.tag for e in endpoints] == ["chutes"]


def test_unknown_model_is_a_config_error(sim: SimulatorHandle) -> None:
    with httpx.Client() as client, pytest.raises(ConfigError, match="unknown model 'acme/nope'") as info:
        fetch_endpoints(client, sim.base_url, sim.api_key, "acme/nope")
    assert "\n" not in str(info.value)


class _Status(BaseHTTPRequestHandler):
    status = 401
    body = b'{"error":{"message":"User not found.","code":401}}'

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _serve(status: int, body: bytes) -> tuple[ThreadingHTTPServer, str]:
    handler = type("H", (_Status,), {"status": status, "body": body})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/api/v1"


SECRET = "sk-or-v1-deadbeefdeadbeefdeadbeef"


@pytest.mark.parametrize(
    ("status", "body", "error", "match"),
    [
        (
            401,
            b'{"error":{"message":"User not found.","code":401}}',
            ConfigError,
            "OPENROUTER_API_KEY was rejected",
        ),
        (403, b"", ConfigError, "rejected"),
        (500, b'{"error":{"message":"Internal","code":500}}', DiscoveryUnreachable, "HTTP 500"),
        (200, b"<html>oops</html>", DiscoveryUnreachable, "non-JSON"),
        (200, b'{"error":{"message":"x","code":500}}', DiscoveryUnreachable, "no data"),
    ],
)
def test_fetch_failures_are_one_line_canary_errors_without_the_key(
    status: int, body: bytes, error: type[CanaryError], match: str
) -> None:
    server, base = _serve(status, body)
    try:
        with httpx.Client() as client, pytest.raises(error, match=match) as info:
            fetch_endpoints(client, base, SECRET, "meta-llama/llama-3.3-70b-instruct")
    finally:
        server.shutdown()
        server.server_close()
    message = str(info.value)
    assert base in message and SECRET not in message and "\n" not in message


def test_unreachable_base_url_names_the_url_not_the_key() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}/api/v1"
    with httpx.Client() as client, pytest.raises(CanaryError) as info:
        fetch_endpoints(client, base, SECRET, "meta-llama/llama-3.3-70b-instruct", timeout_s=2.0)
    assert isinstance(info.value, httpx.TransportError)  # so a retry-on-transport policy retries it
    assert str(info.value) == f"discovery: cannot reach {base} (ConnectError)"
