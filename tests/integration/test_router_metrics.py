"""The router's `GET /metrics` (provider_canary/router/metrics.py) against scripted loopback upstreams and the `openai`
client: requests per upstream, failovers by tier and reason, the first-content-chunk histogram, streams that failed
after the commit, ignore-list reloads. Parsed with prometheus_client's own parser."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from provider_canary.router.server import RunningRouter
from tasks.core.plan import model_slug
from tests.integration.test_router_failover import MESSAGES, client, router_for
from tests.support.fake_upstream import FakeUpstream, Script

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def scrape(r: RunningRouter) -> dict[str, list[tuple[dict[str, str], float]]]:
    text = httpx.get(f"{r.base_url.removesuffix('/v1')}/metrics", timeout=5).text
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def total(fams: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    return sum(v for lab, v in fams.get(name, []) if all(lab.get(k) == x for k, x in labels.items()))


def test_failover_before_the_commit_and_death_after_it_are_counted(tmp_path: Path) -> None:
    scripts = {"t1": Script("http_error", status=503), "t2": Script("ok", text="Tier two answers")}
    with FakeUpstream(scripts) as up, router_for(up, tmp_path) as r:
        stream = client(r).chat.completions.create(model="chat", messages=MESSAGES, stream=True)  # type: ignore[arg-type]
        assert "".join(ch.choices[0].delta.content or "" for ch in stream if ch.choices) == "Tier two answers"
        up.scripts["t2"] = Script("die_after_first", text="Partial")
        with pytest.raises(openai.APIError):
            for _ in client(r).chat.completions.create(model="chat", messages=MESSAGES, stream=True):  # type: ignore[arg-type]
                pass
        fams = scrape(r)
    server = up.base_url.split("://", 1)[1].split("/", 1)[0]  # host:port, no scheme, no path
    host, port = server.split(":")
    assert total(fams, "canary_router_failovers_total", tier="1", reason="http_503", route="model:chat",
                 server=server, model="t1") == 2
    assert total(fams, "canary_router_requests_total", outcome="served") == 2
    assert {(lab["tier"], lab["server"], lab["model"]) for lab, _ in fams["canary_router_requests_total"]} == {
        ("2", server, "t2")}
    ttfc = "gen_ai_client_operation_time_to_first_chunk_seconds"
    genai = {"gen_ai_operation_name": "chat", "gen_ai_provider_name": "openrouter", "gen_ai_request_model": "t2",
             "server_address": host, "server_port": port, "route": "model:chat", "tier": "2"}
    assert total(fams, f"{ttfc}_count", **genai) == 2
    assert total(fams, f"{ttfc}_bucket", **genai, le="+Inf") == 2
    assert total(fams, "canary_router_stream_failures_after_commit_total", server=server, model="t2", tier="2") == 1
    assert not [lab for name in fams for lab, _ in fams[name] if "upstream" in lab]  # no unbounded label left


def test_all_tiers_failing_and_ignore_list_reloads_are_counted(tmp_path: Path) -> None:
    scripts = {"t1": Script("http_error", status=502), "t2": Script("http_error", status=502)}
    with FakeUpstream(scripts) as up, router_for(up, tmp_path) as r:
        published = tmp_path / "published"
        published.mkdir()
        path = published / f"{model_slug('t1')}.json"
        path.write_text(json.dumps({"model": "t1", "ignore": ["bad"], "entries": []}), encoding="utf-8")
        with pytest.raises(openai.APIStatusError):
            client(r).chat.completions.create(model="chat", messages=MESSAGES)  # type: ignore[arg-type]
        fams = scrape(r)
    assert total(fams, "canary_router_requests_total", outcome="all_failed", route="model:chat") == 1
    assert total(fams, "canary_router_failovers_total", server=up.base_url.split("://", 1)[1].split("/", 1)[0]) == 2
    assert total(fams, "canary_router_ignore_reloads_total") == 1


@pytest.mark.parametrize(("base_url", "server"), [
    ("https://openrouter.ai/api/v1", "openrouter.ai"),
    ("http://127.0.0.1:8080/v1", "127.0.0.1:8080"),
    ("https://user:secret@proxy.example:8443/openrouter/api/v1?x=1", "proxy.example:8443"),
])
def test_server_is_host_and_port_only(base_url: str, server: str) -> None:
    from provider_canary.router.metrics import server_of

    assert server_of(base_url) == server  # never a credential, a path or a query in a label
