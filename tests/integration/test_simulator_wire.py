"""Raw bytes over httpx: SSE framing and key order against the [REC-OC] recording, the catalog routes
against [CAP-K3], routing rules and documented error bodies."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from provider_canary.simulator.server import SimulatorHandle, start_simulator

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

MODEL = "meta-llama/llama-3.3-70b-instruct"

# [REC-OC] openrouter-streams-text.json, verbatim (docs/openrouter-api.md §3b).
REC_OC = (
    ": OPENROUTER PROCESSING\n\n"
    'data: {"id":"gen-1778031306-UD7bR0I1JNCsPvVzlXat","object":"chat.completion.chunk","created":1778031306,'
    '"model":"openai/gpt-4o-mini","provider":"Azure","system_fingerprint":"fp_eb37e061ec","choices":[{"index":0,'
    '"delta":{"content":"Hello","role":"assistant"},"finish_reason":null,"native_finish_reason":null}]}\n\n'
    'data: {"id":"gen-1778031306-UD7bR0I1JNCsPvVzlXat","object":"chat.completion.chunk","created":1778031306,'
    '"model":"openai/gpt-4o-mini","provider":"Azure","system_fingerprint":"fp_eb37e061ec","choices":[{"index":0,'
    '"delta":{"content":"","role":"assistant"},"finish_reason":"stop","native_finish_reason":"stop"}]}\n\n'
    'data: {"id":"gen-1778031306-UD7bR0I1JNCsPvVzlXat","object":"chat.completion.chunk","created":1778031306,'
    '"model":"openai/gpt-4o-mini","provider":"Azure","system_fingerprint":"fp_eb37e061ec","choices":[{"index":0,'
    '"delta":{"content":"","role":"assistant"},"finish_reason":"stop","native_finish_reason":"stop"}],"usage":{'
    '"prompt_tokens":21,"completion_tokens":3,"total_tokens":24,"cost":0.00000495,"is_byok":false,'
    '"prompt_tokens_details":{"cached_tokens":0,"cache_write_tokens":0,"audio_tokens":0,"video_tokens":0},'
    '"cost_details":{"upstream_inference_cost":0.00000495,"upstream_inference_prompt_cost":0.00000315,'
    '"upstream_inference_completions_cost":0.0000018},"completion_tokens_details":{"reasoning_tokens":0,'
    '"image_tokens":0,"audio_tokens":0}}}\n\n'
    "data: [DONE]\n\n"
)
FRAMING = re.compile(rb"\A(: OPENROUTER PROCESSING\n\n){1,3}(data: \{[^\n]*\}\n\n)+data: \[DONE\]\n\n\Z")
CAP_K3_KEYS = [
    "name",
    "model_id",
    "model_name",
    "context_length",
    "pricing",
    "provider_name",
    "tag",
    "quantization",
    "max_completion_tokens",
    "max_prompt_tokens",
    "supported_parameters",
    "status",
    "uptime_last_30m",
    "uptime_last_5m",
    "uptime_last_1d",
    "supports_implicit_caching",
    "supports_voice_cloning",
    "latency_last_30m",
    "throughput_last_30m",
]


def shape(value: Any) -> Any:
    """Key order all the way down (lists by their first item), values dropped."""
    if isinstance(value, dict):
        return [(k, shape(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return None


def events(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in raw.split(b"\n") if line.startswith(b"data: {")]


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(time_scale=0.01) as handle:
        yield handle


def _chat(sim: SimulatorHandle, body: dict[str, Any], key: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key or sim.api_key}"}
    full = {"model": MODEL, "messages": [{"role": "user", "content": "Continue the scene, please."}], **body}
    return httpx.post(sim.base_url + "/chat/completions", json=full, headers=headers, timeout=10)


def _pin(tag: str, **more: Any) -> dict[str, Any]:
    return {"provider": {"only": [tag], "allow_fallbacks": False, **more}}


def test_stream_framing_and_key_order_match_the_recording(sim: SimulatorHandle) -> None:
    response = _chat(sim, {"stream": True, **_pin("fireworks")})
    raw = response.content
    assert FRAMING.match(REC_OC.encode()) and FRAMING.match(raw), raw[:300]
    assert response.headers["content-type"] == "text/event-stream"
    ours, theirs = events(raw), events(REC_OC.encode())
    for strip in (ours, theirs):
        for ev in strip:
            ev.pop("system_fingerprint", None)
    assert shape(ours[0]) == shape(theirs[0])
    assert all(shape(ev) == shape(theirs[0]) for ev in ours[:-1])
    assert shape(ours[-1]) == shape(theirs[-1])
    assert ours[-2]["choices"][0] == theirs[-2]["choices"][0]
    assert ours[-1]["choices"][0] == theirs[-1]["choices"][0]
    assert {ev["id"] for ev in ours} == {response.headers["x-generation-id"]}
    match = re.fullmatch(r"gen-(\d{10})-[A-Za-z0-9]{20}", ours[0]["id"])
    assert match and int(match.group(1)) == ours[0]["created"]
    assert {ev["provider"] for ev in ours} == {"Fireworks"}
    text = "".join(ev["choices"][0]["delta"]["content"] for ev in ours)
    assert len(text) >= 400 and len(ours) > 20
    assert re.search(rb'"cost":0\.\d+,', raw) and b"e-0" not in raw  # JS number format, as recorded


def test_endpoints_catalog_matches_cap_k3(sim: SimulatorHandle) -> None:
    url = f"{sim.base_url}/models/{MODEL}/endpoints"
    authed = httpx.get(url, headers={"Authorization": f"Bearer {sim.api_key}"})
    anonymous = httpx.get(url)
    assert authed.content.startswith(b'{"data":{"id":"meta-llama/llama-3.3-70b-instruct","name":')
    assert b'": ' not in authed.content and b'", "' not in authed.content
    data = authed.json()["data"]
    assert list(data) == ["id", "name", "created", "description", "architecture", "endpoints"]
    assert all(list(ep) == CAP_K3_KEYS for ep in data["endpoints"])
    assert data["endpoints"][0]["name"] == "DeepInfra | meta-llama/llama-3.3-70b-instruct"
    assert all(ep["latency_last_30m"] for ep in data["endpoints"])
    assert not any(ep["latency_last_30m"] for ep in anonymous.json()["data"]["endpoints"])
    missing = httpx.get(f"{sim.base_url}/models/acme/nothing/endpoints")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == 404


def test_models_and_providers(sim: SimulatorHandle) -> None:
    models = httpx.get(sim.base_url + "/models").json()
    assert models["total_count"] == 1 and models["data"][0]["id"] == MODEL
    assert list(models["data"][0])[:3] == ["id", "canonical_slug", "hugging_face_id"]
    providers = {p["slug"]: p["name"] for p in httpx.get(sim.base_url + "/providers").json()["data"]}
    assert providers["deepinfra"] == "DeepInfra" and providers["gmicloud"] == "GMICloud"


def test_unauthorised_bodies_are_exact(sim: SimulatorHandle) -> None:
    bad = _chat(sim, {}, key="sk-or-v1-nope")
    assert (bad.status_code, bad.content) == (401, b'{"error":{"message":"User not found.","code":401}}')


def test_base_slug_matches_every_variant_full_tag_only_one(sim: SimulatorHandle) -> None:
    served = {_chat(sim, {"seed": s, **_pin("deepinfra")}).json()["provider"] for s in range(3)}
    assert served == {"DeepInfra"}
    only_turbo = _chat(sim, {"provider": {"only": ["deepinfra/turbo"], "ignore": ["deepinfra/fp8"]}})
    assert only_turbo.json()["provider"] == "DeepInfra"
    none_left = _chat(sim, {"provider": {"only": ["deepinfra/turbo"], "ignore": ["deepinfra"]}})
    assert none_left.status_code == 404
    assert none_left.json() == {
        "error": {
            "message": "No allowed providers are available for the selected model.",
            "code": 404,
            "metadata": {
                "available_providers": none_left.json()["error"]["metadata"]["available_providers"],
                "requested_providers": ["deepinfra/turbo"],
            },
        }
    }


def test_provider_object_is_validated(sim: SimulatorHandle) -> None:
    unknown = _chat(sim, {"provider": {"only": ["fireworks"], "sort_by": "price"}})
    assert unknown.status_code == 400 and "sort_by" in unknown.json()["error"]["message"]
    wrong_type = _chat(sim, {"provider": {"allow_fallbacks": "no"}})
    assert wrong_type.status_code == 400


SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "reply",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"line": {"type": "string"}, "mood": {"type": "string", "enum": ["calm", "tense"]}},
            "required": ["line", "mood"],
            "additionalProperties": False,
        },
    },
}


def test_require_parameters_filters_endpoints(sim: SimulatorHandle) -> None:
    refused = _chat(sim, {"response_format": SCHEMA, **_pin("amazon-bedrock", require_parameters=True)})
    assert refused.status_code == 404 and "requested parameters" in refused.json()["error"]["message"]
    served = _chat(sim, {"response_format": SCHEMA, **_pin("deepinfra/fp8", require_parameters=True)})
    assert served.status_code == 200
    assert set(json.loads(served.json()["choices"][0]["message"]["content"])) <= {"line", "mood"}


def test_non_streaming_key_order_is_2026(sim: SimulatorHandle) -> None:
    result = _chat(sim, _pin("together"))
    body = result.json()
    assert list(body) == [
        "id",
        "object",
        "created",
        "model",
        "provider",
        "system_fingerprint",
        "choices",
        "usage",
    ]
    assert list(body["choices"][0]) == [
        "index",
        "logprobs",
        "finish_reason",
        "native_finish_reason",
        "message",
    ]
    assert result.headers["x-generation-id"] == body["id"]


def test_stop_closes_the_port() -> None:
    handle = start_simulator(time_scale=0.01)
    url = handle.base_url + "/models"
    assert httpx.get(url).status_code == 200
    handle.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(url, timeout=2)
