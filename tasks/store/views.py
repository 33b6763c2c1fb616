"""Migration 2: stable views for analysts (docs/schema.md "Views").

Views name no catalog, so they work the same in the live file and in the published snapshot. A later
change to a view is a new migration that runs ``CREATE OR REPLACE VIEW`` again: analysts keep the name.
"""

from __future__ import annotations

#: Migration 2's version (superseded by V_ENDPOINT_ROUNDS_3 below). Round status (docs/design.md):
#: fail if any contract failed; else transport if any contract was transport; else clean if one passed;
#: else inconclusive (also for an endpoint discovered but never judged).
V_ENDPOINT_ROUNDS = """
CREATE OR REPLACE VIEW v_endpoint_rounds AS
WITH oc AS (
    SELECT round_id, tag,
           count(*) AS contracts,
           count(*) FILTER (WHERE outcome = 'pass') AS passes,
           count(*) FILTER (WHERE outcome = 'fail') AS fails,
           count(*) FILTER (WHERE outcome = 'transport') AS transports,
           count(*) FILTER (WHERE outcome = 'inconclusive') AS inconclusives,
           string_agg(contract || ':' || reason, ', ' ORDER BY contract) FILTER (WHERE outcome = 'fail')
               AS fail_reasons
    FROM outcomes
    GROUP BY round_id, tag
),
keys AS (
    SELECT round_id, tag FROM round_endpoints
    UNION
    SELECT round_id, tag FROM oc
)
SELECT r.round_id, r.round_ts, r.model, r.mode, r.status AS round_state, k.tag, e.provider_name,
       e.tag IS NOT NULL AS discovered,
       CASE WHEN coalesce(oc.fails, 0) > 0 THEN 'fail'
            WHEN coalesce(oc.transports, 0) > 0 THEN 'transport'
            WHEN coalesce(oc.passes, 0) > 0 THEN 'clean'
            ELSE 'inconclusive' END AS status,
       coalesce(oc.contracts, 0) AS contracts,
       coalesce(oc.passes, 0) AS passes,
       coalesce(oc.fails, 0) AS fails,
       coalesce(oc.transports, 0) AS transports,
       coalesce(oc.inconclusives, 0) AS inconclusives,
       oc.fail_reasons
FROM keys k
JOIN rounds r USING (round_id)
LEFT JOIN round_endpoints e USING (round_id, tag)
LEFT JOIN oc USING (round_id, tag)
"""

V_ATTEMPTS = """
CREATE OR REPLACE VIEW v_attempts AS
SELECT a.attempt_id, a.round_id, r.round_ts, r.status AS round_state, a.model, a.tag, a.provider_name,
       a.served_provider, a.pin_mismatch, a.contract, a.attempt_no, a.language,
       o.outcome, o.reason AS outcome_reason, o.evidence,
       a.started_at, a.http_status, a.ttft_ms, a.total_ms, a.chunk_count, a.keepalive_count,
       a.finish_reason, a.native_finish_reason, a.error_class, a.error_code, a.error_detail,
       a.retry_after_s, a.prompt_tokens, a.completion_tokens, a.total_tokens, a.cost,
       length(a.text) AS text_chars, a.text_truncated, left(a.text, 160) AS excerpt, a.text
FROM attempts a
LEFT JOIN rounds r USING (round_id)
LEFT JOIN outcomes o ON o.round_id = a.round_id AND o.tag = a.tag AND o.contract = a.contract
"""

#: One row per suspension (real or shadow), closed by the next expire/restore/lift of the same
#: (model, tag, mode). On a tie in time the end sorts before a new suspension (expire, then re-suspend).
V_SUSPENSIONS = """
CREATE OR REPLACE VIEW v_suspensions AS
WITH d AS (
    SELECT *, regexp_replace(action, '^would_', '') AS base_action
    FROM decisions
    WHERE regexp_replace(action, '^would_', '') IN ('suspend', 'restore', 'expire', 'lift')
),
s AS (
    SELECT d.*,
           lead(base_action) OVER w AS next_action,
           lead(decided_at) OVER w AS next_at,
           lead(actor) OVER w AS next_actor,
           lead(reason) OVER w AS next_reason
    FROM d
    WINDOW w AS (PARTITION BY model, tag, mode
                 ORDER BY decided_at, CASE WHEN base_action = 'suspend' THEN 1 ELSE 0 END)
)
SELECT model, tag, mode, decision_id, round_id, decided_at AS started_at, until AS planned_until,
       ladder_step, reason, evidence_round_ids,
       next_at AS ended_at,
       CASE WHEN next_action IS NULL THEN 'still_active'
            WHEN next_action = 'suspend' THEN 'superseded'
            ELSE next_action END AS ended_by,
       next_actor AS ended_by_actor,
       next_reason AS end_reason,
       date_diff('second', decided_at, next_at) / 3600.0 AS hours_suspended
FROM s
WHERE base_action = 'suspend'
"""

V_LANGUAGE_MATRIX = """
CREATE OR REPLACE VIEW v_language_matrix AS
SELECT o.model, o.tag, o.language,
       count(*) AS rounds,
       count(*) FILTER (WHERE o.outcome = 'pass') AS passes,
       count(*) FILTER (WHERE o.outcome = 'fail') AS fails,
       count(*) FILTER (WHERE o.outcome = 'inconclusive') AS inconclusives,
       count(*) FILTER (WHERE o.outcome = 'transport') AS transports,
       string_agg(DISTINCT o.reason, ', ') FILTER (WHERE o.outcome = 'fail') AS fail_reasons,
       max(r.round_ts) AS last_round_ts
FROM outcomes o
JOIN rounds r USING (round_id)
WHERE o.contract = 'language' AND o.language IS NOT NULL AND r.status = 'complete'
GROUP BY o.model, o.tag, o.language
"""

#: Every change to what the ignore list holds: operational adds/removals and enforce-mode decisions.
V_IGNORE_HISTORY = """
CREATE OR REPLACE VIEW v_ignore_history AS
SELECT added_at AS event_at, model, tag, 'operational' AS layer, 'add' AS event, reason, who AS actor, until
FROM exclusions
UNION ALL
SELECT removed_at, model, tag, 'operational', 'remove', removed_reason, removed_by, NULL
FROM exclusions WHERE removed_at IS NOT NULL
UNION ALL
SELECT decided_at, model, tag, 'canary', action, reason, actor, until
FROM decisions WHERE action IN ('suspend', 'restore', 'expire', 'lift')
"""

VIEWS_SQL = "\n;\n".join((V_ENDPOINT_ROUNDS, V_ATTEMPTS, V_SUSPENSIONS, V_LANGUAGE_MATRIX, V_IGNORE_HISTORY))

# -- migration 3: the endpoint round statuses the policy was fed are recorded (complete_round) -------------
ENDPOINT_ROUNDS_TABLE = """
CREATE TABLE endpoint_rounds (
    round_id  VARCHAR NOT NULL,
    model     VARCHAR NOT NULL,
    tag       VARCHAR NOT NULL,
    status    VARCHAR NOT NULL CHECK (status IN ('clean', 'fail', 'transport', 'inconclusive')),
    PRIMARY KEY (round_id, tag)
)
"""

#: v_endpoint_rounds, version 3: ``status`` is the recorded status when the flow recorded one, else the
#: status derived from the outcomes; ``derived_status`` is always the SQL derivation (to cross-check). The
#: rule's reference is tasks/core/verdicts.py; tests/integration/test_status_agreement.py checks they agree.
V_ENDPOINT_ROUNDS_3 = """
CREATE OR REPLACE VIEW v_endpoint_rounds AS
WITH oc AS (
    SELECT round_id, tag,
           count(*) AS contracts,
           count(*) FILTER (WHERE outcome = 'pass') AS passes,
           count(*) FILTER (WHERE outcome = 'fail') AS fails,
           count(*) FILTER (WHERE outcome = 'transport') AS transports,
           count(*) FILTER (WHERE outcome = 'inconclusive') AS inconclusives,
           string_agg(contract || ':' || reason, ', ' ORDER BY contract) FILTER (WHERE outcome = 'fail')
               AS fail_reasons
    FROM outcomes
    GROUP BY round_id, tag
),
keys AS (
    SELECT round_id, tag FROM round_endpoints
    UNION
    SELECT round_id, tag FROM oc
    UNION
    SELECT round_id, tag FROM endpoint_rounds
),
derived AS (
    SELECT k.round_id, k.tag,
           CASE WHEN coalesce(oc.fails, 0) > 0 THEN 'fail'
                WHEN coalesce(oc.transports, 0) > 0 THEN 'transport'
                WHEN coalesce(oc.passes, 0) > 0 THEN 'clean'
                ELSE 'inconclusive' END AS derived_status,
           coalesce(oc.contracts, 0) AS contracts,
           coalesce(oc.passes, 0) AS passes,
           coalesce(oc.fails, 0) AS fails,
           coalesce(oc.transports, 0) AS transports,
           coalesce(oc.inconclusives, 0) AS inconclusives,
           oc.fail_reasons
    FROM keys k LEFT JOIN oc USING (round_id, tag)
)
SELECT r.round_id, r.round_ts, r.model, r.mode, r.status AS round_state, d.tag, e.provider_name,
       e.tag IS NOT NULL AS discovered,
       coalesce(er.status, d.derived_status) AS status,
       er.status IS NOT NULL AS status_recorded,
       d.derived_status, d.contracts, d.passes, d.fails, d.transports, d.inconclusives, d.fail_reasons
FROM derived d
JOIN rounds r USING (round_id)
LEFT JOIN round_endpoints e USING (round_id, tag)
LEFT JOIN endpoint_rounds er USING (round_id, tag)
"""

RECORDED_STATUSES_SQL = "\n;\n".join((ENDPOINT_ROUNDS_TABLE, V_ENDPOINT_ROUNDS_3))

# -- migration 6: what the canary spends (docs/schema.md "Cost views") ------------------------------------
#: One row per attempt with what it cost. ``cost_basis``: ``reported`` (the upstream's usage ``cost``),
#: ``estimated`` (tokens x the endpoint's listed pricing in that round, plus its per-request price) or
#: ``unpriced`` (no usage cost and no tokens or no listed pricing: counted as a request, at $0). ``day`` is
#: the UTC date of the round's ``round_ts``. tasks/core/cost.py computes the same figures in Python.
V_ATTEMPT_COSTS = """
CREATE OR REPLACE VIEW v_attempt_costs AS
WITH priced AS (
    SELECT a.attempt_id, a.round_id, r.round_ts, CAST(timezone('UTC', r.round_ts) AS DATE) AS day,
           r.status AS round_state, a.model, a.tag, a.contract, a.attempt_no, a.language,
           coalesce(a.prompt_tokens, 0) AS prompt_tokens,
           coalesce(a.completion_tokens, 0) AS completion_tokens,
           coalesce(a.total_tokens, coalesce(a.prompt_tokens, 0) + coalesce(a.completion_tokens, 0)) AS tokens,
           a.cost AS reported_cost_usd,
           CASE WHEN a.cost IS NULL
                     AND (a.prompt_tokens IS NOT NULL OR a.completion_tokens IS NOT NULL)
                     AND e.prompt_price_usd IS NOT NULL AND e.completion_price_usd IS NOT NULL
                THEN coalesce(a.prompt_tokens, 0) * e.prompt_price_usd
                     + coalesce(a.completion_tokens, 0) * e.completion_price_usd
                     + coalesce(e.request_price_usd, 0)
           END AS estimated_cost_usd
    FROM attempts a
    JOIN rounds r USING (round_id)
    LEFT JOIN round_endpoints e USING (round_id, tag)
)
SELECT *,
       coalesce(reported_cost_usd, estimated_cost_usd, 0) AS cost_usd,
       CASE WHEN reported_cost_usd IS NOT NULL THEN 'reported'
            WHEN estimated_cost_usd IS NOT NULL THEN 'estimated'
            ELSE 'unpriced' END AS cost_basis
FROM priced
"""

#: The sums every cost view shows (over v_attempt_costs rows).
_COST_SUMS = """
       count(*) AS requests,
       CAST(sum(prompt_tokens) AS BIGINT) AS prompt_tokens,
       CAST(sum(completion_tokens) AS BIGINT) AS completion_tokens,
       CAST(sum(tokens) AS BIGINT) AS tokens,
       sum(cost_usd) AS cost_usd,
       coalesce(sum(reported_cost_usd), 0) AS reported_usd,
       coalesce(sum(estimated_cost_usd), 0) AS estimated_usd,
       count(*) FILTER (WHERE cost_basis = 'estimated') AS estimated_requests,
       count(*) FILTER (WHERE cost_basis = 'unpriced') AS unpriced_requests,
       coalesce(sum(estimated_cost_usd), 0) / nullif(sum(cost_usd), 0) AS estimated_share"""

V_ENDPOINT_ROUND_COSTS = f"""
CREATE OR REPLACE VIEW v_endpoint_round_costs AS
SELECT round_id, round_ts, day, round_state, model, tag,{_COST_SUMS}
FROM v_attempt_costs
GROUP BY round_id, round_ts, day, round_state, model, tag
"""

V_ROUND_COSTS = f"""
CREATE OR REPLACE VIEW v_round_costs AS
SELECT round_id, round_ts, day, round_state, model, count(DISTINCT tag) AS endpoints,{_COST_SUMS}
FROM v_attempt_costs
GROUP BY round_id, round_ts, day, round_state, model
"""

V_DAILY_COSTS = f"""
CREATE OR REPLACE VIEW v_daily_costs AS
SELECT day, model, count(DISTINCT round_id) AS rounds, count(DISTINCT tag) AS endpoints,{_COST_SUMS}
FROM v_attempt_costs
GROUP BY day, model
"""

V_ENDPOINT_DAILY_COSTS = f"""
CREATE OR REPLACE VIEW v_endpoint_daily_costs AS
SELECT day, model, tag, count(DISTINCT round_id) AS rounds,{_COST_SUMS}
FROM v_attempt_costs
GROUP BY day, model, tag
"""

COST_VIEWS_SQL = "\n;\n".join(
    (V_ATTEMPT_COSTS, V_ENDPOINT_ROUND_COSTS, V_ROUND_COSTS, V_DAILY_COSTS, V_ENDPOINT_DAILY_COSTS)
)
