"""The canary's work, one room per concern (docs/design.md "Architecture"; tests/unit/test_import_graph.py holds
the layers, lowest first):

* core           the pure core: vocabulary, contracts and their judge, the policy, settle, replay, renderers, the wire
* config         the configuration record (`tasks.config`, pure) and its schema, loading and preflight
* errors         the operator's errors (plain data)
* runtime        process plumbing: the clock, secrets and redaction, liveness, failpoints, in-process servers
* store          the DuckDB store: the only module that imports duckdb
* spool          files beside the database that keep a round's work when the database cannot take it
* prefect_api    the Prefect API a command's flow runs talk to: the configured one, or a private server
* probe          one pinned, streamed request per endpoint and contract, on the probe worker's event loop
* alerts         the outbox delivered to Slack, paced and threaded; where alerts go
* ignore_list    the ignore list published per model, served over HTTP, edited from the Prefect UI
* at             `canary at`: what the canary saw around the time a user reported a change
* round          one round of one model: its steps, wired once for both engines (their order: flows/round.py)
* orchestration  what running cycles asks of Prefect and the machine: round slots, the cycle lock, automations
* watch          the watcher: every model looked at every `watch_interval`, suspicions confirmed by a round
* metrics        the Prometheus exporter
"""

__all__ = [
    "alerts",
    "at",
    "config",
    "core",
    "errors",
    "ignore_list",
    "metrics",
    "orchestration",
    "prefect_api",
    "probe",
    "round",
    "runtime",
    "spool",
    "store",
    "watch",
]
