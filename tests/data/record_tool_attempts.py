"""Record real simulator streams of the tools contract as fixtures for its golden tests.

    python tests/data/record_tool_attempts.py        # rewrites tests/data/recorded/tools/*.json

Like tests/data/record_attempts.py (whose helpers it reuses): starts the simulator with the fleet below,
sends both turns of the tools contract (attempt 1 = the call turn, attempt 2 = the control turn) through
the real probe client, and saves the two Attempts with the outcome and reason the scenario is EXPECTED to
get (written by hand from the fault's definition, never computed by the judge).
tests/unit/contracts/test_recorded_tools.py replays them through `tasks.core.judge.judge_round`.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from provider_canary.simulator.server import start_simulator  # noqa: E402
from tasks.core.types import Contract, Endpoint  # noqa: E402
from tasks.probe.attempt import probe_once  # noqa: E402
from tasks.runtime.clock import SystemClock  # noqa: E402
from tests.data.record_attempts import CFG, MODEL, provider_name, to_jsonable  # noqa: E402

OUT = Path(__file__).with_name("recorded") / "tools"

#: tag -> fault TOML lines ("" = healthy)
FAULTS: dict[str, str] = {
    "healthy": "",
    "nocall": 'kind = "no_call"',
    "badjson": 'kind = "bad_json_args"\nmode = "truncated"',
    "quotes": 'kind = "bad_json_args"\nmode = "single_quotes"',
    "unknown": 'kind = "unknown_tool"',
    "badargs": 'kind = "schema_violating_args"\nmode = "nested"',
    "noenum": 'kind = "schema_violating_args"\nmode = "wrong_enum"',
    "eager": 'kind = "call_when_none_needed"',
    "cut": 'kind = "truncated"\napplies_to = "tools"\nwords = 3',
    "ratelimit": 'kind = "http_error_before_stream"\nstatus = 429',
    "dies": 'kind = "die_after_tokens"\ntokens = 4',
    "pinfail": 'kind = "pin_not_honoured"\nserved_by = "Imposter"',
}

#: (name, tag, expected outcome, expected reason)
SCENARIOS: list[tuple[str, str, str, str]] = [
    ("tools_healthy", "healthy", "pass", "ok"),
    ("tools_no_call", "nocall", "fail", "no_call"),
    ("tools_bad_json_args_truncated", "badjson", "fail", "bad_json_args"),
    ("tools_bad_json_args_single_quotes", "quotes", "fail", "bad_json_args"),
    ("tools_unknown_tool", "unknown", "fail", "unknown_tool"),
    ("tools_schema_violating_args_nested", "badargs", "fail", "schema_violation"),
    ("tools_schema_violating_args_enum", "noenum", "fail", "schema_violation"),
    ("tools_call_when_none_needed", "eager", "fail", "unneeded_call"),
    ("tools_truncated_before_a_call", "cut", "inconclusive", "truncated"),
    ("tools_pin_not_honoured", "pinfail", "inconclusive", "pin_mismatch"),
    ("tools_http_429", "ratelimit", "transport", "http_429"),
    ("tools_stream_cut_mid_call", "dies", "transport", "stream_cut"),
]


def fleet_toml() -> str:
    lines = [f'[[models]]\nid = "{MODEL}"\n']
    for tag, fault in FAULTS.items():
        lines.append(f'[[models.endpoints]]\ntag = "{tag}"\nprovider_name = "{provider_name(tag)}"\n')
        if fault:
            lines.append(f"[[models.endpoints.faults]]\n{fault}\n")
    return "\n".join(lines)


def record() -> list[Path]:
    OUT.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        fleet_path = Path(tmp) / "fleet.toml"
        fleet_path.write_text(fleet_toml(), encoding="utf-8")
        with start_simulator(fleet_path, time_scale=0.01) as sim, httpx.Client() as client:
            for name, tag, outcome, reason in SCENARIOS:
                endpoint = Endpoint(
                    model=MODEL, tag=tag, provider_name=provider_name(tag), supported_parameters=("tools",)
                )
                attempts = [
                    probe_once(
                        client,
                        base_url=sim.base_url,
                        api_key=sim.api_key,
                        endpoint=endpoint,
                        contract=Contract.TOOLS,
                        round_id="recorded",
                        attempt_no=n,
                        language=None,
                        cfg=CFG,
                        clock=SystemClock(),
                    )
                    for n in (1, 2)
                ]
                fixture = {
                    "scenario": name,
                    "fault": FAULTS[tag] or "healthy",
                    "expect": {"outcome": outcome, "reason": reason},
                    "attempts": [to_jsonable(a) for a in attempts],
                }
                path = OUT / f"{name}.json"
                path.write_text(json.dumps(fixture, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
                written.append(path)
    return written


if __name__ == "__main__":
    paths = record()
    print(f"wrote {len(paths)} fixtures to {OUT}")
