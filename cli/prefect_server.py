"""The Prefect API a command's flow runs talk to: the configured one, or one private server that dies with us.

With PREFECT_API_URL set (in the environment or the active Prefect profile) that API is used, after one
GET of its /health: a server that does not answer is one line (ConfigError, exit 2), not a flow that fails
later. Without it, Prefect would start its own temporary server in every process; that server is not tied to
its parent (a `kill -9` of `canary run` left it running, ~200 MB each) and its shutdown printed
`CancelledError` tracebacks on the user's terminal. So `prefect_api()` starts one private server itself:

    canary run                       (parent; holds the write end of a pipe)
    └── python -m cli.prefect_server  (new session; PR_SET_PDEATHSIG=SIGKILL; uvicorn + Prefect's API app)
        └── watchdog                  (forked before any import; reads the pipe, SIGKILLs the group on EOF)

* the server is the same app Prefect's temporary server runs (`create_app`, ephemeral mode: only the
  services a temporary server runs; Prefect's default database, so flow runs and slots persist as before)
  on a socket the parent bound to a free port first (no port race; connections made before the app is up
  wait in the backlog). `prefect server start` spawns no extra process either, but it also imports the CLI
  and runs every server service (scheduler, late runs, foreman, event persister...), whose SQLite writes
  slow the rounds' own API calls down (see flows/history_sim.py); it was not faster to answer /health.
* the server is started at once and waited for only when the flows are about to run, so its start-up
  (importing Prefect's server, ~3-5 s of CPU) overlaps the parent's own imports and preflight;
* death with the parent: the kernel SIGKILLs the server when the parent dies (PR_SET_PDEATHSIG, set by the
  child itself before it imports anything, then a check that the parent is still the one that started it,
  which closes the race a `preexec_fn` would close; no `preexec_fn` keeps Popen thread-safe). The server
  spawns no process of its own today; should it ever (or a library do so), the watchdog, which shares the
  server's process group and sees the pipe close when the parent dies, SIGKILLs the whole group;
* every process of the group carries OWNER_ENV=<parent pid> in its environment (tests find them by it);
* its output goes to a log file in the temporary directory (kept and named when the server fails to start,
  removed after a clean stop), never to the user's terminal;
* stop: Prefect's log and event workers are drained first (they would otherwise post to a closed server
  and print errors), then SIGTERM, up to STOP_GRACE_S for uvicorn to finish, then SIGKILL of the group.

PR_SET_PDEATHSIG fires when the *thread* that started the child ends: start it from the main thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

from tasks.errors import CanaryError, ConfigError

#: Environment variable set in every process of a private server: the pid of the process that owns it.
OWNER_ENV = "CANARY_PREFECT_SERVER_OWNER"
#: Seconds uvicorn gets to stop after SIGTERM before the group is SIGKILLed.
STOP_GRACE_S = 5.0
#: Seconds a configured API gets to answer /health.
HEALTH_TIMEOUT_S = 5.0
_PR_SET_PDEATHSIG = 1


def configured_api_url() -> str | None:
    """PREFECT_API_URL from the environment, else from the active profile (`prefect config set ...`).

    Read without importing Prefect (2-4 s), so that a private server can start at once when there is none."""
    if url := os.environ.get("PREFECT_API_URL", "").strip():
        return url
    home = Path(os.environ.get("PREFECT_HOME", "~/.prefect")).expanduser()
    path = Path(os.environ.get("PREFECT_PROFILES_PATH", home / "profiles.toml")).expanduser()
    try:
        profiles = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    active = os.environ.get("PREFECT_PROFILE") or profiles.get("active", "ephemeral")
    value = str(profiles.get("profiles", {}).get(active, {}).get("PREFECT_API_URL") or "").strip()
    return value or None


def check_configured_api(url: str) -> None:
    """One GET of `<url>/health`; a server that does not answer is a ConfigError naming it (no userinfo)."""
    import httpx

    from tasks.secrets import strip_userinfo

    headers = {}
    if key := os.environ.get("PREFECT_API_KEY"):
        headers["Authorization"] = f"Bearer {key}"
    auth = None
    if auth_string := os.environ.get("PREFECT_API_AUTH_STRING"):
        user, _, password = auth_string.partition(":")
        auth = httpx.BasicAuth(user, password)
    health = f"{url.rstrip('/')}/health"
    try:
        reply = httpx.get(health, headers=headers, auth=auth, timeout=HEALTH_TIMEOUT_S)
        problem = None if reply.status_code == 200 else f"HTTP {reply.status_code}"
    except httpx.HTTPError as exc:
        problem = str(exc) or type(exc).__name__
    except ValueError as exc:  # not a URL at all
        problem = f"invalid URL: {exc}"
    if problem:
        raise ConfigError(
            f"prefect: PREFECT_API_URL={strip_userinfo(url)} does not answer /health ({problem}): start that "
            "server, or unset PREFECT_API_URL and canary starts a private one for the command"
        )


class PrivatePrefectServer:
    """One private Prefect API server in a child process (see the module docstring)."""

    def __init__(self) -> None:
        self.log_path = Path(tempfile.gettempdir()) / f"canary-prefect-server-{os.getpid()}.log"
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._pipe_w: int | None = None
        self._ready = False

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def start(self) -> None:
        """Spawn the server on a free port of 127.0.0.1 and return at once (`wait_ready` waits)."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        self.port = listener.getsockname()[1]
        pipe_r, self._pipe_w = os.pipe()
        from tasks.secrets import ENV_SECRETS, ENV_URLS

        env = {
            **{k: v for k, v in os.environ.items() if k not in (*ENV_SECRETS, *ENV_URLS)},  # it needs none
            "PREFECT_UI_ENABLED": "0",
            "PREFECT__SERVER_EPHEMERAL": "1",
            "PREFECT__SERVER_FINAL": "1",
            OWNER_ENV: str(os.getpid()),
        }
        env.pop("PREFECT_API_URL", None)
        args = [f"--fd={listener.fileno()}", f"--port={self.port}", f"--pipe={pipe_r}", f"--owner={os.getpid()}"]
        try:
            with self.log_path.open("wb") as log:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "cli.prefect_server", *args],
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

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Block until /api/health answers; a server that exits or stays silent is one CanaryError."""
        import httpx

        if self._ready:
            return
        assert self._proc is not None, "start() first"
        if timeout_s is None:
            timeout_s = float(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS") or 90)
        deadline = time.monotonic() + timeout_s
        with httpx.Client(timeout=httpx.Timeout(2.0)) as client:
            while time.monotonic() < deadline:
                if (code := self._proc.poll()) is not None:
                    raise CanaryError(
                        f"prefect: the private Prefect server exited during start-up (code {code}); "
                        f"its log: {self.log_path}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(f"{self.api_url}/health").status_code == 200:
                        self._ready = True
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
            _drain_prefect_workers()
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


def _wait_exited(pid: int, timeout_s: float) -> None:
    """Wait for `pid` to exit without reaping it (WNOWAIT), so its pid and group id cannot be reused yet."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return
        except ChildProcessError:
            return
        time.sleep(0.05)


def _drain_prefect_workers() -> None:
    """Let Prefect's background log and event workers deliver what they hold before the server goes."""
    if "prefect" not in sys.modules:
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        with contextlib.suppress(Exception):
            worker.drain_all(timeout=STOP_GRACE_S)


class PrefectApi:
    """What `prefect_api()` yields: the API's URL, and `wait_ready()` to call just before the first flow."""

    def __init__(self, url: str, server: PrivatePrefectServer | None) -> None:
        self.url = url
        self.server = server

    def wait_ready(self) -> None:
        if self.server is not None:
            self.server.wait_ready()


@contextlib.contextmanager
def prefect_api(*, private: bool = False) -> Iterator[PrefectApi]:
    """The configured Prefect API (checked), or a private server started now and stopped on exit.

    `private=True` always starts a private one (a simulated history must not reach a real deployment).
    PREFECT_API_URL is set for this process meanwhile (and in Prefect's settings if Prefect is imported)."""
    url = None if private else configured_api_url()
    if url is not None:
        check_configured_api(url)
        yield PrefectApi(url, None)
        return
    server = PrivatePrefectServer()
    saved = {name: os.environ.get(name) for name in ("PREFECT_API_URL", "PREFECT_UI_URL")}
    try:
        server.start()
        # No UI is served: no "View at http://127.0.0.1:<port>/runs/..." line pointing at it.
        env = {"PREFECT_API_URL": server.api_url, "PREFECT_UI_URL": saved["PREFECT_UI_URL"] or ""}
        os.environ.update(env)  # before Prefect is imported: its root settings read them
        with _prefect_settings(env):
            yield PrefectApi(server.api_url, server)
    finally:
        server.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _prefect_settings(env: dict[str, str]) -> Iterator[None]:
    """Apply `env` to an already imported Prefect (its settings were read at import); nothing otherwise."""
    if "prefect.settings" not in sys.modules:
        yield
        return
    import prefect.context
    from prefect.settings import PREFECT_API_URL, PREFECT_UI_URL, temporary_settings

    updates = {PREFECT_API_URL: env["PREFECT_API_URL"], PREFECT_UI_URL: env["PREFECT_UI_URL"]}
    with temporary_settings(updates=updates):
        with prefect.context._temporary_global_settings_context(prefect.context.get_settings_context()):
            yield


# --- the child ------------------------------------------------------------------------------------------


def _die_with(owner: int) -> None:
    """SIGKILL this process when its parent dies; exit now if the parent already died."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        os._exit(3)
    if os.getppid() != owner:
        os._exit(3)


def _watchdog(pipe_r: int) -> None:
    """Block until the owner's end of the pipe closes (it stopped us or died), then SIGKILL the group."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # stop() reaches the server; the group goes after
    try:
        while os.read(pipe_r, 4096):
            pass
    finally:
        os.killpg(0, signal.SIGKILL)
        os._exit(0)


def serve_child(argv: list[str]) -> None:
    """`python -m cli.prefect_server --fd=N --port=P --pipe=R --owner=PID`: serve Prefect's API on fd N."""
    opts = dict(a.removeprefix("--").split("=", 1) for a in argv)
    _die_with(int(opts["owner"]))
    pipe_r = int(opts["pipe"])
    if os.fork() == 0:
        _watchdog(pipe_r)
    os.close(pipe_r)
    import uvicorn

    sock = socket.socket(fileno=int(opts["fd"]))
    config = uvicorn.Config(
        "prefect.server.api.server:create_app", factory=True, lifespan="on", log_level="error"
    )
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    serve_child(sys.argv[1:])
