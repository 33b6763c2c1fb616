"""The official `openai` client against the simulator: healthy streams parse, documented errors map to the
matching exception classes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.fleet_file import DEFAULT_FLEET_PATH, load_fleet
from provider_canary.simulator.language import detect_language
from provider_canary.simulator.server import SimulatorHandle, start_simulator

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

MODEL = "meta-llama/llama-3.3-70b-instruct"
PROMPTS = {
    "en": "Continue the scene at the inn, please. She is waiting for you by the fire.",
    "pt": "Continue a cena na taverna, por favor. Ela está esperando você perto da lareira.",
    "ja": "宿屋の場面を続けてください。彼女は暖炉のそばであなたを待っています。",
}


def _error_fleet() -> Any:
    def ep(tag: str, status: int | None = None, retry: float = 0) -> dict[str, Any]:
        faults = (
            []
            if status is None
            else [{"kind": "http_error_before_stream", "status": status, "retry_after_s": retry}]
        )
        return {"tag": tag, "provider_name": tag.capitalize(), "faults": faults}

    return parse_fleet(
        {
            "models": [
                {
                    "id": MODEL,
                    "endpoints": [
                        ep("good"),
                        ep("limited", 429, 7),
                        ep("broken", 500),
                        ep("gateway", 502),
                        ep("unavailable", 503, 2),
                        ep("overloaded", 529),
                        {
                            "tag": "cutter",
                            "provider_name": "Cutter",
                            "faults": [{"kind": "midstream_error", "tokens": 2, "code": 502}],
                        },
                    ],
                }
            ]
        }
    )


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(_error_fleet(), time_scale=0.01) as handle:
        yield handle


@pytest.fixture(scope="module")
def client(sim: SimulatorHandle) -> openai.OpenAI:
    return openai.OpenAI(base_url=sim.base_url, api_key=sim.api_key, max_retries=0, timeout=10)


def _pinned(tag: str) -> dict[str, Any]:
    return {"provider": {"only": [tag], "allow_fallbacks": False}}


def test_every_healthy_default_endpoint_streams_parseable_text() -> None:
    fleet = load_fleet(DEFAULT_FLEET_PATH)
    healthy = [e for e in fleet.models[0].endpoints if not e.faults]
    assert len(healthy) >= 7
    with start_simulator(fleet, time_scale=0.01) as sim:
        client = openai.OpenAI(base_url=sim.base_url, api_key=sim.api_key, max_retries=0, timeout=10)
        for i, endpoint in enumerate(healthy):
            lang, prompt = list(PROMPTS.items())[i % len(PROMPTS)]
            stream = client.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": prompt}],
                stream=True,
                extra_body=_pinned(endpoint.tag),
            )
            chunks = list(stream)
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            assert detect_language(text) == lang, endpoint.tag
            assert len(chunks) > 10
            assert {c.model_extra["provider"] for c in chunks if c.model_extra} == {endpoint.provider_name}
            assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
            assert chunks[-1].choices[0].finish_reason == "stop"


def test_non_streaming_result_parses(client: openai.OpenAI) -> None:
    result = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": PROMPTS["pt"]}], extra_body=_pinned("good")
    )
    assert result.object == "chat.completion" and result.id.startswith("gen-")
    assert detect_language(result.choices[0].message.content or "") == "pt"
    assert result.usage is not None and result.usage.total_tokens > result.usage.prompt_tokens


def test_bad_key_is_authentication_error(sim: SimulatorHandle) -> None:
    bad = openai.OpenAI(base_url=sim.base_url, api_key="sk-or-v1-wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as info:
        bad.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert info.value.status_code == 401 and "User not found." in str(info.value)


def test_no_key_is_401_no_auth_credentials(sim: SimulatorHandle) -> None:
    response = httpx.post(sim.base_url + "/chat/completions", json={"model": MODEL, "messages": []})
    assert response.status_code == 401
    assert response.content == b'{"error":{"message":"No auth credentials found","code":401}}'


def test_unknown_model_is_bad_request(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="acme/fake-1.0", messages=[{"role": "user", "content": "hi"}])
    assert info.value.status_code == 400 and "acme/fake-1.0 is not a valid model ID" in str(info.value)


def test_unknown_provider_key_is_bad_request(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="Unrecognized key"):
        client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "hi"}],
            extra_body={"provider": {"onyl": ["good"]}},
        )


def test_no_allowed_provider_is_not_found(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], extra_body=_pinned("nowhere")
        )
    body = info.value.body
    assert isinstance(body, dict) and body["metadata"]["requested_providers"] == ["nowhere"]
    assert "good" in body["metadata"]["available_providers"]


def test_rate_limit_is_rate_limit_error_with_retry_after(client: openai.OpenAI) -> None:
    with pytest.raises(openai.RateLimitError) as info:
        client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            extra_body=_pinned("limited"),
        )
    assert info.value.status_code == 429 and info.value.response.headers["retry-after"] == "7"


@pytest.mark.parametrize(
    ("tag", "status"), [("broken", 500), ("gateway", 502), ("unavailable", 503), ("overloaded", 529)]
)
def test_server_errors_are_internal_server_errors(client: openai.OpenAI, tag: str, status: int) -> None:
    with pytest.raises(openai.InternalServerError) as info:
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True, extra_body=_pinned(tag)
        )
    assert isinstance(info.value, openai.APIStatusError) and info.value.status_code == status


def test_fallback_hides_a_rate_limited_primary(client: openai.OpenAI) -> None:
    result = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "hi"}],
        extra_body={"provider": {"order": ["limited", "good"]}},
    )
    assert result.model_extra and result.model_extra["provider"] == "Good"


def test_midstream_error_chunk_raises_api_error(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True, extra_body=_pinned("cutter")
    )
    received: list[str] = []
    with pytest.raises(openai.APIError, match="Provider returned error"):
        for chunk in stream:
            received.append(chunk.choices[0].delta.content or "")
    assert len(received) == 2 and all(received)
