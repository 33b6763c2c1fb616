"""The private Prefect server's database template, on real servers (tasks/prefect_api/db_template.py).

The first private server starts from a fresh file, migrates it and, once it answers, leaves a template in the
user's cache; the next one starts from a copy with Prefect's migrations and block registration off, and serves
everything a round asks of it: a flow, a flow run, its task run, a concurrency limit, a Variable, and the block
types Prefect registered in the first. A template that is not sound is replaced, not used."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import httpx
import pytest

from tasks.prefect_api import db_template
from tasks.prefect_api.private_server import PrivatePrefectServer

pytestmark = pytest.mark.integration


def started(monkeypatch: pytest.MonkeyPatch, cache: Path) -> PrivatePrefectServer:
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    for key in ("PREFECT_API_DATABASE_CONNECTION_URL", "PREFECT_SERVER_DATABASE_CONNECTION_URL"):
        monkeypatch.delenv(key, raising=False)
    server = PrivatePrefectServer()
    server.start()
    try:
        server.wait_ready()
    except BaseException:
        server.stop()
        raise
    return server


def serves_a_round(api: str) -> None:
    """What a round asks of Prefect's API, each answered from the template's tables."""
    with httpx.Client(base_url=api, timeout=30) as client:
        flow = client.post("/flows/", json={"name": "probe-round"})
        assert flow.status_code in (200, 201), flow.text
        run = client.post("/flow_runs/", json={"flow_id": flow.json()["id"], "name": "round-x"})
        assert run.status_code in (200, 201), run.text
        task = client.post("/task_runs/", json={
            "flow_run_id": run.json()["id"], "task_key": "probe", "dynamic_key": "0", "name": "probe-0",
        })
        assert task.status_code in (200, 201), task.text
        limit = client.post("/v2/concurrency_limits/", json={"name": f"round-{uuid.uuid4().hex[:8]}", "limit": 1})
        assert limit.status_code in (200, 201), limit.text
        variable = client.post("/variables/", json={"name": "canary_x", "value": {"a": 1}})
        assert variable.status_code in (200, 201), variable.text
        secret = client.get("/block_types/slug/secret")
        assert secret.status_code == 200, secret.text  # registered by the first server, carried by the template


def test_the_second_private_server_starts_from_the_firsts_migrated_database(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    first = started(monkeypatch, cache)
    try:
        assert not first.from_template
        serves_a_round(first.api_url)  # the first server's own runs must not reach the template
    finally:
        first.stop()
    template = db_template.template_path()
    assert template is not None and template.is_file() and template.parent.parent == cache
    with sqlite3.connect(f"{template.as_uri()}?mode=ro", uri=True) as db:
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        filled = {t for t in tables if db.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]}
    assert "flow_run" in tables and filled <= {"alembic_version", "block_type", "block_schema",
                                               "block_schema_reference"}, filled
    second = started(monkeypatch, cache)
    try:
        assert second.from_template
        serves_a_round(second.api_url)
    finally:
        second.stop()


def test_a_torn_template_is_replaced_by_a_sound_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    template = db_template.template_path()
    assert template is not None
    template.parent.mkdir(parents=True)
    template.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)  # a copy cut short
    server = started(monkeypatch, cache)
    try:
        assert not server.from_template
        serves_a_round(server.api_url)
    finally:
        server.stop()
    assert db_template.copy_template(tmp_path / "check.db", template)  # sound now
