"""cli/*prefect*.py without Prefect: the group watchdog, the death signal, the configured API's URL.

The watchdog test builds the process tree of a private server with `sleep` in place of uvicorn and a grandchild
the server would have spawned, SIGKILLs the owner and expects every process of the group gone within seconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tasks.prefect_api.configured import api_url_from_environment

pytestmark = pytest.mark.integration

#: The owner: starts a "server" the way PrivatePrefectServer does (new session, the pipe's read end passed),
#: prints the pids of the server, its watchdog and its grandchild, then waits to be killed.
OWNER = textwrap.dedent(
    """
    import os, subprocess, sys
    r, w = os.pipe()
    server = subprocess.Popen(
        [sys.executable, "-c", sys.argv[1], str(r), str(os.getpid()), sys.argv[2]],
        pass_fds=(r,), start_new_session=True, stdout=subprocess.PIPE, text=True,
    )
    os.close(r)
    print(server.stdout.readline().strip(), flush=True)
    sys.stdin.read()
    """
)
SERVER = textwrap.dedent(
    """
    import os, subprocess, sys, time
    from tasks.prefect_api.server_child import die_with_owner, kill_group_when_owner_goes
    pipe_r, owner, with_death_signal = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
    if with_death_signal:
        die_with_owner(owner)
    watchdog = os.fork()
    if watchdog == 0:
        kill_group_when_owner_goes(pipe_r)
    os.close(pipe_r)
    grandchild = subprocess.Popen(["sleep", "300"])
    print(os.getpid(), watchdog, grandchild.pid, flush=True)
    time.sleep(300)
    """
)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("death_signal", [False, True], ids=["watchdog-alone", "with-pdeathsig"])
def test_a_killed_owner_takes_the_whole_server_group_with_it(death_signal: bool) -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, SERVER, "1" if death_signal else "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    pids: list[int] = []
    try:
        assert owner.stdout is not None
        pids = [int(p) for p in owner.stdout.readline().split()]
        assert len(pids) == 3 and all(alive(p) for p in pids), pids
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=10)
        deadline = time.monotonic() + 5
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [p for p in pids if alive(p)] == [], "server, watchdog or grandchild outlived its owner"
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        if owner.poll() is None:
            owner.kill()
            owner.wait(timeout=10)


def test_the_configured_api_comes_from_the_environment_then_the_active_profile(tmp_path: Path) -> None:
    env = {"PREFECT_HOME": str(tmp_path)}
    assert api_url_from_environment(env) is None  # no profiles file
    (tmp_path / "profiles.toml").write_text(
        'active = "local"\n[profiles.local]\nPREFECT_API_URL = "http://127.0.0.1:4200/api"\n'
        '[profiles.other]\nPREFECT_API_URL = "http://10.0.0.1:4200/api"\n[profiles.ephemeral]\n'
    )
    assert api_url_from_environment(env) == "http://127.0.0.1:4200/api"
    assert api_url_from_environment(env | {"PREFECT_PROFILE": "ephemeral"}) is None
    assert api_url_from_environment(env | {"PREFECT_API_URL": "http://example.invalid/api"}) == (
        "http://example.invalid/api"
    )


def test_the_private_server_keeps_no_history_nobody_reads_unless_the_operator_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import shutil

    from tasks.prefect_api.private_server import DATABASE_TIMEOUT_S, IDLE_SERVER_SERVICES, PrivatePrefectServer

    for key in ("PREFECT_API_DATABASE_CONNECTION_URL", "PREFECT_SERVER_DATABASE_CONNECTION_URL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED", "true")  # the operator's own choice
    server = PrivatePrefectServer()
    env = server._private_database()
    try:
        assert env["PREFECT_SERVER_DATABASE_CONNECTION_URL"].startswith("sqlite+aiosqlite:///")
        assert env["PREFECT_SERVER_DATABASE_TIMEOUT"] == str(DATABASE_TIMEOUT_S)
        assert env["PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_ENABLED"] == "false"
        assert env["PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED"] == "false"
        assert "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED" not in env  # left to the operator's setting
        assert "REPOSSESSOR" not in IDLE_SERVER_SERVICES  # it frees the slot of a round whose lease ran out
    finally:
        if server._db_dir:
            shutil.rmtree(server._db_dir, ignore_errors=True)
    monkeypatch.setenv("PREFECT_SERVER_DATABASE_CONNECTION_URL", "postgresql+asyncpg://x/y")
    assert PrivatePrefectServer()._private_database() == {}  # an operator's database: nothing changed
