"""Migration 1: the tables (docs/schema.md describes every column).

Conventions: timestamps are TIMESTAMPTZ (UTC), durations are DOUBLE milliseconds named ``*_ms`` (or
seconds named ``*_s``), enums are VARCHAR holding tasks.core.types' StrEnum values. ``at`` cannot be a column
name in DuckDB 2, so ``Decision.at`` is ``decisions.decided_at`` and ``RouteEvent.at`` is
``route_events.event_at``.
"""

from __future__ import annotations

TABLES_SQL = """
CREATE TABLE rounds (
    round_id        VARCHAR PRIMARY KEY,
    model           VARCHAR NOT NULL,
    round_ts        TIMESTAMPTZ NOT NULL,
    mode            VARCHAR NOT NULL,
    status          VARCHAR NOT NULL CHECK (status IN ('running', 'complete', 'crashed')),
    started_at      TIMESTAMPTZ NOT NULL,
    finished_at     TIMESTAMPTZ,
    endpoints       VARCHAR[] NOT NULL,
    endpoint_count  INTEGER NOT NULL,
    attempt_count   INTEGER NOT NULL,
    outcome_count   INTEGER NOT NULL DEFAULT 0,
    error           VARCHAR
);

CREATE TABLE round_endpoints (
    round_id              VARCHAR NOT NULL,
    model                 VARCHAR NOT NULL,
    tag                   VARCHAR NOT NULL,
    provider_name         VARCHAR,
    quantization          VARCHAR,
    endpoint_status       INTEGER,
    context_length        INTEGER,
    supported_parameters  VARCHAR[],
    PRIMARY KEY (round_id, tag)
);

CREATE TABLE attempts (
    attempt_id            VARCHAR PRIMARY KEY,
    round_id              VARCHAR NOT NULL,
    model                 VARCHAR NOT NULL,
    tag                   VARCHAR NOT NULL,
    provider_name         VARCHAR NOT NULL,
    contract              VARCHAR NOT NULL,
    attempt_no            INTEGER NOT NULL,
    language              VARCHAR,
    started_at            TIMESTAMPTZ NOT NULL,
    http_status           INTEGER,
    ttft_ms               DOUBLE,
    total_ms              DOUBLE,
    chunk_count           INTEGER NOT NULL,
    keepalive_count       INTEGER NOT NULL,
    finish_reason         VARCHAR,
    native_finish_reason  VARCHAR,
    served_provider       VARCHAR,
    pin_mismatch          BOOLEAN NOT NULL,
    prompt_tokens         INTEGER,
    completion_tokens     INTEGER,
    total_tokens          INTEGER,
    cost                  DOUBLE,
    text                  VARCHAR NOT NULL,
    text_truncated        BOOLEAN NOT NULL,
    reasoning             VARCHAR NOT NULL,
    error_class           VARCHAR,
    error_code            INTEGER,
    error_detail          VARCHAR,
    retry_after_s         DOUBLE
);

CREATE TABLE outcomes (
    round_id     VARCHAR NOT NULL,
    model        VARCHAR NOT NULL,
    tag          VARCHAR NOT NULL,
    contract     VARCHAR NOT NULL,
    outcome      VARCHAR NOT NULL CHECK (outcome IN ('pass', 'fail', 'inconclusive', 'transport')),
    reason       VARCHAR NOT NULL,
    evidence     VARCHAR NOT NULL,
    attempt_ids  VARCHAR[] NOT NULL,
    language     VARCHAR,
    PRIMARY KEY (round_id, tag, contract)
);

CREATE TABLE endpoint_state (
    model                VARCHAR NOT NULL,
    tag                  VARCHAR NOT NULL,
    mode                 VARCHAR NOT NULL,
    fail_streak          INTEGER NOT NULL,
    clean_streak         INTEGER NOT NULL,
    suspended_until      TIMESTAMPTZ,
    suspended_at         TIMESTAMPTZ,
    ladder_step          INTEGER NOT NULL,
    last_suspension_end  TIMESTAMPTZ,
    floor_blocked        BOOLEAN NOT NULL,
    fail_rounds          VARCHAR[] NOT NULL,
    clean_rounds         VARCHAR[] NOT NULL,
    PRIMARY KEY (model, tag, mode)
);

CREATE TABLE decisions (
    decision_id         VARCHAR PRIMARY KEY,
    decided_at          TIMESTAMPTZ NOT NULL,
    model               VARCHAR NOT NULL,
    tag                 VARCHAR NOT NULL,
    action              VARCHAR NOT NULL,
    mode                VARCHAR NOT NULL,
    ladder_step         INTEGER NOT NULL,
    until               TIMESTAMPTZ,
    reason              VARCHAR NOT NULL,
    evidence_round_ids  VARCHAR[] NOT NULL,
    round_id            VARCHAR,
    actor               VARCHAR NOT NULL
);

CREATE SEQUENCE exclusion_id_seq START 1;

CREATE TABLE exclusions (
    exclusion_id    BIGINT PRIMARY KEY DEFAULT nextval('exclusion_id_seq'),
    tag             VARCHAR NOT NULL,
    model           VARCHAR,
    reason          VARCHAR NOT NULL,
    who             VARCHAR NOT NULL,
    added_at        TIMESTAMPTZ NOT NULL,
    until           TIMESTAMPTZ,
    removed_at      TIMESTAMPTZ,
    removed_by      VARCHAR,
    removed_reason  VARCHAR
);

CREATE TABLE alerts (
    key              VARCHAR PRIMARY KEY,
    created_at       TIMESTAMPTZ NOT NULL,
    kind             VARCHAR NOT NULL,
    model            VARCHAR NOT NULL,
    tag              VARCHAR,
    text             VARCHAR NOT NULL,
    blocks_json      VARCHAR NOT NULL,
    status           VARCHAR NOT NULL CHECK (status IN ('pending', 'sent')),
    attempts         INTEGER NOT NULL,
    last_error       VARCHAR,
    last_attempt_at  TIMESTAMPTZ,
    next_attempt_at  TIMESTAMPTZ,
    sent_at          TIMESTAMPTZ
);

CREATE TABLE route_events (
    event_at    TIMESTAMPTZ NOT NULL,
    key         VARCHAR NOT NULL,
    tier        INTEGER NOT NULL,
    upstream    VARCHAR NOT NULL,
    reason      VARCHAR NOT NULL,
    latency_ms  DOUBLE,
    model       VARCHAR
);

CREATE TABLE settings (
    key         VARCHAR PRIMARY KEY,
    value       VARCHAR NOT NULL,
    updated_at  TIMESTAMPTZ,
    updated_by  VARCHAR
);

CREATE TABLE settings_history (
    key         VARCHAR NOT NULL,
    value       VARCHAR NOT NULL,
    changed_at  TIMESTAMPTZ,
    changed_by  VARCHAR
);

"""

#: Migration 4: the tool calls of an attempt (tasks.core.types.ToolCall), as a JSON array of
#: ``{"index", "id", "name", "arguments"}`` in index order; NULL for attempts landed before it existed.
ATTEMPT_TOOL_CALLS_SQL = """
ALTER TABLE attempts ADD COLUMN tool_calls JSON
"""

#: Migration 5. ``rounds.step``: the step a round reached (``probe`` while it runs, ``saved`` once landed,
#: the step it died in for a ``crashed`` round); ``landed_at``: when its save committed; ``deferred``: it was
#: settled but spooled because the write window could not be had, and landed later by another process.
#: ``alerts.sending_since``: a post may be in flight (set before the post, cleared when its result is known);
#: ``possible_duplicates``: posts repeated while an earlier one's fate was unknown (webhook / log transports).
ROUND_STEPS_SQL = """
ALTER TABLE rounds ADD COLUMN step VARCHAR;
ALTER TABLE rounds ADD COLUMN landed_at TIMESTAMPTZ;
ALTER TABLE rounds ADD COLUMN deferred BOOLEAN DEFAULT false;
ALTER TABLE alerts ADD COLUMN sending_since TIMESTAMPTZ;
ALTER TABLE alerts ADD COLUMN possible_duplicates INTEGER DEFAULT 0;
"""

#: Migration 6: the endpoint's listed pricing as discovery saw it in the round (tasks.core.types.Endpoint), USD
#: after OpenRouter's ``discount``: per prompt token, per completion token, per request. NULL when not listed
#: (and for rounds landed before it existed). The cost views estimate an attempt without a usage cost from it.
ENDPOINT_PRICING_SQL = """
ALTER TABLE round_endpoints ADD COLUMN prompt_price_usd DOUBLE;
ALTER TABLE round_endpoints ADD COLUMN completion_price_usd DOUBLE;
ALTER TABLE round_endpoints ADD COLUMN request_price_usd DOUBLE;
"""

#: Migration 7. ``rounds.partial``: a confirmation round (tasks/core/confirm.py) that probed only some
#: endpoints; the endpoints it lists are the probed ones, the others were absent (their streaks froze).
ROUND_PARTIAL_SQL = """
ALTER TABLE rounds ADD COLUMN partial BOOLEAN DEFAULT false
"""

#: Migration 8: alerts that Slack refused for good. ``alerts.status`` may now be ``failed`` (Slack refused it
#: for a reason a retry cannot fix, or its destination refuses everything: never retried, shown by
#: `canary status`), with ``failed_at``; ``claimed_by``: the process that claimed the alert for a post
#: (``host|pid|start``, tasks/runtime/liveness.py), so a claim whose process is gone is taken over at once. DuckDB
#: cannot change a CHECK constraint in place, so the table is rebuilt (same columns, rows kept).
ALERTS_FAILED_SQL = """
CREATE TABLE alerts_v8 (
    key                  VARCHAR PRIMARY KEY,
    created_at           TIMESTAMPTZ NOT NULL,
    kind                 VARCHAR NOT NULL,
    model                VARCHAR NOT NULL,
    tag                  VARCHAR,
    text                 VARCHAR NOT NULL,
    blocks_json          VARCHAR NOT NULL,
    status               VARCHAR NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
    attempts             INTEGER NOT NULL,
    last_error           VARCHAR,
    last_attempt_at      TIMESTAMPTZ,
    next_attempt_at      TIMESTAMPTZ,
    sent_at              TIMESTAMPTZ,
    sending_since        TIMESTAMPTZ,
    possible_duplicates  INTEGER DEFAULT 0,
    failed_at            TIMESTAMPTZ,
    claimed_by           VARCHAR
);
INSERT INTO alerts_v8 SELECT key, created_at, kind, model, tag, text, blocks_json, status, attempts, last_error,
    last_attempt_at, next_attempt_at, sent_at, sending_since, possible_duplicates, NULL, NULL FROM alerts;
DROP TABLE alerts;
ALTER TABLE alerts_v8 RENAME TO alerts
"""

#: Migration 9 (docs/schema.md "Suspicion"). ``round_endpoints``: OpenRouter's own figures for the endpoint as
#: the round's discovery listed them (percent uptimes, TTFT percentiles in ms, throughput percentiles in
#: tokens/s; NULL when the listing gave none). ``live_requests``: the router's served requests counted per
#: minute, endpoint and what happened (provider_canary/router/live.py). ``suspicions``: every trigger of a confirmation
#: round
#: by a signal (tasks/core/suspicion.py), with its evidence and what the pinned probes then said.
SUSPICION_SQL = """
ALTER TABLE round_endpoints ADD COLUMN uptime_last_5m DOUBLE;
ALTER TABLE round_endpoints ADD COLUMN uptime_last_30m DOUBLE;
ALTER TABLE round_endpoints ADD COLUMN uptime_last_1d DOUBLE;
ALTER TABLE round_endpoints ADD COLUMN latency_p50_ms DOUBLE;
ALTER TABLE round_endpoints ADD COLUMN latency_p75_ms DOUBLE;
ALTER TABLE round_endpoints ADD COLUMN latency_p90_ms DOUBLE;
ALTER TABLE round_endpoints ADD COLUMN latency_p99_ms DOUBLE;
ALTER TABLE round_endpoints ADD COLUMN throughput_p50 DOUBLE;
ALTER TABLE round_endpoints ADD COLUMN throughput_p75 DOUBLE;
ALTER TABLE round_endpoints ADD COLUMN throughput_p90 DOUBLE;
ALTER TABLE round_endpoints ADD COLUMN throughput_p99 DOUBLE;
CREATE TABLE live_requests (
    minute_at      TIMESTAMPTZ NOT NULL,
    model          VARCHAR NOT NULL,
    route_key      VARCHAR NOT NULL,
    tier           INTEGER NOT NULL,
    tag            VARCHAR,
    provider_name  VARCHAR,
    outcome        VARCHAR NOT NULL,
    requests       INTEGER NOT NULL
);
CREATE TABLE suspicions (
    suspicion_id     VARCHAR PRIMARY KEY,
    detected_at      TIMESTAMPTZ NOT NULL,
    model            VARCHAR NOT NULL,
    tag              VARCHAR NOT NULL,
    signal           VARCHAR NOT NULL,
    evidence         VARCHAR NOT NULL,
    requests         INTEGER,
    failures         INTEGER,
    failure_rate     DOUBLE,
    uptime_recent    DOUBLE,
    uptime_baseline  DOUBLE,
    status           VARCHAR NOT NULL,
    confirm_round_id VARCHAR,
    round_status     VARCHAR,
    resolved_at      TIMESTAMPTZ,
    note             VARCHAR
)
"""

#: Migration 12: the router's judged answers beside its attempts (tasks/core/live_records.py `LiveQuality`):
#: ``live_requests.quality`` (NULL: an attempt row; else the class of a check of a passed answer) and
#: ``live_requests.reason`` (attempt rows: the upstream's own word, e.g. a ``native_finish_reason``; judged rows:
#: the canary's ``Reason`` value, ``ok`` for a pass); ``suspicions.quality`` (the class of a quality suspicion).
LIVE_QUALITY_SQL = """
ALTER TABLE live_requests ADD COLUMN quality VARCHAR;
ALTER TABLE live_requests ADD COLUMN reason VARCHAR;
ALTER TABLE suspicions ADD COLUMN quality VARCHAR
"""

#: Migration 13: a round that failed in its own process says so. ``rounds.status`` may now be ``failed`` (the
#: round raised and its process recorded why in ``error``; ``crashed`` stays for a round whose process is gone);
#: ``rounds.run_id``: the run that chose the round's time (a cycle's flow run, flows/round.py `run_round`), so a save
#: that would replace another run's round of the same id refuses instead (NULL for rounds stored before). DuckDB
#: cannot change a CHECK constraint in place, so the table is rebuilt (same columns, rows kept).
ROUND_FAILED_SQL = """
CREATE TABLE rounds_v13 (
    round_id        VARCHAR PRIMARY KEY,
    model           VARCHAR NOT NULL,
    round_ts        TIMESTAMPTZ NOT NULL,
    mode            VARCHAR NOT NULL,
    status          VARCHAR NOT NULL CHECK (status IN ('running', 'complete', 'crashed', 'failed')),
    started_at      TIMESTAMPTZ NOT NULL,
    finished_at     TIMESTAMPTZ,
    endpoints       VARCHAR[] NOT NULL,
    endpoint_count  INTEGER NOT NULL,
    attempt_count   INTEGER NOT NULL,
    outcome_count   INTEGER NOT NULL DEFAULT 0,
    error           VARCHAR,
    step            VARCHAR,
    landed_at       TIMESTAMPTZ,
    deferred        BOOLEAN DEFAULT false,
    partial         BOOLEAN DEFAULT false,
    run_id          VARCHAR
);
INSERT INTO rounds_v13 SELECT round_id, model, round_ts, mode, status, started_at, finished_at, endpoints,
    endpoint_count, attempt_count, outcome_count, error, step, landed_at, deferred, partial, NULL FROM rounds;
DROP TABLE rounds;
ALTER TABLE rounds_v13 RENAME TO rounds
"""

#: Migration 15: ``route_events.client``, the router's client whose request the event is about (its ``[[client]]``
#: name or a key route's ``key:<sha256 prefix>``; NULL: anonymous, or an event stored before).
ROUTE_EVENT_CLIENT_SQL = """
ALTER TABLE route_events ADD COLUMN IF NOT EXISTS client VARCHAR
"""

#: Migration 17. ``endpoint_state.streak_at``: round_ts of the round that last grew the current streak (fail
#: or clean); a round closer to it than ``confirm_after_min`` does not grow it (tasks/core/policy.py `counts`).
#: NULL for states stored before: their next round counts, as it would have.
STREAK_AT_SQL = """
ALTER TABLE endpoint_state ADD COLUMN IF NOT EXISTS streak_at TIMESTAMPTZ
"""
