"""Numbered schema migrations, applied on every open (never a manual step).

Each migration runs in its own transaction together with its ``schema_migrations`` row, so a crash leaves
the file at the previous version and the next open simply retries. Migrations are append-only: never edit
a released one, add the next number.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tasks.errors import StoreError
from tasks.runtime.clock import utcnow
from tasks.store.alert_threads import ALERT_THREADS_SQL
from tasks.store.metric_rollup import METRIC_LABELS_SQL, METRIC_ROLLUP_SQL
from tasks.store.metric_text import METRIC_TEXT_SQL, render_all_text
from tasks.store.rows import Connection, fetch_first, transaction
from tasks.store.schema import (
    ALERTS_FAILED_SQL,
    ATTEMPT_TOOL_CALLS_SQL,
    ENDPOINT_PRICING_SQL,
    LIVE_QUALITY_SQL,
    ROUND_FAILED_SQL,
    ROUND_PARTIAL_SQL,
    ROUND_STEPS_SQL,
    ROUTE_EVENT_CLIENT_SQL,
    STREAK_AT_SQL,
    SUSPICION_SQL,
    TABLES_SQL,
)
from tasks.store.views import COST_VIEWS_SQL, RECORDED_STATUSES_SQL, VIEWS_SQL


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str
    then: Callable[[Connection], None] | None = None  # Python run after `sql`, in the same transaction


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "tables", TABLES_SQL),
    Migration(2, "analyst views", VIEWS_SQL),
    Migration(3, "recorded endpoint round statuses", RECORDED_STATUSES_SQL),
    Migration(4, "attempt tool calls", ATTEMPT_TOOL_CALLS_SQL),
    Migration(5, "round steps and alert delivery states", ROUND_STEPS_SQL),
    Migration(6, "endpoint pricing and cost views", ENDPOINT_PRICING_SQL + ";\n" + COST_VIEWS_SQL),
    Migration(7, "partial (confirmation) rounds", ROUND_PARTIAL_SQL),
    Migration(8, "failed alerts and alert claimers", ALERTS_FAILED_SQL),
    Migration(9, "listing signals, live requests and suspicions", SUSPICION_SQL),
    Migration(10, "metrics rollup", METRIC_ROLLUP_SQL),
    Migration(11, "metrics exposition text per model", METRIC_TEXT_SQL),
    Migration(12, "live judged answers", LIVE_QUALITY_SQL),
    Migration(13, "failed rounds and the run holding a round id", ROUND_FAILED_SQL),
    Migration(14, "metric labels that survive Kubernetes, GenAI error.type, the rounds ledger", METRIC_LABELS_SQL,
              then=render_all_text),
    Migration(15, "the router's client on route events", ROUTE_EVENT_CLIENT_SQL),
    Migration(16, "Slack threads: where each alert was posted, the message of each suspension", ALERT_THREADS_SQL),
    Migration(17, "the time of the round that last grew an endpoint's streak", STREAK_AT_SQL),
)

#: The version a fully migrated file reports.
LATEST_VERSION = MIGRATIONS[-1].version

_BOOKKEEPING_SQL = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     INTEGER PRIMARY KEY,
    name        VARCHAR NOT NULL,
    applied_at  TIMESTAMPTZ NOT NULL
)
"""


def schema_version(con: Connection) -> int:
    """The highest applied migration, 0 for an empty file."""
    exists = fetch_first(
        con,
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'schema_migrations' AND schema_name = 'main'"
        " AND database_name = current_database()",
    )
    if not exists or not exists[0]:
        return 0
    row = fetch_first(con, "SELECT coalesce(max(version), 0) FROM schema_migrations")
    return int(row[0]) if row else 0


def migrate(con: Connection) -> list[int]:
    """Apply every missing migration in order; return the versions applied (empty when up to date)."""
    current = schema_version(con)
    if current > LATEST_VERSION:
        raise StoreError(
            f"store: database schema version {current} is newer than this code ({LATEST_VERSION}); upgrade"
        )
    if current == LATEST_VERSION:
        return []
    con.execute(_BOOKKEEPING_SQL)
    applied: list[int] = []
    for migration in MIGRATIONS:
        if migration.version <= current:
            continue
        try:
            with transaction(con):
                for statement in _statements(con, migration.sql):
                    con.execute(statement)
                if migration.then is not None:
                    migration.then(con)
                con.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                    [migration.version, migration.name, utcnow()],
                )
        except StoreError:
            raise
        except Exception as exc:  # a broken migration is an operator problem: one line
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise StoreError(
                f"store: migration {migration.version} ({migration.name}) failed: {first}"
            ) from exc
        applied.append(migration.version)
    return applied


def _statements(con: Connection, sql: str) -> list[str]:
    """A migration's statements, split by DuckDB's own parser: a `;` inside a string literal, a quoted name
    or a comment stays in its statement (a syntax error raises, and `migrate` reports it in one line)."""
    return [statement.query for statement in con.extract_statements(sql)]
