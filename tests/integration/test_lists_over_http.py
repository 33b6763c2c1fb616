"""The canary's lists over HTTP, for real: the exporter (`serve_metrics`: `canary metrics`, `canary serve
--metrics-port`) serves `GET /lists/<slug>.json`, and a router with `lists_url` polls it
(provider_canary/router/lists_poll.py): a new exclusion reaches it within `lists_poll_s`, its copy's age is the canary's
write, a list of another model is refused and the last good copy kept, the canary down leaves the copy in force (a
restart too) and said once, and when the canary is back the restarted router asks with its copy's tag and gets a 304."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import RunningRouter, start_router
from provider_canary.router.shell import build_shell
from tasks.config import CanaryConfig
from tasks.core.etag import strong_etag
from tasks.errors import RoutesError
from tasks.ignore_list.publish import write_atomically
from tasks.metrics.server import serve_metrics
from tests.support.prometheus import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

MODEL = "acme/m-1.5"
SLUG = "acme-m-1-5"


def publish(directory: Path, ignore: list[str], model: str = MODEL, written_ago_s: float = 0.0) -> bytes:
    """What tasks/ignore_list/publish.py writes for a model (atomically), `written_ago_s` seconds ago."""
    body = json.dumps({"model": model, "ignore": ignore, "entries": []}, indent=2) + "\n"
    write_atomically(directory / f"{SLUG}.json", body)
    at = time.time() - written_ago_s
    os.utime(directory / f"{SLUG}.json", (at, at))
    return body.encode()


@contextmanager
def exporter(tmp: Path, port: int) -> Iterator[str]:
    db = tmp / "canary.duckdb"  # no database yet: the lists do not need one
    server: ThreadingHTTPServer = serve_metrics([db], CanaryConfig(db_path=str(db), publish_dir=str(tmp / "pub")), port)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_exporter_serves_a_list_its_tag_a_304_and_a_404(tmp_path: Path) -> None:
    (tmp_path / "pub").mkdir()
    body = publish(tmp_path / "pub", ["alpha"])
    with exporter(tmp_path, free_port()) as base, httpx.Client(timeout=10) as client:
        first = client.get(f"{base}/lists/{SLUG}.json")
        again = client.get(f"{base}/lists/{SLUG}.json", headers={"If-None-Match": first.headers["etag"]})
        missing = client.get(f"{base}/lists/acme-nobody.json")
        metrics = client.get(f"{base}/metrics")
    assert (first.status_code, first.content, first.headers["etag"]) == (200, body, strong_etag(body))
    assert first.headers["content-type"] == "application/json" and "last-modified" in first.headers
    assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", strong_etag(body))
    assert "content-length" not in again.headers and again.headers["last-modified"] == first.headers["last-modified"]
    assert missing.status_code == 404 and missing.json() == {"error": "no published ignore list acme-nobody.json"}
    assert metrics.status_code == 200 and b"canary_snapshot_up 0.0" in metrics.content


def _routes(tmp: Path, lists_url: str, publish_dir: Path) -> Any:
    return parse_routes({"router": {"lists_url": lists_url, "lists_poll_s": 0.2, "canary_interval_s": 3,
                                    "publish_dir": str(publish_dir), "events_path": str(tmp / "events.jsonl"),
                                    "savings_path": str(tmp / "savings.jsonl")},
                         "route": [{"model": "chat", "tier": [{"base_url": "http://127.0.0.1:9/api/v1",
                                                               "model": MODEL}]}]})


def _health(r: RunningRouter) -> dict[str, Any]:
    return dict(httpx.get(r.base_url.removesuffix("/v1") + "/healthz", timeout=5).json())


def _polls(r: RunningRouter) -> dict[str, float]:
    text = httpx.get(r.base_url.removesuffix("/v1") + "/metrics", timeout=5).text
    return {line.split('"')[1]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if line.startswith("canary_router_lists_polls_total{")}


def _until(what: str, check: Any, timeout_s: float = 10.0) -> float:
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < timeout_s, f"timed out waiting for {what}"
        time.sleep(0.05)
    return time.monotonic() - start


def test_a_router_polls_its_lists_keeps_the_last_good_copy_and_reports_the_canarys_age(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    canary, copies, port = tmp_path / "pub", tmp_path / "router-copies", free_port()
    canary.mkdir()
    publish(canary, [], written_ago_s=100)
    routes = _routes(tmp_path, f"http://127.0.0.1:{port}/lists", copies)
    tier = routes.routes[0].tiers[0]
    caplog.set_level(logging.INFO, logger="router.lists")
    with exporter(tmp_path, port):
        with start_router(routes) as r:
            [listed] = _health(r)["lists"]  # the first pass ran before the router reported its lists
            assert (listed["exists"], listed["entries"], listed["path"]) == (True, 0, str(copies / f"{SLUG}.json"))
            assert 99 <= listed["age_s"] <= 110 and listed["stale"] is True  # the canary's write: 100 s > 2 x 3 s

            publish(canary, ["alpha"])
            took = _until("the exclusion", lambda: r.shell.ignore.for_tier(tier) == ("alpha",))
            assert took < 2.0, took  # within lists_poll_s (0.2 s) and the scheduling of a loaded machine
            [listed] = _health(r)["lists"]
            assert listed["entries"] == 1 and listed["age_s"] < 5 and listed["stale"] is False

            publish(canary, ["alpha", "beta"], model="acme/another")  # not this model's list: refused
            _until("the refusal", lambda: _polls(r).get("refused", 0) >= 1)
            assert r.shell.ignore.for_tier(tier) == ("alpha",)
            publish(canary, ["alpha"], written_ago_s=30)  # the same list again, written 30 s ago
            _until("the canary's time on the copy", lambda: _health(r)["lists"][0]["stale"])
            assert _polls(r)["ok"] >= 2 and _polls(r)["not_modified"] >= 1
        # the canary down: a restarted router starts with its copy, which still excludes; said once
        caplog.clear()
    with start_router(routes) as r:
        time.sleep(1.0)  # five failed passes
        health = _health(r)
        assert r.shell.ignore.for_tier(tier) == ("alpha",)
        assert health["lists"][0]["exists"] and health["lists"][0]["stale"] is True
        assert health["lists_url"]["error"] == "ConnectError" and health["lists_url"]["last_ok_age_s"] is None
        said = [m.getMessage() for m in caplog.records if m.name == "router.lists"]
        assert said == [f"lists: http://127.0.0.1:{port}/lists does not answer (ConnectError); the tiers go on with "
                        "the last good copies (stale after two canary intervals)"]
        assert _polls(r)["error"] >= 5
        # back: the restarted router asks with its copy's tag, and is told nothing changed
        with exporter(tmp_path, port):
            _until("the canary again", lambda: _health(r)["lists_url"]["error"] is None)
            assert _polls(r)["not_modified"] >= 1 and _polls(r)["ok"] == 0
        assert said != [m.getMessage() for m in caplog.records if m.name == "router.lists"]  # "answers again"


def test_the_router_never_keeps_its_copies_in_the_canarys_publish_directory(tmp_path: Path) -> None:
    canary = tmp_path / "pub"
    canary.mkdir()
    (canary / ".canary-db").write_text(str(tmp_path / "canary.duckdb"))
    with pytest.raises(RoutesError, match="is the canary's own publish directory"):
        build_shell(_routes(tmp_path, "http://127.0.0.1:9/lists", canary))


def test_a_copy_deleted_by_hand_comes_back_and_a_directory_it_cannot_write_is_one_line(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    canary, port = tmp_path / "pub", free_port()
    canary.mkdir()
    publish(canary, ["alpha"])
    (tmp_path / "a-file").write_text("")
    caplog.set_level(logging.INFO, logger="router.lists")
    with exporter(tmp_path, port):
        with start_router(_routes(tmp_path, f"http://127.0.0.1:{port}/lists", tmp_path / "copies")) as r:
            copy = tmp_path / "copies" / f"{SLUG}.json"
            assert copy.exists()
            copy.unlink()  # the next pass asks without a tag, and keeps the list again
            _until("the copy again", copy.exists)
            assert r.shell.ignore.for_tier(r.shell.routes.routes[0].tiers[0]) == ("alpha",)
        nowhere = tmp_path / "a-file" / "copies"  # under a file: no directory can be made there
        with start_router(_routes(tmp_path, f"http://127.0.0.1:{port}/lists", nowhere)) as r:
            time.sleep(0.5)
            assert _health(r)["lists_url"]["error"].startswith(f"cannot write in {nowhere}: NotADirectoryError")
    said = [m.getMessage() for m in caplog.records if m.name == "router.lists" and "cannot write" in m.getMessage()]
    assert len(said) == 1, said
