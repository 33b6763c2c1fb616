"""The Prefect API a command's flow runs talk to: the configured one, or one private server that dies with us.

With PREFECT_API_URL set (environment or active Prefect profile) that API is used after one GET of its /health
before the first flow (no answer: one line, exit 2; tasks/prefect_api/configured.py). Without it, Prefect would
start a temporary server in every process, one that outlived a `kill -9` of its parent (~200 MB each).
`prefect_api()` starts one private server instead (tasks/prefect_api/private_server.py: how it is spawned, waited
for, and dies with its owner).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from tasks.prefect_api.configured import check_configured_api, configured_api_url
from tasks.prefect_api.private_server import PrivatePrefectServer, drain_prefect_workers

#: The API URLs of the private servers this process runs (`prefect_api`).
_PRIVATE_URLS: set[str] = set()


def is_private_api(url: str | None = None) -> bool:
    """True when `url` (default: the current Prefect API) is a private server of this process: nothing else talks
    to it, so its concurrency slots guard nothing (the cycle's file lock does: tasks/orchestration/cycle_lock.py) and
    its runs die with it (no heartbeats needed)."""
    if url is None:
        from prefect.settings import get_current_settings

        url = get_current_settings().api.url
    return bool(url) and str(url).rstrip("/") in _PRIVATE_URLS


class PrefectApi:
    """What `prefect_api()` yields: the API's URL, and `wait_ready()` to call just before the first flow."""

    def __init__(self, url: str, server: PrivatePrefectServer | None) -> None:
        self.url = url
        self.server = server
        self._checked = False

    def wait_ready(self, *, progress: Callable[[float], None] | None = None) -> None:
        """The private server answers /api/health, or the configured API /health (else one CanaryError).
        `progress`: called now and then while a private server starts (PrivatePrefectServer.wait_ready)."""
        if self.server is not None:
            self.server.wait_ready(progress=progress)
        elif not self._checked:
            check_configured_api(self.url)
            self._checked = True


@contextlib.contextmanager
def prefect_api(*, private: bool = False) -> Iterator[PrefectApi]:
    """The configured Prefect API (checked by `wait_ready()`, after the command's own cheaper checks), or a
    private server started now and stopped on exit.

    `private=True` always starts a private one (a simulated history must not reach a real deployment).
    PREFECT_API_URL is set for this process meanwhile (and in Prefect's settings if Prefect is imported)."""
    url = None if private else configured_api_url()
    if url is not None:
        yield PrefectApi(url, None)
        return
    server = PrivatePrefectServer()
    saved = {name: os.environ.get(name) for name in ("PREFECT_API_URL", "PREFECT_UI_URL")}
    drain_prefect_workers()  # services bound to an earlier API of this process must not serve this one
    try:
        server.start()
        _PRIVATE_URLS.add(server.api_url.rstrip("/"))
        # No UI is served: no "View at http://127.0.0.1:<port>/runs/..." line pointing at it.
        env = {"PREFECT_API_URL": server.api_url, "PREFECT_UI_URL": saved["PREFECT_UI_URL"] or ""}
        os.environ.update(env)  # before Prefect is imported: its root settings read them
        with _prefect_settings(env):
            yield PrefectApi(server.api_url, server)
    finally:
        _PRIVATE_URLS.discard(server.api_url.rstrip("/"))
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


@contextlib.contextmanager
def settings_for_flow_runs(*, api_url: str | None = None, heartbeats: bool = True) -> Iterator[None]:
    """Prefect's settings for the flow runs started in the block (and in the threads Prefect starts for them):
    `api_url` instead of the current API, and no flow-run heartbeats unless `heartbeats`.

    At the end of every flow run the engine joins its heartbeat thread, which sleeps in 1 s steps: 0-1 s a run
    (a `canary run` ends two, its cycle's and its round's). Heartbeats only tell a server that a run still
    lives; the canary finds its own dead rounds (the journal, tasks/spool/journal.py)."""
    from prefect.context import SettingsContext
    from prefect.settings import get_current_settings

    current, ctx = get_current_settings(), SettingsContext.get()
    assert ctx is not None
    update: dict[str, Any] = {}
    if api_url is not None:
        update["api"] = current.api.model_copy(update={"url": api_url})
    if not heartbeats:
        update["flows"] = current.flows.model_copy(update={"heartbeat_frequency": None})
    with SettingsContext(profile=ctx.profile, settings=current.model_copy(update=update)):
        yield
