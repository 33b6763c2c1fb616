"""examples/routes-simulator.toml works as shipped: the simulator (as `canary simulator` starts it) and the
router (`canary router --routes examples/routes-simulator.toml`) stream one request end to end."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from provider_canary.simulator.server import start_simulator

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "routes-simulator.toml"
SIMULATOR_DEFAULT = "127.0.0.1:8787"  # `canary simulator`'s default port, which the example names


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_example_names_the_simulators_default_port_and_key() -> None:
    from typer.testing import CliRunner

    from provider_canary.cli.main import app

    text = EXAMPLE.read_text(encoding="utf-8")
    assert f"http://{SIMULATOR_DEFAULT}/api/v1" in text
    help_text = CliRunner().invoke(app, ["simulator", "--help"]).output
    assert "8787" in help_text
    with start_simulator(None, port=0) as sim:
        assert f"SIMULATOR_API_KEY={sim.api_key}" in text  # the key the README tells users to export


@pytest.mark.parametrize("after_demo", [False, True], ids=["no-ignore-list", "after-the-demo"])
def test_the_router_streams_through_the_example_routes(tmp_path: Path, after_demo: bool) -> None:
    """After the demo, demo-published/ ignores lambda/fp8, the one provider tier 1 pins: the route must
    skip that tier and answer from the next, not pass the upstream's 404 to the client."""
    router_port = _free_port()
    if after_demo:
        (tmp_path / "demo-published").mkdir()
        (tmp_path / "demo-published" / "meta-llama-llama-3-3-70b-instruct.json").write_text(json.dumps({
            "model": "meta-llama/llama-3.3-70b-instruct", "ignore": ["lambda/fp8"],
            "entries": [{"tag": "lambda/fp8", "layer": "canary", "reason": "ladder step 1", "until": None}],
        }))
    with start_simulator(None, port=0, time_scale=0.05) as sim:
        sim_port = sim.base_url.split(":")[2].split("/")[0]
        # The same file, with only the simulator's port changed (8787 may be taken on a shared machine), in the
        # same place relative to the lists (examples/ beside demo-published/): its paths are read against it.
        (tmp_path / "examples").mkdir()
        routes = tmp_path / "examples" / "routes.toml"
        shipped = EXAMPLE.read_text(encoding="utf-8")
        routes.write_text(shipped.replace(SIMULATOR_DEFAULT, f"127.0.0.1:{sim_port}"))
        exe = Path(sys.executable).with_name("canary")
        proc = subprocess.Popen(
            [str(exe), "router", "--routes", str(routes), "--port", str(router_port)],
            cwd=tmp_path,
            env={**os.environ, "SIMULATOR_API_KEY": sim.api_key},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            base = f"http://127.0.0.1:{router_port}"
            deadline = time.monotonic() + 30
            while True:
                try:
                    httpx.get(f"{base}/healthz", timeout=1).raise_for_status()
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise
                    time.sleep(0.1)
            body = {"model": "chat", "stream": True, "messages": [{"role": "user", "content": "Hello"}]}
            text = ""
            with httpx.stream("POST", f"{base}/v1/chat/completions", json=body, timeout=30) as reply:
                assert reply.status_code == 200, reply.read()
                tier = reply.headers["x-canary-tier"]
                for line in reply.iter_lines():
                    if line.startswith("data: ") and line != "data: [DONE]":
                        for choice in json.loads(line[6:]).get("choices", []):
                            text += (choice.get("delta") or {}).get("content") or ""
            assert text.strip(), "the stream carried no text"
            # after the demo tier 1 is skipped; without a list it answers (12 s x 0.05 is within its budget)
            assert tier == ("2" if after_demo else "1")
        finally:
            proc.terminate()
            proc.wait(timeout=10)
