"""The secret scanner (tests/e2e/test_secrets.py): every text a sink holds (DuckDB's tables, files, Prefect's flow
runs, artifacts and logs, the Slack double's requests), and where in them a planted value appears."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import duckdb

from tests.support.slack_server import SlackServer


def duckdb_texts(path: Path) -> Iterator[str]:
    """Every value of every table, as text (lists and structs included)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'"
            ).fetchall()
        ]
        assert tables, f"no tables in {path}"
        for table in tables:
            for row in con.execute(f'SELECT * FROM "{table}"').fetchall():
                for value in row:
                    if value is not None:
                        yield f"{table}: {value}"
    finally:
        con.close()


def file_texts(root: Path) -> Iterator[str]:
    for p in sorted(root.rglob("*")):
        if p.is_file():
            yield f"{p}: " + p.read_bytes().decode("utf-8", errors="replace")


def prefect_texts(model: str) -> Iterator[str]:
    """Artifacts, logs and parameters of every flow run of `model`, as the Prefect API holds them."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowRunFilter,
        FlowRunFilterName,
        LogFilter,
        LogFilterFlowRunId,
    )

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(like_=model)))
        assert runs, f"no flow runs of {model}"
        ids = [r.id for r in runs]
        for run in runs:
            yield f"flow run {run.name}: {json.dumps(run.parameters, default=str)}"
            if run.state is not None:
                yield f"flow run state {run.name}: {run.state.name} {run.state.message or ''}"
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=ids))
        )
        for a in artifacts:
            yield f"artifact {a.key}: {a.description} {json.dumps(a.data, default=str)}"
        offset = 0
        while page := client.read_logs(
            LogFilter(flow_run_id=LogFilterFlowRunId(any_=ids)), limit=200, offset=offset
        ):
            yield from (f"log: {log.message}" for log in page)
            offset += len(page)


def slack_texts(slack: SlackServer) -> Iterator[str]:
    """What reached Slack: bodies of every request (the Authorization header is where a token belongs)."""
    for r in slack.requests:
        yield f"slack {r.path}: " + r.raw.decode("utf-8", errors="replace")


def leaks(needles: Iterable[str], texts: Iterable[str]) -> list[str]:
    found = []
    for text in texts:
        for needle in needles:
            if needle in text:
                at = text.index(needle)
                found.append(text[max(0, at - 120) : at + 40])
    return found
