"""A round that fails in its own process says why (docs/design.md "round", "Failing loudly"): `canary run` as a user
runs it (the installed console script, against the tests' Prefect API) on a listing that answers HTTP 500, so the
round fails at discovery while its process is alive. The run's pre-flight sees the same 500 and lets the round run:
an outage of the listing is a failed round (exit 1), not a config error (exit 2: issue 44).

The round is `failed` at step `probe` with its error, by the process that ran it: in DuckDB, in `canary status`,
in the round's artifact and in the exit code (1, one line). It is never `crashed` (that is for a process that is
gone): not at the end of the run, and not after the next round, which completes once the listing answers again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tasks.core.plan import model_slug
from tasks.spool.journal import spool_dirs
from tests.support.run_config import write_run_config

pytestmark = pytest.mark.e2e

MODEL = "acme/failing-listing"
CANARY = str(Path(sys.executable).with_name("canary"))
FLEET = parse_fleet({"models": [{"id": MODEL, "endpoints": [
    {"tag": "alpha", "provider_name": "Alpha"},
    {"tag": "beta", "provider_name": "Beta"},
]}]})
#: What OpenRouter's API answers on an internal error (docs/openrouter-api.md, errors).
ERROR_500 = b'{"error":{"message":"Internal Server Error","code":500}}'


class BrokenListing:
    """The endpoints listing on loopback, answering every GET (the run's pre-flight too) with HTTP 500."""

    def __init__(self, sim: SimulatorHandle) -> None:
        self.sim, self.gets = sim, 0
        listing = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                listing.gets += 1
                status, body = 500, ERROR_500
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/api/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(FLEET) as handle:
        yield handle


def canary(*args: str, sim: SimulatorHandle, cwd: Path) -> subprocess.CompletedProcess[str]:
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "OPENROUTER_API_KEY": sim.api_key, "PREFECT_API_URL": str(PREFECT_API_URL.value()),
           "TMPDIR": str(cwd)}
    return subprocess.run([CANARY, *args], capture_output=True, text=True, timeout=240, env=env, cwd=cwd)


def round_artifact(key: str) -> str:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        arts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))
    return str(max(arts, key=lambda a: a.created).data) if arts else ""


def test_a_round_that_fails_at_discovery_is_failed_with_its_error_never_crashed(
    prefect_harness: None, sim: SimulatorHandle, tmp_path: Path
) -> None:
    db = tmp_path / "canary.duckdb"
    for d in ("broken", "healthy"):
        (tmp_path / d).mkdir()
    listing = BrokenListing(sim)
    try:
        broken_cfg = write_run_config(listing, tmp_path / "broken", db, MODEL, ttft_s=5)
        done = canary("run", "--config", str(broken_cfg), sim=sim, cwd=tmp_path)
    finally:
        listing.close()
    error = f"DiscoveryUnreachable: discovery: {listing.base_url} answered HTTP 500 for {MODEL}"

    assert done.returncode == 1, (done.stdout, done.stderr[-3000:])
    assert [ln for ln in done.stderr.splitlines() if ln.startswith("canary: ")] == [
        f"canary: {MODEL}: round failed: {error}"]
    assert (f"{MODEL}: discovery: {listing.base_url} answered HTTP 500 for {MODEL} at pre-flight: an outage, not a "
            "config error: its round runs and records it") in done.stdout.splitlines()
    assert listing.gets > 1  # the pre-flight's GET, then the round's own
    with store.open_store(db, read_only=True) as con:
        [(round_id, status, step, stored_error)] = con.execute(
            "SELECT round_id, status, step, error FROM rounds").fetchall()
    assert (status, step, stored_error) == ("failed", "probe", error)
    assert [p for d in spool_dirs(db) if d.is_dir() for p in d.iterdir()] == []  # nothing left for a next round

    shown = canary("status", "--config", str(broken_cfg), sim=sim, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f"round {round_id}: failed at step probe, 0 attempts: {error}" in shown.stdout.splitlines()

    artifact = round_artifact(f"round-{model_slug(MODEL)}")
    assert "failed" in artifact and "`probe`" in artifact and "answered HTTP 500" in artifact, artifact

    # the listing answers again: the next round completes and the failed one stays failed (not crashed)
    healthy_cfg = write_run_config(sim, tmp_path / "healthy", db, MODEL, ttft_s=5)
    nxt = canary("run", "--config", str(healthy_cfg), sim=sim, cwd=tmp_path)
    assert nxt.returncode == 0, nxt.stderr[-3000:]
    with store.open_store(db, read_only=True) as con:
        statuses = con.execute("SELECT status, error FROM rounds ORDER BY round_ts").fetchall()
    assert statuses == [("failed", error), ("complete", None)]
