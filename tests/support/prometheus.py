"""A real Prometheus for tests: the `prometheus` binary (Debian's package; `.ci/run` installs it) on a loopback
port with a temporary config and storage directory, never the system service; and `promtool`.

Where the binaries are missing, tests skip with the reason, except on CI (`CI=true`), where they fail.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.ports import free_port as free_port  # the tests import it from here too
from tests.support.tools import tool_missing

REPO = Path(__file__).resolve().parents[2]
RULES_DIR = REPO / "ops" / "prometheus"


def require_binary(name: str) -> str:
    """The path of `name`; skip (fail on CI) when it is not installed."""
    path = shutil.which(name)
    if path:
        return path
    tool_missing(f"{name} is not installed (apt-get install prometheus; .ci/run installs it)")


class Prometheus:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def query(self, promql: str) -> list[dict[str, Any]]:
        body = httpx.get(f"{self.base_url}/api/v1/query", params={"query": promql}, timeout=10).json()
        assert body["status"] == "success", body
        return list(body["data"]["result"])

    def targets(self) -> list[dict[str, Any]]:
        return list(httpx.get(f"{self.base_url}/api/v1/targets", timeout=10).json()["data"]["activeTargets"])

    def wait_for(self, promql: str, timeout_s: float = 60) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout_s
        while True:
            result = self.query(promql)
            if result or time.monotonic() > deadline:
                return result
            time.sleep(0.5)


@contextmanager
def prometheus(tmp: Path, targets: list[str], *, job: str = "canary", rules: bool | list[str] = True,
               more_jobs: dict[str, list[str]] | None = None, every: str = "1s") -> Iterator[Prometheus]:
    """Prometheus scraping `targets` (host:port) as `job` `every` second (and each of `more_jobs`), with the repo's
    rules loaded (`rules`: canary-rules.yml, or these files of ops/prometheus/). Prometheus asks for gzip
    (`Accept-Encoding: gzip`) as it always does."""
    binary = require_binary("prometheus")
    port = free_port()
    tmp.mkdir(parents=True, exist_ok=True)
    files = (["canary-rules.yml"] if rules is True else rules) or []
    rule_files = f"rule_files: {[str(RULES_DIR / f) for f in files]!r}\n" if files else ""
    config = tmp / "prometheus.yml"
    jobs = {job: targets, **(more_jobs or {})}
    config.write_text(
        f"global: {{scrape_interval: {every}, evaluation_interval: {every}}}\n" + rule_files + "scrape_configs:\n" +
        "".join(f"  - job_name: {name}\n    static_configs: [{{targets: {at!r}}}]\n" for name, at in jobs.items()),
        encoding="utf-8")
    log = (tmp / "prometheus.log").open("wb")
    proc = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}", "--web.enable-lifecycle"],
        stdout=log, stderr=subprocess.STDOUT, cwd=tmp, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/-/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (tmp / "prometheus.log").read_text(errors="replace")[-3000:]
                pytest.fail(f"prometheus did not start:\n{tail}")
            time.sleep(0.3)
        yield Prometheus(base)
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()
