"""Record real simulator streams as Attempt fixtures for the contracts' golden tests.

    python tests/data/record_attempts.py        # rewrites tests/data/recorded/*.json

Starts the simulator (127.0.0.1, any port, time compressed 100x) with the fleet below, sends each scenario's
pinned probe through the real probe client (`tasks.probe.attempt.probe_once`), and saves the recorded Attempt with the
outcome and reason that scenario is EXPECTED to get (written here by hand, from the fault's definition, never
computed by the judges). tests/unit/contracts/test_recorded.py replays them through the judges.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from provider_canary.simulator.server import start_simulator  # noqa: E402
from tasks.config import CanaryConfig  # noqa: E402
from tasks.core.types import Contract, Endpoint  # noqa: E402
from tasks.probe.attempt import probe_once  # noqa: E402
from tasks.runtime.clock import SystemClock  # noqa: E402

OUT = Path(__file__).with_name("recorded")
MODEL = "canary-test/roleplay-70b"
#: Timings as the simulator's 100x compression makes them: a 100 s slow start arrives after 1 s.
CFG = CanaryConfig(ttft_s=0.5, probe_budget_s=2.0, read_timeout_s=2.0, connect_timeout_s=2.0)

#: tag -> fault TOML lines ("" = healthy)
FAULTS: dict[str, str] = {
    "healthy": "",
    "slow": 'kind = "slow_first_token"\ndelay_s = 100.0\nkeepalive_s = 20.0',
    "stall": 'kind = "stall_after_headers"\nmax_s = 1000.0',
    "ratelimit": 'kind = "http_error_before_stream"\nstatus = 429',
    "dies": 'kind = "die_after_tokens"\ntokens = 2',
    "midstream": 'kind = "midstream_error"\ntokens = 3\ncode = 502',
    "corrupt": 'kind = "corrupted_opening"\nprefixes = [\'",\', "ing ", ";"]',
    "mixer": 'kind = "language_mix"\nwith = "es"',
    "switcher": 'kind = "language_switch"\nto = "en"',
    "moji": 'kind = "mojibake"',
    "fenced": 'kind = "fenced_json"',
    "badschema": 'kind = "schema_violation"\nmode = "wrong_enum"',
    "badjson": 'kind = "invalid_json"\nmode = "trailing_comma"',
    "filter": 'kind = "content_filter"',
    "refuser": 'kind = "refusal"',
    "empty": 'kind = "empty_reply"',
    "trunc": 'kind = "truncated"',
    "pinfail": 'kind = "pin_not_honoured"\nserved_by = "Imposter"',
}

#: (name, tag, contract, language, expected outcome, expected reason)
SCENARIOS: list[tuple[str, str, Contract, str | None, str, str]] = [
    ("healthy_ttft", "healthy", Contract.TTFT, None, "pass", "ok"),
    ("healthy_refusal", "healthy", Contract.REFUSAL, None, "pass", "ok"),
    ("healthy_structured", "healthy", Contract.STRUCTURED, None, "pass", "ok"),
    ("healthy_language_pt", "healthy", Contract.LANGUAGE, "pt", "pass", "ok"),
    ("healthy_language_ja", "healthy", Contract.LANGUAGE, "ja", "pass", "ok"),
    ("healthy_language_uk", "healthy", Contract.LANGUAGE, "uk", "pass", "ok"),
    ("slow_first_token", "slow", Contract.TTFT, None, "fail", "ttft_exceeded"),
    ("stall_after_headers", "stall", Contract.TTFT, None, "fail", "ttft_exceeded"),
    ("http_429", "ratelimit", Contract.TTFT, None, "transport", "http_429"),
    ("die_after_tokens", "dies", Contract.REFUSAL, None, "transport", "stream_cut"),
    ("midstream_502", "midstream", Contract.REFUSAL, None, "transport", "midstream_502"),
    ("mix_pt_es", "mixer", Contract.LANGUAGE, "pt", "fail", "language_mix"),
    ("switch_pt_en", "switcher", Contract.LANGUAGE, "pt", "fail", "language_switch"),
    ("mojibake_fr", "moji", Contract.LANGUAGE, "fr", "fail", "encoding_corruption"),
    ("mojibake_ru", "moji", Contract.LANGUAGE, "ru", "fail", "encoding_corruption"),
    ("fenced_json", "fenced", Contract.STRUCTURED, None, "fail", "fenced_json"),
    ("schema_wrong_enum", "badschema", Contract.STRUCTURED, None, "fail", "schema_violation"),
    ("invalid_json", "badjson", Contract.STRUCTURED, None, "fail", "invalid_json"),
    ("content_filter", "filter", Contract.REFUSAL, None, "fail", "content_filter"),
    ("refusal_text", "refuser", Contract.REFUSAL, None, "fail", "refusal_pattern"),
    ("empty_reply", "empty", Contract.REFUSAL, None, "fail", "empty_reply"),
    ("truncated", "trunc", Contract.REFUSAL, None, "fail", "truncated"),
    ("pin_not_honoured", "pinfail", Contract.REFUSAL, None, "inconclusive", "pin_mismatch"),
    # incident a: the same endpoint's three text replies, judged together by the opening contract
    ("corrupt_ttft", "corrupt", Contract.TTFT, None, "pass", "ok"),
    ("corrupt_refusal", "corrupt", Contract.REFUSAL, None, "pass", "ok"),
    ("corrupt_language_de", "corrupt", Contract.LANGUAGE, "de", "pass", "ok"),
]


def provider_name(tag: str) -> str:
    return tag.title()


def fleet_toml() -> str:
    lines = [f'[[models]]\nid = "{MODEL}"\n']
    for tag, fault in FAULTS.items():
        lines.append(f'[[models.endpoints]]\ntag = "{tag}"\nprovider_name = "{provider_name(tag)}"\n')
        if fault:
            lines.append(f"[[models.endpoints.faults]]\n{fault}\n")
    return "\n".join(lines)


def to_jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple | list):
        return [to_jsonable(v) for v in value]
    return value


def record() -> list[Path]:
    OUT.mkdir(exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        fleet_path = Path(tmp) / "fleet.toml"
        fleet_path.write_text(fleet_toml(), encoding="utf-8")
        with start_simulator(fleet_path, time_scale=0.01) as sim, httpx.Client() as client:
            for name, tag, contract, language, outcome, reason in SCENARIOS:
                endpoint = Endpoint(model=MODEL, tag=tag, provider_name=provider_name(tag))
                attempt = probe_once(
                    client,
                    base_url=sim.base_url,
                    api_key=sim.api_key,
                    endpoint=endpoint,
                    contract=contract,
                    round_id="recorded",
                    attempt_no=1,
                    language=language,
                    cfg=CFG,
                    clock=SystemClock(),
                )
                fixture = {
                    "scenario": name,
                    "fault": FAULTS[tag] or "healthy",
                    "expect": {"outcome": outcome, "reason": reason},
                    "ttft_s": CFG.ttft_s,
                    "attempt": to_jsonable(attempt),
                }
                path = OUT / f"{name}.json"
                path.write_text(json.dumps(fixture, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
                written.append(path)
    return written


if __name__ == "__main__":
    paths = record()
    print(f"wrote {len(paths)} fixtures to {OUT}")
