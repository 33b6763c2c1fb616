"""The metrics rollup (migration 10): small tables a Prometheus scrape reads instead of the history.

    roll_up_round(con, round_rollup(info, attempts, results, endpoints))   # inside save_settlement's transaction

Their size depends on the fleet (models x endpoints x contracts x label values), never on how long the canary
ran. A round is folded in once (`metric_rolled_rounds`): saving the same round again (a spool landed twice)
leaves the counters alone. `metric_last_probe` keeps each (model, tag, contract)'s newest round only, so a
deferred round landing late never overwrites a newer one. The model's exposition text is rendered again from
the rollup in the same transaction (`metric_text`, tasks/store/metric_text.py).
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

import pyarrow as pa

from tasks.core.metric_rollup import RoundRollup
from tasks.core.types import RoundState
from tasks.store.metric_text import render_model_text
from tasks.store.rows import Connection, insert_rows, utc

#: Migration 10.
METRIC_ROLLUP_SQL = """
CREATE TABLE metric_counters (
    name      VARCHAR NOT NULL,
    model     VARCHAR NOT NULL,
    tag       VARCHAR NOT NULL,
    contract  VARCHAR NOT NULL,
    label     VARCHAR NOT NULL,
    value     DOUBLE NOT NULL,
    PRIMARY KEY (name, model, tag, contract, label)
);
CREATE TABLE metric_buckets (
    name   VARCHAR NOT NULL,
    model  VARCHAR NOT NULL,
    tag    VARCHAR NOT NULL,
    le     DOUBLE NOT NULL,
    count  BIGINT NOT NULL,
    PRIMARY KEY (name, model, tag, le)
);
CREATE TABLE metric_last_probe (
    model       VARCHAR NOT NULL,
    tag         VARCHAR NOT NULL,
    contract    VARCHAR NOT NULL,
    outcome     VARCHAR NOT NULL,
    reason      VARCHAR NOT NULL,
    ttft_s      DOUBLE,
    duration_s  DOUBLE,
    round_id    VARCHAR NOT NULL,
    round_ts    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (model, tag, contract)
);
CREATE TABLE metric_rolled_rounds (
    round_id   VARCHAR PRIMARY KEY,
    model      VARCHAR NOT NULL,
    round_ts   TIMESTAMPTZ NOT NULL
)
"""


#: Migration 14: the GenAI duration histogram by `error_type` (`metric_buckets.label`, '' for the rows kept from
#: before: they were not told apart), and `round_ends`, the ledger `canary_rounds_total` counts: one row per
#: round and final status, only ever added (a round's row in `rounds` is written `running` and updated later,
#: so counting `rounds` by status made a counter that fell). Backfilled from the rounds that had ended.
METRIC_LABELS_SQL = """
CREATE TABLE metric_buckets_v14 (
    name   VARCHAR NOT NULL,
    model  VARCHAR NOT NULL,
    tag    VARCHAR NOT NULL,
    label  VARCHAR NOT NULL DEFAULT '',
    le     DOUBLE NOT NULL,
    count  BIGINT NOT NULL,
    PRIMARY KEY (name, model, tag, label, le)
);
INSERT INTO metric_buckets_v14 SELECT name, model, tag, '', le, count FROM metric_buckets;
DROP TABLE metric_buckets;
ALTER TABLE metric_buckets_v14 RENAME TO metric_buckets;
CREATE TABLE round_ends (
    round_id  VARCHAR NOT NULL,
    model     VARCHAR NOT NULL,
    status    VARCHAR NOT NULL,
    ended_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (round_id, status)
);
INSERT INTO round_ends SELECT round_id, model, status, coalesce(finished_at, started_at) FROM rounds
    WHERE status <> 'running'
"""


def record_round_end(con: Connection, round_id: str, status: RoundState, at: datetime) -> None:
    """Count a round that ended in `status` (once: the same round ending the same way again adds nothing)."""
    if status == RoundState.RUNNING:
        return
    con.execute("INSERT INTO round_ends SELECT round_id, model, ?, ? FROM rounds WHERE round_id = ?"
                " ON CONFLICT DO NOTHING", [str(status), utc(at), round_id])


def roll_up_round(con: Connection, r: RoundRollup) -> bool:
    """Fold one round into the rollup (call inside the save transaction); False if it was already folded."""
    if con.execute("SELECT 1 FROM metric_rolled_rounds WHERE round_id = ?", [r.round_id]).fetchall():
        return False
    insert_rows(con, "metric_rolled_rounds", [{"round_id": r.round_id, "model": r.model,
                                               "round_ts": utc(r.round_ts)}])
    _upsert(con, "metric_counters", [asdict(c) for c in r.counters],
            "SET value = metric_counters.value + excluded.value")
    _upsert(con, "metric_buckets", [asdict(b) for b in r.buckets],
            "SET count = metric_buckets.count + excluded.count")
    if not r.partial:  # endpoints the catalog no longer lists leave the last-round gauges
        con.execute("DELETE FROM metric_last_probe WHERE model = ? AND round_ts < ?", [r.model, utc(r.round_ts)])
    _upsert(con, "metric_last_probe", [{**asdict(p), "round_ts": utc(p.round_ts)} for p in r.last],
            "SET outcome = excluded.outcome, reason = excluded.reason, ttft_s = excluded.ttft_s,"
            " duration_s = excluded.duration_s, round_id = excluded.round_id, round_ts = excluded.round_ts"
            " WHERE excluded.round_ts >= metric_last_probe.round_ts")
    render_model_text(con, r.model)  # the model's exposition text, so a scrape only reads it (metric_text.py)
    return True


def _upsert(con: Connection, table: str, rows: list[dict[str, Any]], update: str) -> None:
    """One INSERT ... ON CONFLICT DO UPDATE of `rows` through an Arrow table (keys are unique in `rows`)."""
    if not rows:
        return
    view = f"_rollup_{table}"
    con.register(view, pa.Table.from_pylist(rows))
    try:
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {view} ON CONFLICT DO UPDATE {update}")
    finally:
        con.unregister(view)
