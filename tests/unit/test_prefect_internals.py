"""The Prefect internals the private server relies on are where it expects them, with the signatures it calls.

tasks/prefect_api/server_child.py replaces a method of Prefect's SQLite database configuration and serves
Prefect's app factory; tasks/prefect_api/private_server.py and db_template.py set Prefect settings by their
environment names; server.py enters a private settings context; the stop drains Prefect's background workers.
Prefect changes none of these in its public API notes, and the code falls back quietly when one moved (a private
server still starts, the 503s of benchmarks/bench_private_api.py come back). So this test is the loud part: each
case names the internal and what the canary does with it. pyproject.toml pins Prefect to the minor version these
hold for; on a Prefect upgrade, a failure here says which patch to revisit.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import re
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


def _internal(dotted: str) -> object:
    """`module:attr.attr` imported, or a failure naming it."""
    module, _, attrs = dotted.partition(":")
    try:
        obj: object = importlib.import_module(module)
        for attr in attrs.split("."):
            obj = getattr(obj, attr)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"Prefect internal {dotted} is gone ({exc}): the private server patches or calls it")
    return obj


def _params(dotted: str) -> list[tuple[str, object]]:
    sig = inspect.signature(_internal(dotted))  # type: ignore[arg-type]
    return [(p.name, p.default) for p in sig.parameters.values()]


def test_the_sqlite_transaction_the_private_server_replaces() -> None:
    """server_child.serialize_sqlite_transactions wraps `begin_transaction(self, session, with_for_update=False)`
    and calls the original with `with_for_update=True` (Prefect's `BEGIN IMMEDIATE`)."""
    name = "prefect.server.database.configurations:AioSqliteConfiguration.begin_transaction"
    assert _params(name) == [("self", inspect.Parameter.empty), ("session", inspect.Parameter.empty),
                             ("with_for_update", False)], f"{name} changed its signature"
    source = inspect.getsource(_internal(name))  # type: ignore[arg-type]
    assert re.search(r"with_for_update.*IMMEDIATE|IMMEDIATE.*with_for_update", source, re.S), (
        f"{name} no longer begins IMMEDIATE on with_for_update=True: serialize_sqlite_transactions does nothing")


def test_serialize_sqlite_transactions_patches_this_prefect(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its fallback for another Prefect layout is silent at run time; here it must take effect."""
    from prefect.server.database import configurations

    from tasks.prefect_api import server_child

    cls = configurations.AioSqliteConfiguration
    original = cls.begin_transaction
    monkeypatch.setattr(cls, "begin_transaction", original)  # restored after the test
    monkeypatch.delenv(server_child.SQLITE_BEGIN_ENV, raising=False)
    server_child.serialize_sqlite_transactions()
    assert cls.begin_transaction is not original, "serialize_sqlite_transactions left Prefect's method in place"


def test_the_app_factory_the_private_server_serves() -> None:
    """uvicorn runs `prefect.server.api.server:create_app` as a factory with no argument; the private server asks
    for ephemeral mode (its few services) and `final` through PREFECT__SERVER_EPHEMERAL / PREFECT__SERVER_FINAL."""
    name = "prefect.server.api.server:create_app"
    params = dict(_params(name))
    assert {"ephemeral", "final"} <= set(params), f"{name} lost its ephemeral/final arguments"
    assert all(d is not inspect.Parameter.empty for d in params.values()), f"{name} needs an argument now"
    source = inspect.getsource(_internal(name))  # type: ignore[arg-type]
    for env in ("PREFECT__SERVER_EPHEMERAL", "PREFECT__SERVER_FINAL"):
        assert env in source, f"{name} no longer reads {env} (tasks/prefect_api/private_server.py sets it)"


def _settings_environment() -> dict[str, str]:
    """Every Prefect setting the private server sets by name, with the value it sets."""
    from tasks.prefect_api import db_template
    from tasks.prefect_api.private_server import DATABASE_TIMEOUT_S, IDLE_SERVER_SERVICES

    env = {f"PREFECT_SERVER_SERVICES_{n}_ENABLED": "false" for n in IDLE_SERVER_SERVICES}
    env.update(db_template.START_FROM_TEMPLATE)
    env.update(PREFECT_SERVER_DATABASE_TIMEOUT=str(DATABASE_TIMEOUT_S), PREFECT_UI_ENABLED="0",
               PREFECT_SERVER_DATABASE_CONNECTION_URL="sqlite+aiosqlite:////tmp/canary-internals-test.db")
    return env


@pytest.mark.parametrize("name", sorted(_settings_environment()))
def test_every_setting_the_private_server_sets_is_read_by_prefect(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A setting Prefect renamed would be ignored without a word: the server would run the services it should not,
    or migrate a template, or wait 10 s for SQLite's lock instead of 60."""
    from prefect.settings import Settings

    for other in _settings_environment():
        monkeypatch.delenv(other, raising=False)
    before = Settings().model_dump()
    monkeypatch.setenv(name, _settings_environment()[name])
    assert Settings().model_dump() != before, f"Prefect reads no setting from {name} (the private server sets it)"


def test_the_settings_context_and_workers_the_private_server_uses() -> None:
    """server.py enters `prefect.context._temporary_global_settings_context(SettingsContext)`;
    settings_for_flow_runs copies `api.url` and `flows.heartbeat_frequency`; the stop drains the log, event and
    slot workers (`drain_all`)."""
    from prefect.settings import get_current_settings

    assert [n for n, _ in _params("prefect.context:_temporary_global_settings_context")] == ["settings_context"]
    current = get_current_settings()
    assert hasattr(current.api, "url") and hasattr(current.flows, "heartbeat_frequency"), "Prefect settings moved"
    for worker in ("prefect.events.worker:EventsWorker.drain_all", "prefect.logging.handlers:APILogWorker.drain_all",
                   "prefect.concurrency.services:ConcurrencySlotAcquisitionWithLeaseService.drain_all"):
        assert callable(_internal(worker)), worker


def test_prefect_is_pinned_to_the_minor_version_the_constraints_install() -> None:
    """pyproject.toml admits one minor series of Prefect (the internals above hold for it), and constraints.txt's
    exact version is in it; prefect.yaml's prefect-version is that version."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    deps = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    [spec] = [d.removeprefix("prefect") for d in deps if re.match(r"prefect\b[^-]", d)]
    pinned = SpecifierSet(spec)
    [exact] = re.findall(r"^prefect==(\S+)$", (REPO / "constraints.txt").read_text(encoding="utf-8"), re.M)
    version = Version(exact)
    assert version in pinned, f"constraints.txt's prefect {exact} is outside pyproject's {spec}"
    assert Version(f"{version.major}.{version.minor + 1}.0") not in pinned, f"{spec} admits the next minor"
    assert Version(f"{version.major}.{version.minor}.99") in pinned
    assert f"prefect-version: {exact}\n" in (REPO / "prefect.yaml").read_text(encoding="utf-8")
    assert importlib.metadata.version("prefect") == exact, "the installed Prefect is not constraints.txt's"
