"""The router judges every answer it passes (issue 29 item 2), end to end: the OpenRouter simulator's quality
faults (provider_canary/simulator/faults.py), through the real router and the official `openai` client, streaming and
not, counted per endpoint and class in `live_requests` with the canary's Reason values. And the router never stores
or logs prompt or answer text: a marker planted in prompts, tools, schemas and answers is in no sink.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import httpx
import openai
import pytest

import provider_canary.simulator.fleet as simulator_fleet
import provider_canary.simulator.server as simulator_server
from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import RunningRouter, start_router
from tests.support.fake_upstream import FakeUpstream, Script
from tests.support.read_db import query

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

MODEL = "acme/tools-1"
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
           "required": ["city", "unit"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
STRUCTURED = {"type": "json_schema", "json_schema": {"name": "person", "strict": True, "schema": PERSON}}
ASK_WEATHER = [{"role": "user", "content": "What is the weather in Lisbon today?"}]
ASK_TEXT = [{"role": "user", "content": "Parle-moi de la ville portuaire, s’il te plaît."}]  # accents: mojibake shows
ASK_PERSON = [{"role": "user", "content": "Describe a person as JSON."}]
#: endpoint tag -> its fault (every request it applies to)
FAULTS = {
    "healthy": None,
    "toolschema": {"kind": "schema_violating_args"},
    "tooljson": {"kind": "bad_json_args"},
    "toolname": {"kind": "unknown_tool"},
    "structschema": {"kind": "schema_violation"},
    "structjson": {"kind": "invalid_json"},
    "empty": {"kind": "empty_reply"},
    "mojibake": {"kind": "mojibake"},
    "opening": {"kind": "corrupted_opening", "prefixes": ['",']},
}


@contextmanager
def stack(tmp: Path) -> Iterator[tuple[Any, RunningRouter]]:
    price = {"prompt": "0.0000001", "completion": "0.0000001"}
    endpoints = [{"tag": tag, "provider_name": tag.title(), "pricing": price,
                  "supported_parameters": ["tools", "response_format", "structured_outputs", "max_tokens"],
                  "faults": [fault] if fault else []} for tag, fault in FAULTS.items()]
    fleet = simulator_fleet.parse_fleet({"models": [{"id": MODEL, "endpoints": endpoints}]})
    with simulator_server.start_simulator(fleet, time_scale=0.0) as sim:
        raw = {
            "router": {"flush_interval_s": 0.05, "savers": [], "events_db": str(tmp / "canary.duckdb"),
                       "events_path": str(tmp / "events.jsonl"), "savings_path": str(tmp / "savings.jsonl"),
                       "publish_dir": str(tmp / "published")},
            "route": [{"model": tag, "tier": [{"base_url": sim.base_url, "model": MODEL, "api_key_env": "SIM_KEY",
                                               "provider": {"only": [tag], "allow_fallbacks": False}}]}
                      for tag in FAULTS],
        }
        with start_router(parse_routes(raw), env={"SIM_KEY": sim.api_key}) as running:
            yield sim, running


def ask(r: RunningRouter, tag: str, stream: bool, **kind: Any) -> None:
    c = openai.OpenAI(base_url=r.base_url, api_key="client", max_retries=0, timeout=30)
    if stream:
        for _ in c.chat.completions.create(model=tag, stream=True, **kind):
            pass
    else:
        c.chat.completions.create(model=tag, **kind)


def judged(tmp: Path) -> Counter[tuple[str, str, str]]:
    rows = query(tmp / "canary.duckdb", "SELECT tag, quality, reason, sum(requests)::INT FROM live_requests "
                                        "WHERE quality IS NOT NULL GROUP BY ALL")
    return Counter({(tag, quality, reason): n for tag, quality, reason, n in rows})


def test_quality_faults_are_counted_per_endpoint_and_class_streaming_and_not(tmp_path: Path) -> None:
    with stack(tmp_path) as (_, r):
        for tag in FAULTS:
            for stream in (True, False):
                ask(r, tag, stream, messages=ASK_WEATHER, tools=TOOLS)
                ask(r, tag, stream, messages=ASK_PERSON, response_format=STRUCTURED)
                ask(r, tag, stream, messages=ASK_TEXT)
        health = httpx.get(r.base_url.removesuffix("/v1") + "/healthz").json()
        metrics = httpx.get(r.base_url.removesuffix("/v1") + "/metrics").text
    counts = judged(tmp_path)
    fails = {k: n for k, n in counts.items() if k[2] != "ok"}
    assert fails == {
        ("toolschema", "tools", "schema_violation"): 2,
        ("tooljson", "tools", "bad_json_args"): 2,
        ("toolname", "tools", "unknown_tool"): 2,
        ("structschema", "structured", "schema_violation"): 2,
        ("structjson", "structured", "invalid_json"): 2,
        ("empty", "empty", "empty_reply"): 2,
        ("mojibake", "encoding", "encoding_corruption"): 2,
        ("opening", "encoding", "corrupted_opening"): 2,
    }
    assert counts[("healthy", "tools", "ok")] == 2 and counts[("healthy", "structured", "ok")] == 2
    assert counts[("healthy", "empty", "ok")] == 6 and counts[("healthy", "encoding", "ok")] == 6
    assert health["judge"]["dropped"] == health["judge"]["errors"] == 0
    assert re.search(r'canary_router_answers_judged_total\{model="acme/tools-1",quality="tools",'
                     r'reason="schema_violation",route="model:toolschema",server="127\.0\.0\.1:\d+",tier="1"\} 2\.0',
                     metrics)


def test_bytes_that_are_not_utf8_after_the_first_chunk_are_counted_not_passed_as_ok(tmp_path: Path) -> None:
    """The simulator's `invalid_utf8` (a chunk of bytes that are not UTF-8 after two text chunks), streamed through
    the router: the client got them, the attempt ended `ok`; the judge counts the answer's encoding as the probe
    would, `protocol_violation`. Non-streamed, the body is no JSON: a failover (`bad_frame_before_commit`)."""
    endpoints = [{"tag": "badbytes", "provider_name": "Badbytes", "faults": [{"kind": "invalid_utf8"}]}]
    fleet = simulator_fleet.parse_fleet({"models": [{"id": MODEL, "endpoints": endpoints}]})
    with simulator_server.start_simulator(fleet, time_scale=0.0) as sim:
        raw = {"router": {"flush_interval_s": 0.05, "savers": [], "events_db": str(tmp_path / "canary.duckdb"),
                          "events_path": str(tmp_path / "events.jsonl"), "savings_path": str(tmp_path / "s.jsonl"),
                          "publish_dir": str(tmp_path / "published")},
               "route": [{"model": "badbytes", "tier": [{
                   "base_url": sim.base_url, "model": MODEL, "api_key_env": "SIM_KEY",
                   "provider": {"only": ["badbytes"]}}]}]}
        with start_router(parse_routes(raw), env={"SIM_KEY": sim.api_key}) as r:
            for _ in range(3):
                with httpx.stream("POST", r.base_url + "/chat/completions", timeout=30, json={
                        "model": "badbytes", "stream": True, "messages": ASK_TEXT}) as reply:
                    assert reply.status_code == 200 and b"\xff\xfe" in reply.read()  # forwarded as it came
            with pytest.raises(openai.APIStatusError):
                ask(r, "badbytes", False, messages=ASK_TEXT)
            health = httpx.get(r.base_url.removesuffix("/v1") + "/healthz").json()
    assert judged(tmp_path) == Counter({("badbytes", "encoding", "protocol_violation"): 3})
    assert health["judge"]["judged"] == 3 and health["judge"]["errors"] == 0


MARKER = "ZQX-MARKER-7781"


def test_no_prompt_or_answer_text_reaches_any_sink(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A marker in prompts, tool names and descriptions, schemas and answers (text, tool arguments, JSON that
    fails its schema): nowhere in the route events, savings, DuckDB, logs, /metrics or /healthz."""
    caplog.set_level(logging.DEBUG)
    secret_tools = [{"type": "function", "function": {"name": "get_weather", "description": MARKER,
                                                      "parameters": {**WEATHER, "title": MARKER}}}]
    scripts = {
        "text": Script("ok", text=f"{MARKER} is the answer"),
        "call": Script("tool_call", tool="get_weather", arguments=json.dumps({"city": MARKER})),  # fails its schema
        "badcall": Script("tool_call", tool=MARKER, arguments=f'{{"{MARKER}": '),
        "empty": Script("empty_stop"),
        "fail": Script("http_error", status=503),
    }
    with FakeUpstream(scripts) as up:
        raw = {"router": {"flush_interval_s": 0.05, "events_db": str(tmp_path / "canary.duckdb"),
                          "events_path": str(tmp_path / "events.jsonl"),
                          "savings_path": str(tmp_path / "savings.jsonl"),
                          "publish_dir": str(tmp_path / "published")},
               "route": [{"model": "chat", "tier": [{"base_url": up.base_url, "model": m, "provider": {"only": [m]}}
                                                    for m in ("fail", "empty", name)]}
                         for name in ("text",)] +
                        [{"model": name, "tier": [{"base_url": up.base_url, "model": "fail"},
                                                   {"base_url": up.base_url, "model": name}]}
                         for name in ("call", "badcall")]}
        with start_router(parse_routes(raw), env={}) as r:
            messages = [{"role": "system", "content": f"You are {MARKER}."},
                        {"role": "user", "content": f"Say {MARKER}."}]
            for stream in (True, False):
                ask(r, "chat", stream, messages=messages)
                for name in ("call", "badcall"):
                    ask(r, name, stream, messages=messages, tools=secret_tools)
                ask(r, "chat", stream, messages=messages,
                    response_format={"type": "json_schema", "json_schema": {"name": MARKER, "schema": PERSON}})
            base = r.base_url.removesuffix("/v1")
            seen = {"/metrics": httpx.get(base + "/metrics").text, "/healthz": httpx.get(base + "/healthz").text}
    assert sum(len(up.for_model(m)) for m in scripts) >= 12  # the requests did go through
    for path in tmp_path.rglob("*"):
        if path.is_file() and not path.name.endswith(".duckdb"):
            seen[str(path)] = path.read_text(encoding="utf-8", errors="replace")
    con = duckdb.connect(str(tmp_path / "canary.duckdb"), read_only=True)
    try:
        for (table,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
            seen[f"duckdb:{table}"] = json.dumps(con.execute(f'SELECT * FROM "{table}"').fetchall(), default=str)
        seen["duckdb:live_requests:reasons"] = json.dumps(con.execute(
            "SELECT DISTINCT quality, reason FROM live_requests").fetchall())
    finally:
        con.close()
    seen["logs"] = "\n".join(record.getMessage() for record in caplog.records)
    assert "schema_violation" in seen["duckdb:live_requests:reasons"]  # the sinks did record the judged answers
    assert [where for where, text in seen.items() if MARKER in text] == []
