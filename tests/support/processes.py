"""Subprocesses a test starts (servers, exporters): each in its own session, logged to a file, stopped by its
process group (SIGINT, then SIGKILL), never by name."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path


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
