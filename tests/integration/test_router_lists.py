"""The router knows its lists (issue 30 item 2): paths in a routes file resolve against the file, the start
log names each tier's list and its entries, a missing list is said (or refused), and /healthz and /metrics say
each list's path, entries and age (stale past two canary intervals)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from provider_canary.router.route_events import read_route_events
from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import start_router
from tests.support.fake_upstream import FakeUpstream, Script
from tests.support.router_proc import ROOT, RUN, free_port, router_process

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]



def published(directory: Path, model: str, ignore: list[str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{model}.json"
    path.write_text(json.dumps({"model": model, "ignore": ignore, "entries": []}), encoding="utf-8")
    return path


def routes_file(home: Path, base_url: str, extra: str = "") -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "routes.toml"
    path.write_text(
        f'[router]\npublish_dir = "published"\nevents_path = "events.jsonl"\n{extra}[[route]]\nmodel = "chat"\n'
        + "".join(f'[[route.tier]]\nbase_url = "{base_url}"\nmodel = "{m}"\n'
                  f'provider = {{ only = ["{m}"], allow_fallbacks = false }}\n' for m in ("t1", "t2")),
        encoding="utf-8")
    return path


def test_started_from_another_directory_the_router_obeys_the_list_beside_its_routes_file(tmp_path: Path) -> None:
    """issue 30: from another directory, a missing file was "an empty list" and traffic went to the provider the
    canary had suspended; now the list beside the routes file is read, and the start log says so."""
    home = tmp_path / "srv" / "router"
    published(home / "published", "t1", ["t1"])  # the canary suspended tier 1's only provider
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    log = tmp_path / "router.log"
    with FakeUpstream({"t1": Script("ok", text="from the suspended one"), "t2": Script("ok", text="fine")}) as up:
        with router_process(routes_file(home, up.base_url), log, cwd=elsewhere) as base:
            reply = httpx.post(f"{base}/v1/chat/completions", timeout=30,
                               json={"model": "chat", "messages": [{"role": "user", "content": "hi"}]})
            health = httpx.get(f"{base}/healthz").json()
        assert [q.model for q in up.requests] == ["t2"]
    assert reply.json()["choices"][0]["message"]["content"] == "fine"
    text = log.read_text(encoding="utf-8")
    t1 = re.escape(str(home / "published" / "t1.json"))
    assert re.search(rf"route model:chat tier 1 reads the canary's ignore list {t1}: 1 entries, written \d+ s ago",
                     text)
    assert re.search(r"WARNING router.ignore route model:chat tier 2: waiting for the canary's first round: its "
                     r"ignore list .*t2\.json does not exist yet", text)  # a fresh install: an ERROR an interval later
    assert "HTTP Request:" not in text and "savings " not in text  # nothing at INFO per request (issue 44)
    assert [e.reason for e in read_route_events(home / "events.jsonl")] == ["pinned_providers_excluded"]
    assert not (elsewhere / "events.jsonl").exists()
    assert (health["lists_missing"], [(x["tier"], x["exists"], x["entries"]) for x in health["lists"]]) == (
        1, [(1, True, 1), (2, False, 0)])


def test_a_missing_list_refuses_to_start_when_required(tmp_path: Path) -> None:
    routes = routes_file(tmp_path, "http://127.0.0.1:9/api/v1", "require_ignore_lists = true\n")
    published(tmp_path / "published", "t1", [])
    done = subprocess.run([sys.executable, "-c", RUN, "--routes", str(routes), "--port", str(free_port())],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("canary: routes: model:chat tier 2 expects the canary's ignore "
                                                   f"list {tmp_path / 'published' / 't2.json'}, which does not exist")


def test_healthz_and_metrics_say_each_lists_entries_and_age_and_a_stale_one(tmp_path: Path) -> None:
    lists = tmp_path / "published"
    fresh = published(lists, "t1", ["a", "b"])
    old = published(lists, "t2", ["c"])
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    raw = {"router": {"publish_dir": str(lists), "canary_interval_s": 600, "events_path": str(tmp_path / "e.jsonl"),
                      "savings_path": str(tmp_path / "s.jsonl")},
           "route": [{"model": "chat", "tier": [{"base_url": "http://127.0.0.1:9/api/v1", "model": m}
                                                for m in ("t1", "t2", "t3")]}]}
    with start_router(parse_routes(raw), env={}) as r:
        base = r.base_url.removesuffix("/v1")
        health = httpx.get(base + "/healthz").json()
        metrics = httpx.get(base + "/metrics").text
    rows = {x["tier"]: x for x in health["lists"]}
    assert (rows[1]["path"], rows[1]["entries"], rows[1]["stale"]) == (str(fresh), 2, False)
    assert rows[1]["age_s"] < 600 and 3500 < rows[2]["age_s"] < 3700 and rows[2]["stale"] is True
    assert (rows[3]["exists"], health["lists_missing"], health["lists_stale"]) == (False, 1, 1)
    labels = '{model="%s",route="model:chat",tier="%d"}'
    assert f"canary_router_ignore_list_entries{labels % ('t1', 1)} 2.0" in metrics
    assert f"canary_router_ignore_list_stale{labels % ('t2', 2)} 1.0" in metrics
    assert f"canary_router_ignore_list_present{labels % ('t3', 3)} 0.0" in metrics
    age = re.search(r'canary_router_ignore_list_age_seconds\{model="t2",route="model:chat",tier="2"\} (\S+)', metrics)
    assert age is not None and 3500 < float(age.group(1)) < 3700
