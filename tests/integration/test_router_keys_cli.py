"""`canary router keys add` and `canary router --host` as an operator runs them: the printed block pasted into a
routes file lets the official `openai` client in with the printed key (and no other) through the router's own
process; without any client the router refuses to listen beyond loopback, in one line, exit 2."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tomllib
from pathlib import Path

import openai
import pytest
from typer.testing import CliRunner

from provider_canary.cli.main import app
from provider_canary.router.clients import key_sha256, new_key
from tests.support.fake_upstream import FakeUpstream, Script
from tests.support.router_proc import router_process

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

CANARY = str(Path(sys.executable).with_name("canary"))
ROOT = Path(__file__).resolve().parents[2]


def canary(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CANARY, *args], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def routes_file(tmp: Path, base_url: str, extra: str = "") -> Path:
    path = tmp / "routes.toml"
    path.write_text(f'[router]\nevents_path = "{tmp / "e.jsonl"}"\nsavings_path = "{tmp / "s.jsonl"}"\n'
                    f'publish_dir = "{tmp / "published"}"\n{extra}\n'
                    f'[[route]]\nmodel = "chat"\n[[route.tier]]\nbase_url = "{base_url}"\nmodel = "t1"\n',
                    encoding="utf-8")
    return path


def test_keys_add_prints_a_key_once_and_the_block_that_lets_it_in(tmp_path: Path) -> None:
    with FakeUpstream({"t1": Script("ok", text="Served")}) as up:
        routes = routes_file(tmp_path, up.base_url)
        added = canary("router", "keys", "add", "team-b", "--rpm", "5", "--routes", str(routes))
        assert added.returncode == 0, added.stderr
        key = next(w for w in added.stderr.split() if w.startswith("sk-canary-"))
        assert key not in added.stdout and len(key) > 40
        block = tomllib.loads(added.stdout)["client"]
        assert block == [{"name": "team-b", "key_sha256": key_sha256(key), "requests_per_minute": 5}]
        with routes.open("a", encoding="utf-8") as f:  # as the operator pastes it: `>> routes.toml`
            f.write("\n" + added.stdout)
        again = CliRunner().invoke(app, ["router", "keys", "add", "team-b", "--routes", str(routes)])
        assert again.exit_code == 2 and again.stderr.strip().splitlines() == [
            f"canary: routes: {routes} already has a client named 'team-b'"]
        with router_process(routes, tmp_path / "router.log") as base:
            ok = openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0, timeout=20)
            reply = ok.chat.completions.create(model="chat", messages=[{"role": "user", "content": "Hi"}])
            assert reply.choices[0].message.content == "Served"
            wrong = new_key(secrets.token_urlsafe(32))  # a key the file does not hold
            with pytest.raises(openai.AuthenticationError):
                openai.OpenAI(base_url=f"{base}/v1", api_key=wrong, max_retries=0).models.list()
    assert len(up.requests) == 1
    assert key not in (tmp_path / "router.log").read_text()


def test_without_clients_the_router_refuses_a_non_loopback_host(tmp_path: Path) -> None:
    routes = routes_file(tmp_path, "http://127.0.0.1:9/v1")
    refused = canary("router", "--host", "0.0.0.0", "--port", "0", "--routes", str(routes))
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("canary: routes: the router would serve anyone who reaches 0.0.0.0")
    assert "Traceback" not in refused.stderr
