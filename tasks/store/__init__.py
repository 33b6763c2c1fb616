"""The DuckDB store: the only module that imports duckdb (docs/schema.md has every table and view).

    with open_store(cfg.db_path) as con:          # short write window: lock retry, migrations, snapshot
        land_round(con, info, attempts, endpoints=endpoints)
    con = open_snapshot(cfg.db_path)               # analysts: read-only, never blocks a round

Modules: connection (windows), connect (one connect: the wait for the lock, a broken file's line),
snapshot (analysts' copy), snapshot_reader (`open_snapshot`), migrations/schema/views (DDL), landing (writes
of rounds, attempts, outcomes), history (reads of complete rounds), records (row conversions), state
(policy state, decisions, settings), exclusions (operational layer), outbox (alerts), route_events,
costs (what the canary spent: the cost views, the budget projection), metric_rollup (what a Prometheus
scrape reads, kept by the save transaction).
"""

from tasks.store.connection import DEFAULT_LOCK_TIMEOUT_S, held_open, kept_open, open_store
from tasks.store.costs import daily_costs, read_projection
from tasks.store.exclusions import (
    active_exclusions,
    add_exclusion,
    exclusion_history,
    exclusions_as_of,
    remove_exclusion,
)
from tasks.store.history import (
    attempts_of_round,
    complete_rounds,
    last_language_outcomes,
    latest_complete_rounds,
    latest_outcomes,
    outcomes_of_round,
    possible_duplicate_alerts,
    recent_rounds,
    round_rows,
    round_status_history,
)
from tasks.store.landing import complete_round, finish_round, land_outcomes, land_round
from tasks.store.migrations import LATEST_VERSION, MIGRATIONS, migrate, schema_version
from tasks.store.outbox import (
    alert_health,
    alert_rows,
    claim_alerts,
    enqueue_alerts,
    pending_alerts,
    record_delivery,
)
from tasks.store.route_events import append_route_events, route_event_rows
from tasks.store.rows import Connection, transaction
from tasks.store.snapshot import snapshot_path
from tasks.store.snapshot_reader import open_snapshot
from tasks.store.state import (
    MODE_KEY,
    append_decisions,
    decisions_between,
    get_setting,
    load_states,
    save_states,
    set_setting,
    suspension_evidence,
)

__all__ = [
    "DEFAULT_LOCK_TIMEOUT_S",
    "LATEST_VERSION",
    "MIGRATIONS",
    "MODE_KEY",
    "Connection",
    "active_exclusions",
    "add_exclusion",
    "alert_health",
    "alert_rows",
    "claim_alerts",
    "append_decisions",
    "append_route_events",
    "attempts_of_round",
    "complete_round",
    "complete_rounds",
    "latest_complete_rounds",
    "daily_costs",
    "decisions_between",
    "enqueue_alerts",
    "exclusion_history",
    "exclusions_as_of",
    "finish_round",
    "get_setting",
    "land_outcomes",
    "last_language_outcomes",
    "land_round",
    "latest_outcomes",
    "load_states",
    "suspension_evidence",
    "migrate",
    "open_snapshot",
    "held_open",
    "kept_open",
    "open_store",
    "outcomes_of_round",
    "possible_duplicate_alerts",
    "recent_rounds",
    "read_projection",
    "pending_alerts",
    "record_delivery",
    "remove_exclusion",
    "round_rows",
    "round_status_history",
    "route_event_rows",
    "save_states",
    "schema_version",
    "set_setting",
    "snapshot_path",
    "transaction",
]
