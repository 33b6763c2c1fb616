"""What the router logs on a first day (issue 44): nothing at INFO per request (the savings of each request were a
Python dict at INFO; they are one compact DEBUG line, and every figure is in `savings_path`), and a list missing at
the start is "waiting for the canary's first round" until a canary interval has passed, then an ERROR, then an
INFO line when the canary writes it. The router runs in this process (start_router) against a scripted upstream."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import httpx
import pytest

from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import start_router
from tests.support.fake_upstream import FakeUpstream, Script

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

SYSTEM = {"role": "system", "content": "Be brief.   Be kind."}
MESSAGES = [SYSTEM, SYSTEM, {"role": "user", "content": "Hello   there"}]  # both default savers apply


def routes(tmp: Path, base_url: str, **router: object) -> object:
    return parse_routes({
        "router": {"publish_dir": str(tmp / "published"), "events_path": str(tmp / "events.jsonl"),
                   "savings_path": str(tmp / "savings.jsonl"), "flush_interval_s": 0.05, **router},
        "route": [{"model": "chat", "tier": [{"base_url": base_url, "model": "t1"}]}],
    })


def router_records(caplog: pytest.LogCaptureFixture, level: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("router") and r.levelno >= level]


def test_requests_log_nothing_at_info(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "published").mkdir()
    (tmp_path / "published" / "t1.json").write_text(json.dumps({"model": "t1", "ignore": [], "entries": []}))
    caplog.set_level(logging.DEBUG, logger="router")
    with FakeUpstream({"t1": Script("ok")}) as up, start_router(routes(tmp_path, up.base_url), env={}) as r:
        caplog.clear()  # the start's lines are not the requests'
        for stream in (False, True, False):
            reply = httpx.post(f"{r.base_url}/chat/completions", timeout=30,
                               json={"model": "chat", "stream": stream, "messages": MESSAGES})
            assert reply.status_code == 200, reply.text
    assert router_records(caplog, logging.INFO) == []
    debug = [r.getMessage() for r in router_records(caplog, logging.DEBUG) if r.getMessage().startswith("savings")]
    assert len(debug) == 3 and all("{" not in line for line in debug), debug
    assert debug[0].startswith("savings model:chat tier 1: ") and " prompt tokens saved (" in debug[0]
    saved = [json.loads(ln) for ln in (tmp_path / "savings.jsonl").read_text().splitlines()]
    assert len(saved) == 3 and saved[0]["savers"]  # the figures are in the savings file


def test_a_missing_list_waits_for_the_first_round_then_is_an_error(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="router")
    with FakeUpstream({"t1": Script("ok")}) as up:
        with start_router(routes(tmp_path, up.base_url, canary_interval_s=1.0), env={}):
            start = [(r.levelno, r.getMessage()) for r in router_records(caplog, logging.INFO)]
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not router_records(caplog, logging.ERROR):
                time.sleep(0.1)
            (tmp_path / "published").mkdir()
            (tmp_path / "published" / "t1.json").write_text(json.dumps({"model": "t1", "ignore": [], "entries": []}))
            while time.monotonic() < deadline and not any("is there now" in r.getMessage() for r in caplog.records):
                time.sleep(0.1)
    path = tmp_path / "published" / "t1.json"
    assert [(level, m) for level, m in start if "t1.json" in m] == [(logging.WARNING, (
        f"route model:chat tier 1: waiting for the canary's first round: its ignore list {path} does not exist yet, "
        "so this tier's requests go out without the canary's exclusions for t1 (an ERROR if it is still missing in "
        "1 s, one canary interval)"))]
    errors = [r.getMessage() for r in router_records(caplog, logging.ERROR)]
    assert errors == [f"route model:chat tier 1: the canary's ignore list {path} is missing: this tier's requests go "
                      "out without the canary's exclusions for t1 (check publish_dir or ignore_file)"]
    assert any(r.getMessage() == f"route model:chat tier 1: the canary's ignore list {path} is there now (0 entries)"
               for r in caplog.records)
