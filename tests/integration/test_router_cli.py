"""`canary router`: bad routes are one stderr line and exit 2; a good file serves the OpenAI surface."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ROOT = Path(__file__).resolve().parents[2]
RUN = "import typer; from provider_canary.cli.router_cmd import router_command; typer.run(router_command)"


def run_router(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RUN, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("[[route]\nmodel =", "not valid TOML"),
        ('[[route]]\nmodel = "chat"\n', "needs at least one [[route.tier]]"),
        (
            '[[route]]\nmodel = "c"\n[[route.tier]]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
            'api_key_env = "ROUTER_TEST_UNSET_KEY"\n',
            "ROUTER_TEST_UNSET_KEY is not set",
        ),
    ],
    ids=["bad-toml", "no-tier", "missing-key-variable"],
)
def test_a_bad_routes_file_is_one_line_and_exit_2(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "routes.toml"
    path.write_text(content, encoding="utf-8")
    result = run_router("--routes", str(path), "--port", "0")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("canary: routes: ")
    assert "Traceback" not in result.stderr


def test_a_missing_routes_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = run_router("--routes", str(tmp_path / "absent.toml"))
    assert result.returncode == 2 and "not found" in result.stderr and "Traceback" not in result.stderr


def test_the_command_serves_models_from_the_routes_file(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = tmp_path / "routes.toml"
    path.write_text(
        f'[router]\nevents_path = "{tmp_path / "e.jsonl"}"\nsavings_path = "{tmp_path / "s.jsonl"}"\n'
        '[[route]]\nmodel = "chat"\n[[route.tier]]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN, "--routes", str(path), "--port", str(port), "--log-level", "warning"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                models = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1).json()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.1)
        assert [m["id"] for m in models["data"]] == ["chat"]
        # the only tier refuses connections: the client gets the router's 503, not a hang or a traceback
        reply = httpx.post(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            timeout=10,
            json={"model": "chat", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert reply.status_code == 503 and "tier 1: connect" in reply.json()["error"]["message"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_busy_port_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "routes.toml"
    path.write_text(
        '[[route]]\nmodel = "chat"\n[[route.tier]]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    )
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        result = run_router("--routes", str(path), "--port", str(busy.getsockname()[1]))
    assert result.returncode == 2 and "cannot listen" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
