"""README "Running it for real" works as pasted (issue 44: a bare `prefect server start` and no wait for it made
`canary serve` exit 2). The test takes the block out of README.md and runs it with bash, line by line as written,
in a directory laid out like the clone (its canary.toml and `.venv`; the package's exclusions), changing only what an
operator fills in or what a parallel test must not share:

* the key, the Slack token and channel are the simulator's and the local Slack-compatible server's; the
  environment points OPENROUTER_BASE_URL and SLACK_API_URL at them (the operator's would be OpenRouter and Slack);
* the ports 4200 and 9464 are free ports; HOME (so PREFECT_HOME) is the test's directory;
* `./scripts/setup` is left out: the `.venv` is this test run's, set up by the same script (the fresh-clone walk in
  the issue's closing note ran it).

Every line must succeed (`set -e`); then the Prefect server answers, `canary run`'s round is complete, `canary
status` reads it, and `canary serve` (in the background, as the block leaves it) registers its deployments without
running a second cycle seconds after the first. Everything the block started is stopped by its process group.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tests.support.router_proc import free_port
from tests.support.slack_server import CHANNEL_ID, SlackServer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

REPO = Path(__file__).resolve().parents[2]
MODEL = "meta-llama/llama-3.3-70b-instruct"  # canary.toml's model
TOKEN = "xoxb-readme-test"
FLEET = parse_fleet({"models": [{"id": MODEL, "endpoints": [
    {"tag": "fireworks", "provider_name": "Fireworks"},
    {"tag": "together", "provider_name": "Together"},
    {"tag": "deepinfra/fp8", "provider_name": "DeepInfra"},
]}]})


def readme_block() -> list[str]:
    """The first bash block of README's "Running it for real"."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Running it for real\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "README's Running it for real has no bash block"
    return block.group(1).splitlines()


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(FLEET) as handle:
        yield handle


def as_run_here(lines: list[str], sim: SimulatorHandle, api_port: int, metrics_port: int) -> str:
    """The block with the operator's values filled in and the test's ports; nothing else is changed."""
    assert lines[0].startswith("./scripts/setup "), lines[0]
    script = "\n".join(lines[1:])
    for placeholder, value in (("sk-or-v1-...", sim.api_key), ("xoxb-...", TOKEN), ("C0123ABCDEF", CHANNEL_ID),
                               (":4200", f":{api_port}"), ("--port 4200", f"--port {api_port}"),
                               ("9464", str(metrics_port))):
        assert placeholder in script, placeholder
        script = script.replace(placeholder, value)
    return "set -euo pipefail\n" + script + "\n"


def test_the_readme_production_block_runs_as_pasted(sim: SimulatorHandle, tmp_path: Path) -> None:
    started = time.monotonic()
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "canary.toml").write_bytes((REPO / "canary.toml").read_bytes())  # exclusions: the package's own
    (clone / ".venv").symlink_to(Path(sys.executable).parent.parent)
    api_port, metrics_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "CANARY_", "SLACK_", "OPENROUTER_"))}
    (tmp_path / "home").mkdir()
    with SlackServer(token=TOKEN) as slack:
        env.update(HOME=str(tmp_path / "home"), OPENROUTER_BASE_URL=sim.base_url, SLACK_API_URL=slack.api_url)
        script = as_run_here(readme_block(), sim, api_port, metrics_port)
        block = subprocess.Popen(["bash", "-c", script], cwd=clone, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            out, _ = block.communicate(timeout=240)
            api = f"http://127.0.0.1:{api_port}/api"
            deadline = time.monotonic() + 120
            names: set[str] = set()
            while time.monotonic() < deadline and not {"canary-cycle", "canary-deadman"} <= names:
                time.sleep(1)
                try:
                    names = {d["name"] for d in httpx.post(f"{api}/deployments/filter", json={}, timeout=10).json()}
                except httpx.HTTPError:
                    pass
            ran = {"flows": {"name": {"any_": ["canary-cycle"]}},  # not the schedule's future runs
                   "flow_runs": {"state": {"type": {"not_any_": ["SCHEDULED"]}}}}
            cycles = httpx.post(f"{api}/flow_runs/filter", json=ran, timeout=10).json() if names else []
            metrics = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).text if names else ""
        finally:
            os.killpg(block.pid, signal.SIGINT)  # the server and serve it left in the background
            time.sleep(5)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(block.pid, signal.SIGKILL)
        serve_log = (clone / "canary-serve.log").read_text(errors="replace")
    assert block.returncode == 0, out[-4000:]
    assert {"canary-cycle", "canary-deadman"} <= names, serve_log[-3000:]
    assert re.search(rf"^{re.escape(MODEL)}@\S+: complete, 3 endpoints, ", out, re.M), out[-3000:]
    assert "mode: observe: " in out and f"  {MODEL}: nothing" in out  # canary status, after the run
    assert "serve: every model has a complete full round under" in serve_log  # no second cycle seconds later
    assert len(cycles) == 1, (cycles, serve_log[-3000:])  # canary run's; serve's first comes with the schedule
    assert 'canary_rounds_total{model="' + MODEL + '",status="complete"} 1.0' in metrics
    with store.open_store(clone / "canary.duckdb", read_only=True) as con:
        assert con.execute("SELECT count(*), min(status) FROM rounds").fetchone() == (1, "complete")
    print(f"README production block: {time.monotonic() - started:.1f} s")
