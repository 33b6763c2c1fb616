"""probe_once against every fault of the loopback OpenRouter simulator (provider_canary/simulator/FLEET.md).

One endpoint per fault, all rates 1, time_scale 0.1: a simulated 15 s slow start takes 1.5 s against a 1 s
ttft threshold. Each test asserts the fields the probe recorded, not a judgement (the contracts judge).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import jsonschema
import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks.config import CanaryConfig
from tasks.core.classify import is_transport
from tasks.core.contracts import spec_of, ttft
from tasks.core.prompts import STRUCTURED_SCHEMA
from tasks.core.types import Attempt, Contract, Endpoint, ErrorClass, Outcome, Reason
from tasks.probe.attempt import probe_once
from tasks.probe.discover import fetch_endpoints
from tasks.runtime.clock import SystemClock

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

MODEL = "meta-llama/llama-3.3-70b-instruct"
CFG = CanaryConfig(ttft_s=1.0, connect_timeout_s=2.0, read_timeout_s=3.0, probe_budget_s=8.0)

#: tag variant → faults of that endpoint (provider "sim", display name "Sim").
FAULTS: dict[str, list[dict[str, Any]]] = {
    "healthy": [],
    "slow": [{"kind": "slow_first_token", "delay_s": 15, "keepalive_s": 2}],
    "roleonly": [{"kind": "role_only_then_slow", "delay_s": 15}],
    "stall": [{"kind": "stall_after_headers", "max_s": 100}],
    "die": [{"kind": "die_after_tokens", "tokens": 2}],
    "h429": [{"kind": "http_error_before_stream", "status": 429, "retry_after_s": 7}],
    "h502": [{"kind": "http_error_before_stream", "status": 502}],
    "mid502": [{"kind": "midstream_error", "tokens": 3, "code": 502}],
    "mid429done": [{"kind": "midstream_error", "tokens": 1, "code": 429, "done": True}],
    "opening": [{"kind": "corrupted_opening", "prefixes": ['",']}],
    "switch": [{"kind": "language_switch", "to": "en"}],
    "mix": [{"kind": "language_mix", "with": "es"}],
    "mojibake": [{"kind": "mojibake"}],
    "badjson": [{"kind": "invalid_json", "mode": "truncated"}],
    "fenced": [{"kind": "fenced_json"}],
    "schema": [{"kind": "schema_violation", "mode": "wrong_enum"}],
    "refusal": [{"kind": "refusal"}],
    "filter": [{"kind": "content_filter"}],
    "empty": [{"kind": "empty_reply"}],
    "truncated": [{"kind": "truncated", "words": 4}],
    "pin": [{"kind": "pin_not_honoured", "served_by": "Together"}],
    "html": [{"kind": "html_body"}],
    "htmljson": [{"kind": "html_body", "content_type": "application/json"}],
    "utf8": [{"kind": "invalid_utf8", "tokens": 2}],
    "huge": [{"kind": "huge_line"}],  # the default 20 MB
}

FLEET = parse_fleet(
    {
        "models": [
            {
                "id": MODEL,
                "endpoints": [
                    {"tag": f"sim/{variant}", "provider_name": "Sim", "faults": faults}
                    for variant, faults in FAULTS.items()
                ],
            }
        ]
    }
)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(FLEET, time_scale=0.1) as handle:
        yield handle


@pytest.fixture(scope="module")
def corpus() -> dict[str, Any]:
    from provider_canary.simulator.text import corpus as load

    return load()  # type: ignore[no-any-return]


def probe(
    sim: SimulatorHandle,
    variant: str,
    contract: Contract = Contract.TTFT,
    language: str | None = None,
    cfg: CanaryConfig = CFG,
) -> Attempt:
    endpoint = Endpoint(model=MODEL, tag=f"sim/{variant}", provider_name="Sim")
    with httpx.Client() as client:
        return probe_once(
            client,
            base_url=sim.base_url,
            api_key=sim.api_key,
            endpoint=endpoint,
            contract=contract,
            round_id="r-sim",
            attempt_no=1,
            language=language,
            cfg=cfg,
            clock=SystemClock(),
        )


def clean(attempt: Attempt) -> None:
    assert attempt.error_class is None, attempt.error_detail
    assert attempt.http_status == 200 and attempt.served_provider == "Sim" and not attempt.is_pin_mismatch
    assert not is_transport(attempt)


def test_discovery_sees_the_whole_fleet(sim: SimulatorHandle) -> None:
    with httpx.Client() as client:
        endpoints = fetch_endpoints(client, sim.base_url, sim.api_key, MODEL)
    assert sorted(e.tag for e in endpoints) == sorted(f"sim/{v}" for v in FAULTS)


@pytest.mark.timing  # asserts on wall time: run alone (scripts/test)
@pytest.mark.parametrize("contract", [Contract.TTFT, Contract.REFUSAL], ids=str)
def test_healthy(sim: SimulatorHandle, contract: Contract) -> None:
    attempt = probe(sim, "healthy", contract)
    clean(attempt)
    assert attempt.finish_reason in ("stop", "length") and attempt.text.strip()
    assert attempt.ttft_ms is not None and attempt.ttft_ms < CFG.ttft_s * 1000
    assert attempt.keepalive_count >= 1 and attempt.chunk_count >= 3
    assert attempt.usage.completion_tokens and attempt.usage.prompt_tokens


def test_healthy_structured_reply_validates(sim: SimulatorHandle) -> None:
    attempt = probe(sim, "healthy", Contract.STRUCTURED)
    clean(attempt)
    jsonschema.validate(json.loads(attempt.text), STRUCTURED_SCHEMA)


@pytest.mark.parametrize("variant", ["slow", "roleonly"])
def test_slow_first_token_is_measured_past_the_threshold(sim: SimulatorHandle, variant: str) -> None:
    attempt = probe(sim, variant)
    clean(attempt)
    assert attempt.ttft_ms is not None and attempt.ttft_ms >= 1500 > CFG.ttft_s * 1000
    assert attempt.text.strip() and attempt.finish_reason in ("stop", "length")
    if variant == "slow":
        assert attempt.keepalive_count >= 5  # every 0.2 s for 1.5 s


def test_stall_after_headers(sim: SimulatorHandle) -> None:
    attempt = probe(sim, "stall", cfg=replace(CFG, read_timeout_s=0.5))
    assert attempt.error_class is ErrorClass.TIMEOUT and attempt.http_status == 200
    assert attempt.ttft_ms is None and attempt.text == ""
    assert attempt.total_ms is not None and 450 <= attempt.total_ms < 3000
    judged = ttft.judge_attempt(attempt, 0.4)  # a 200 without text in time is the ttft contract's failure
    assert (judged.outcome, judged.reason) == (Outcome.FAIL, Reason.TTFT_EXCEEDED)


def test_die_after_tokens_keeps_the_partial_text(sim: SimulatorHandle) -> None:
    attempt = probe(sim, "die", Contract.REFUSAL)
    assert attempt.error_class is ErrorClass.STREAM_CUT and attempt.http_status == 200
    assert attempt.text.strip() and attempt.finish_reason is None
    assert is_transport(attempt)


def test_429_before_stream_records_status_and_retry_after(sim: SimulatorHandle) -> None:
    attempt = probe(sim, "h429")
    assert attempt.error_class is ErrorClass.HTTP_STATUS
    assert (attempt.http_status, attempt.error_code, attempt.retry_after_s) == (429, 429, 7.0)
    assert attempt.error_detail and "Provider returned error" in attempt.error_detail
    assert sim.api_key not in attempt.error_detail
    assert is_transport(attempt)


def test_502_before_stream(sim: SimulatorHandle) -> None:
    attempt = probe(sim, "h502")
    assert (attempt.error_class, attempt.error_code, attempt.retry_after_s) == (
        ErrorClass.HTTP_STATUS,
        502,
        None,
    )
    assert is_transport(attempt)


@pytest.mark.parametrize(("variant", "code"), [("mid502", 502), ("mid429done", 429)])
def test_midstream_error(sim: SimulatorHandle, variant: str, code: int) -> None:
    attempt = probe(sim, variant, Contract.REFUSAL)
    assert attempt.error_class is ErrorClass.MIDSTREAM_ERROR and attempt.error_code == code
    assert attempt.http_status == 200 and attempt.text.strip() and attempt.finish_reason == "error"
    assert attempt.error_detail
    assert is_transport(attempt)


def test_corrupted_opening_is_recorded_verbatim(sim: SimulatorHandle) -> None:
    attempt = probe(sim, "opening", Contract.REFUSAL)
    clean(attempt)
    assert attempt.text.startswith('",')


def test_language_switch_replies_in_english(sim: SimulatorHandle, corpus: dict[str, Any]) -> None:
    attempt = probe(sim, "switch", Contract.LANGUAGE, "pt")
    clean(attempt)
    assert attempt.language == "pt"
    assert any(s in attempt.text for s in corpus["en"]["sentences"])
    assert not any(s in attempt.text for s in corpus["pt"]["sentences"])


def test_language_mix_carries_both_languages(sim: SimulatorHandle, corpus: dict[str, Any]) -> None:
    attempt = probe(sim, "mix", Contract.LANGUAGE, "pt")
    clean(attempt)
    assert any(s in attempt.text for s in corpus["pt"]["sentences"])
    assert any(s in attempt.text for s in corpus["es"]["sentences"])


def test_healthy_language_reply_stays_in_language(sim: SimulatorHandle, corpus: dict[str, Any]) -> None:
    attempt = probe(sim, "healthy", Contract.LANGUAGE, "pt")
    clean(attempt)
    assert any(s in attempt.text for s in corpus["pt"]["sentences"])
    assert not any(s in attempt.text for s in corpus["es"]["sentences"])


def test_mojibake_arrives_as_text_for_the_judge(sim: SimulatorHandle, corpus: dict[str, Any]) -> None:
    attempt = probe(sim, "mojibake", Contract.LANGUAGE, "pt")
    clean(attempt)
    garbled = [s.encode("utf-8").decode("cp1252", "replace") for s in corpus["pt"]["sentences"]]
    assert "Ã" in attempt.text
    assert any(g[:20] in attempt.text for g in garbled)


def test_invalid_json(sim: SimulatorHandle) -> None:
    attempt = probe(sim, "badjson", Contract.STRUCTURED)
    clean(attempt)
    with pytest.raises(ValueError):
        json.loads(attempt.text)


def test_fenced_json(sim: SimulatorHandle) -> None:
    attempt = probe(sim, "fenced", Contract.STRUCTURED)
    clean(attempt)
    assert attempt.text.lstrip().startswith("```")


def test_schema_violation(sim: SimulatorHandle) -> None:
    attempt = probe(sim, "schema", Contract.STRUCTURED)
    clean(attempt)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(attempt.text), STRUCTURED_SCHEMA)


def test_refusal_text(sim: SimulatorHandle, corpus: dict[str, Any]) -> None:
    attempt = probe(sim, "refusal", Contract.REFUSAL)
    clean(attempt)
    assert attempt.text.strip() == corpus["en"]["refusal"] and attempt.finish_reason == "stop"


def test_content_filter(sim: SimulatorHandle) -> None:
    attempt = probe(sim, "filter", Contract.REFUSAL)
    clean(attempt)
    assert (attempt.finish_reason, attempt.native_finish_reason) == ("content_filter", "SAFETY")


def test_empty_reply_has_no_first_token(sim: SimulatorHandle) -> None:
    attempt = probe(sim, "empty", Contract.REFUSAL)
    clean(attempt)
    assert attempt.text == "" and attempt.ttft_ms is None and attempt.finish_reason == "stop"


def test_truncated_reply(sim: SimulatorHandle) -> None:
    attempt = probe(sim, "truncated", Contract.REFUSAL)
    clean(attempt)
    assert attempt.finish_reason == "length" and 0 < len(attempt.text.split()) <= 6


def test_pin_not_honoured_records_the_serving_provider(sim: SimulatorHandle) -> None:
    attempt = probe(sim, "pin")
    assert attempt.served_provider == "Together" and attempt.provider_name == "Sim"
    assert attempt.is_pin_mismatch and attempt.error_class is None


# --- protocol violations: HTTP 200, then a body the client cannot use --------------------------------------


def violation(attempt: Attempt, contract: Contract = Contract.TTFT) -> str:
    """The attempt is a protocol violation that the contract fails; returns the evidence."""
    assert attempt.error_class is ErrorClass.PROTOCOL and attempt.http_status == 200, attempt.error_detail
    assert not is_transport(attempt)
    judged = spec_of(contract).judge([attempt], CFG)
    assert (judged.outcome, judged.reason) == (Outcome.FAIL, Reason.PROTOCOL_VIOLATION)
    assert judged.evidence == attempt.error_detail and "\n" not in judged.evidence
    return judged.evidence


@pytest.mark.parametrize("contract", [Contract.TTFT, Contract.REFUSAL, Contract.STRUCTURED], ids=str)
def test_html_page_is_a_protocol_violation(sim: SimulatorHandle, contract: Contract) -> None:
    evidence = violation(probe(sim, "html", contract), contract)
    assert "content-type (text/html; charset=utf-8) is not an event stream" in evidence
    assert "'<!DOCTYPE html>\\n<html" in evidence and "bytes" in evidence


def test_json_labelled_body_that_is_not_json_is_a_protocol_violation(sim: SimulatorHandle) -> None:
    evidence = violation(probe(sim, "htmljson", Contract.REFUSAL), Contract.REFUSAL)
    assert (
        "application/json body is not a JSON object (not JSON)" in evidence and "<!DOCTYPE html>" in evidence
    )


def test_invalid_utf8_frame_is_a_protocol_violation(sim: SimulatorHandle) -> None:
    attempt = probe(sim, "utf8", Contract.LANGUAGE, "pt")
    evidence = violation(attempt, Contract.LANGUAGE)
    assert "frame is not valid UTF-8" in evidence and "after chunks (3)" in evidence
    assert attempt.text.strip() and "\ufffd" in attempt.text  # what arrived is kept, decoded with U+FFFD


def test_a_twenty_megabyte_line_is_cut_short_at_the_cap(sim: SimulatorHandle) -> None:
    started = time.monotonic()
    attempt = probe(sim, "huge", Contract.REFUSAL)
    elapsed = time.monotonic() - started
    evidence = violation(attempt, Contract.REFUSAL)
    assert "line over the 1048576-byte cap: stopped reading" in evidence
    read = int(re.search(r"bytes_read \((\d+)\)", evidence).group(1))  # type: ignore[union-attr]
    assert 1_048_576 < read < 4_000_000  # stopped within a few reads of the cap, not after 20 MB
    assert elapsed < 5
