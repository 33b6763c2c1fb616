"""Subprocesses a test starts (servers, exporters): each in its own session, logged to a file, stopped by its
process group (SIGINT, then SIGKILL), never by name; `poll_while_running` waits for something they do and
fails with their logs' tails when one of them exits first or the wait runs out."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import httpx
import pytest

T = TypeVar("T")


def served_env(home: Path) -> dict[str, str]:
    """This process's environment without Prefect, Slack, OpenRouter or canary settings, for a served process of
    the test's own (Prefect's home under `home`, no telemetry, INFO logs)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "SLACK_", "OPENROUTER_", "CANARY_"))}
    env.update(DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_HOME=str(home),
               PREFECT_LOGGING_LEVEL="INFO")
    return env


def start_logged(argv: list[str], env: dict[str, str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def poll_while_running(what: str, fn: Callable[[], T | None], timeout_s: float,
                       procs: list[subprocess.Popen[bytes]], logs: list[Path]) -> T:
    """`fn()` every 0.5 s until it gives something true (an HTTP error counts as nothing yet); the test fails,
    showing the logs' tails, when a process of `procs` exits first or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for p in procs:
            if p.poll() is not None:
                pytest.fail(f"{p.args!r} exited ({p.returncode}) while waiting for {what}:\n" + log_tails(logs))
        try:
            value = fn()
        except httpx.HTTPError:
            value = None
        if value:
            return value
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}:\n" + log_tails(logs))


def log_tails(logs: list[Path], chars: int = 3000) -> str:
    return "\n".join(f"--- {p.name}\n" + p.read_text(errors="replace")[-chars:] for p in logs if p.exists())
