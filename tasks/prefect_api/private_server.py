"""One private Prefect API server in a child process, that dies with its owner (tasks/prefect_api/server.py uses it).

    canary run                       (owner; holds the write end of a pipe)
    └── python -m tasks.prefect_api.server_child (new session; PR_SET_PDEATHSIG=SIGKILL; uvicorn + Prefect's API app)
        └── watchdog                  (forked before any import; reads the pipe, SIGKILLs the group on EOF)

* the app is the one Prefect's temporary server runs (`create_app` in ephemeral mode: its few services,
  Prefect's default database, so flow runs and slots persist as before), served on a socket the owner bound
  to a free port first (no port race; early connections wait in the backlog). `prefect server start` also
  spawns no process, but imports Prefect's CLI and runs every service (scheduler, foreman, event
  persister...) whose SQLite writes slow the rounds' API calls (provider_canary/demo/simulator_process.py); it was
  slower to answer /health (4.7-6.5 s against 3.1-4.0 s, measured side by side);
* its database is a fresh SQLite file, a copy of one this Prefect version already migrated when there is one
  (tasks/prefect_api/db_template.py: ready in ~3 s instead of ~11); it is spawned at once and waited for only
  before the first flow, so its start-up overlaps the owner's imports and preflight;
* death with the owner: the kernel SIGKILLs it when the owner dies (PR_SET_PDEATHSIG, set by the child
  itself, then a check that its parent is still the owner: no `preexec_fn`, so Popen stays thread-safe).
  It spawns no process today; should it ever, the watchdog in its process group sees the pipe close when
  the owner dies and SIGKILLs the whole group. The signal fires when the *thread* that spawned the child
  ends: start it from the main thread;
* every process of the group carries OWNER_ENV=<owner pid> in its environment (tests find them by it);
* its output goes to a log file in the temporary directory (named in the error when it fails to start,
  removed after a clean stop), never to the user's terminal;
* stop: Prefect's log and event workers are drained first (else they post to a closed server and print
  errors), then SIGTERM, up to STOP_GRACE_S, then SIGKILL of the group.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tasks.errors import CanaryError
from tasks.prefect_api import db_template

#: Environment variable set in every process of a private server: the pid of the process that owns it.
OWNER_ENV = "CANARY_PREFECT_SERVER_OWNER"
#: Services of the private server that only keep history nobody reads: it has no UI and its database goes with
#: it. On one SQLite file their writes (every task run's state events, the event feed) held the write lock the
#: rounds' own calls need: in a 40-model cycle 4 rounds got 503 on creating a run and lost 30-40 s to retries.
#: Flow and task runs, artifacts, Variables and concurrency limits (the round and cycle slots) keep working, and
#: the repossessor stays on: it frees the slot of a round whose lease ran out.
IDLE_SERVER_SERVICES = (
    "EVENT_PERSISTER",
    "TASK_RUN_RECORDER",
    "TRIGGERS",
    "SCHEDULER",
    "LATE_RUNS",
    "FOREMAN",
    "PAUSE_EXPIRATIONS",
    "CANCELLATION_CLEANUP",
    "CLEANUP_RECONCILER",
)
#: Seconds a private-server request waits for SQLite's write lock before it answers 503 (Prefect's default: 10).
DATABASE_TIMEOUT_S = 60
#: Seconds between two "still starting" calls of `wait_ready(progress=...)`.
PROGRESS_EVERY_S = 10.0
#: Seconds uvicorn gets to stop after SIGTERM before the group is SIGKILLed.
STOP_GRACE_S = 5.0
#: The server's log: <tmp>/canary-prefect-server-<owner pid>-<port>.log
LOG_PREFIX = "canary-prefect-server-"
#: The server's SQLite database: <tmp>/canary-prefect-db-<owner pid>-<random>/ (removed with the server).
DB_DIR_PREFIX = "canary-prefect-db-"


class PrivatePrefectServer:
    """One private Prefect API server in a child process (see the module docstring)."""

    def __init__(self) -> None:
        self.log_path = Path(tempfile.gettempdir()) / f"{LOG_PREFIX}{os.getpid()}.log"  # + port once bound
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._db_dir: str | None = None
        self._pipe_w: int | None = None
        self._ready = False
        self._database: Path | None = None  # its SQLite file, when it is ours (`_private_database`)
        self._template: Path | None = None  # set when this server started fresh: save it there once it answers
        self.from_template = False  # its database is a copy of the template (tasks/prefect_api/db_template.py)
        self.started_at: float | None = None  # time.monotonic() when start() spawned it

    @property
    def is_ready(self) -> bool:
        """It answered /api/health (a `wait_ready` returned)."""
        return self._ready

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def start(self) -> None:
        """Spawn the server on a free port of 127.0.0.1 and return at once (`wait_ready` waits)."""
        _remove_stale_logs(self.log_path.parent)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        self.port = listener.getsockname()[1]
        self.log_path = self.log_path.with_name(f"{LOG_PREFIX}{os.getpid()}-{self.port}.log")
        pipe_r, self._pipe_w = os.pipe()
        from tasks.runtime.arenas import capped_env
        from tasks.runtime.secrets import ENV_SECRETS, ENV_URLS

        env = capped_env({  # its allocator's arenas capped (tasks/runtime/arenas.py)
            **{k: v for k, v in os.environ.items() if k not in (*ENV_SECRETS, *ENV_URLS)},  # it needs none
            **self._private_database(),
            "PREFECT_UI_ENABLED": "0",
            "PREFECT__SERVER_EPHEMERAL": "1",
            "PREFECT__SERVER_FINAL": "1",
            OWNER_ENV: str(os.getpid()),
        })
        env.pop("PREFECT_API_URL", None)
        args = [f"--fd={listener.fileno()}", f"--port={self.port}", f"--pipe={pipe_r}", f"--owner={os.getpid()}"]
        self.started_at = time.monotonic()
        try:
            with self.log_path.open("wb") as log:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "tasks.prefect_api.server_child", *args],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    pass_fds=(listener.fileno(), pipe_r),
                    start_new_session=True,
                )
        finally:
            listener.close()
            os.close(pipe_r)

    def _private_database(self) -> dict[str, str]:
        """A fresh SQLite file for this server alone (unless the operator configured a database): nothing a
        killed run left (a held round slot, a zombie flow run) can reach the next run, and there is nothing to
        keep: flow-run history that matters belongs on a real `prefect server start`."""
        if any(os.environ.get(k) for k in ("PREFECT_API_DATABASE_CONNECTION_URL",
                                           "PREFECT_SERVER_DATABASE_CONNECTION_URL")):
            return {}
        self._db_dir = tempfile.mkdtemp(prefix=f"{DB_DIR_PREFIX}{os.getpid()}-")
        database = self._database = Path(self._db_dir) / "prefect.db"
        lean = {f"PREFECT_SERVER_SERVICES_{n}_ENABLED": "false" for n in IDLE_SERVER_SERVICES}
        lean["PREFECT_SERVER_DATABASE_TIMEOUT"] = str(DATABASE_TIMEOUT_S)
        template = db_template.template_path()
        self.from_template = db_template.copy_template(database, template)
        if self.from_template:  # migrated already: a start of ~3 s instead of ~12 (tasks/prefect_api/db_template.py)
            lean.update(db_template.START_FROM_TEMPLATE)
        else:
            self._template = template
        return {
            **{k: v for k, v in lean.items() if k not in os.environ},  # the operator's own settings win
            "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{database}",
        }

    def wait_ready(self, timeout_s: float | None = None, *, progress: Callable[[float], None] | None = None) -> None:
        """Block until /api/health answers; a server that exits or stays silent is one CanaryError.

        `progress(seconds since start)` is called every PROGRESS_EVERY_S while it waits (a command says it waits)."""
        import httpx

        if self._ready:
            return
        assert self._proc is not None, "start() first"
        if timeout_s is None:
            timeout_s = float(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS") or 90)
        deadline = time.monotonic() + timeout_s
        said = time.monotonic()
        with httpx.Client(timeout=httpx.Timeout(2.0)) as client:
            while time.monotonic() < deadline:
                if progress is not None and time.monotonic() - said >= PROGRESS_EVERY_S:
                    said = time.monotonic()
                    progress(said - (self.started_at or said))
                if (code := self._proc.poll()) is not None:
                    raise CanaryError(
                        f"prefect: the private Prefect server exited during start-up (code {code}); "
                        f"its log: {self.log_path}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(f"{self.api_url}/health").status_code == 200:
                        self._ready = True
                        if self._template is not None and self._database is not None:
                            db_template.save_template(self._database, self._template)
                        return
                time.sleep(0.05)
        raise CanaryError(
            f"prefect: the private Prefect server did not answer within {timeout_s:g} s "
            f"(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS); its log: {self.log_path}"
        )

    def stop(self) -> None:
        """SIGTERM, up to STOP_GRACE_S, then SIGKILL of the whole group; the log goes if the server started."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if self._ready:
            drain_prefect_workers()
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            _wait_exited(proc.pid, STOP_GRACE_S)
        if self._pipe_w is not None:  # the watchdog sees EOF and kills what is left of the group
            os.close(self._pipe_w)
            self._pipe_w = None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # the leader is unreaped (a zombie at worst): its pgid is ours
        proc.wait(timeout=10)
        if self._ready:
            self.log_path.unlink(missing_ok=True)
        if self._db_dir is not None:
            shutil.rmtree(self._db_dir, ignore_errors=True)
            self._db_dir = self._database = None


def _remove_stale_logs(directory: Path) -> None:
    """The logs and database directories a SIGKILLed owner left (named by its pid, which no longer runs)."""
    leftovers = [(p, p.name.removeprefix(LOG_PREFIX)) for p in directory.glob(f"{LOG_PREFIX}*.log")]
    leftovers += [(p, p.name.removeprefix(DB_DIR_PREFIX)) for p in directory.glob(f"{DB_DIR_PREFIX}*") if p.is_dir()]
    for path, rest in leftovers:
        pid = rest.split("-")[0].removesuffix(".log")
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        except OSError:  # alive but not ours, or not ours to remove
            continue


def _wait_exited(pid: int, timeout_s: float) -> None:
    """Wait for `pid` to exit without reaping it (WNOWAIT), so its pid and group id cannot be reused yet."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and hasattr(os, "waitid"):  # not on macOS: straight to SIGKILL
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return
        except ChildProcessError:
            return
        time.sleep(0.05)


def drain_prefect_workers() -> None:
    """Let Prefect's background log and event workers deliver what they hold before the server goes."""
    if "prefect" not in sys.modules:
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        with contextlib.suppress(Exception):
            worker.drain_all(timeout=STOP_GRACE_S)
    # The slot services keep a client bound to this server: stop them, so that a later API in this process
    # (another private server, a test harness) gets fresh ones instead of waiting on a server that is gone.
    with contextlib.suppress(Exception):
        from prefect.concurrency import services

        for name in ("ConcurrencySlotAcquisitionWithLeaseService", "ConcurrencySlotAcquisitionService"):
            service = getattr(services, name, None)
            if service is not None:
                service.drain_all(timeout=STOP_GRACE_S)
