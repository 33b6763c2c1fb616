"""Configuration: one TOML file, every default in one place (docs/design.md "Configuration").

The file is `canary.toml` in the working directory by default (`--config` or `CANARY_CONFIG` override it). Keys
are flat, named as in docs/design.md. A relative path in the file (`db_path`, `publish_dir`, `exclusions_file`)
is read against the file's own directory (tasks/config/loading.py), `~` expanded. Env: OPENROUTER_BASE_URL
overrides `base_url`, CANARY_DB overrides `db_path`. Secrets (OPENROUTER_API_KEY, Slack tokens) are not config:
they are read by the I/O tasks.

`tasks.config` itself is the record (`CanaryConfig`, plain data: the pure core imports it) and every knob's
default: meaning, unit, default, why. Its modules read and check the file (the shell):

* schema        the file's schema: types, bounds, rules between keys (pydantic; its defaults are read from here)
* schema_lines  a pydantic `ValidationError` -> the one line an operator reads (also the routes and fleet files)
* loading       `load_config`: the file, the environment, `--set` overrides, validated
* preflight     `preflight(cfg)`: what a round needs from the file system, before `run`, `serve` and `demo`
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import timedelta
from importlib.resources import files

from tasks.core.redaction import strip_userinfo
from tasks.core.types import Mode

__all__ = [
    "ALL_LANGUAGES",
    "DEFAULT_CONFIRM_AFTER_MIN",
    "DEFAULT_DB_PATH",
    "DEFAULT_FAIL_ROUNDS",
    "DEFAULT_LADDER",
    "DEFAULT_LADDER_DECAY",
    "DEFAULT_MIN_HOSTS",
    "DEFAULT_PUBLISH_DIR",
    "DEFAULT_RESTORE_ROUNDS",
    "FILE_KEYS",
    "NEVER_HARD",
    "CanaryConfig",
    "public_base_url",
]

#: All 17 interface languages, in rotation order.
ALL_LANGUAGES: tuple[str, ...] = (
    "en", "es", "pt", "fr", "de", "it", "ru", "uk", "pl", "tr", "ja", "ko", "zh", "id", "hi", "ar", "vi",
)

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
#: A probe is only about latency when the model is slow to *start*; 10 s is deliberately generous.
DEFAULT_TTFT_S = 10.0
#: How long to wait for the TCP/TLS connection. Past it the attempt is `transport` (connect).
DEFAULT_CONNECT_TIMEOUT_S = 10.0
#: Longest silence between two bytes once the response has begun. Keep-alive comments reset it, so an
#: endpoint that sends only keep-alives is still cut by `probe_budget_s`.
DEFAULT_READ_TIMEOUT_S = 30.0
#: Hard wall-clock budget for one attempt, headers to [DONE]. Past it the stream is cut (`timeout`).
DEFAULT_PROBE_BUDGET_S = 60.0
#: Reply text kept per attempt (bytes of UTF-8). Longer replies are cut and flagged `text_truncated`.
DEFAULT_TEXT_CAP_BYTES = 16 * 1024
#: Probe requests in flight at once in one process, across every model of a cycle, not counting the parked ones
#: (still waiting for their first text 2 s after they started: slow starts, which hold a socket but not the loop;
#: at most 4x this many run at once, tasks/probe/worker.py). Requests mostly wait on sockets, so this bounds the
#: load on providers and on the canary's own CPU, not its threads. Measured on a quiet 2-core machine with the
#: simulator on the same cores (docs/operations.md, "Choosing `concurrency`"), 100 and 300 models x 15 endpoints
#: with about one 12 s slow start per model: 80 finishes them in 93 s and 230 s with the TTFT error at p95 22-39 ms,
#: within the 50 ms bound; 96 in 87-90 s and 216-227 s, but at p95 54-76 ms with 300 models.
DEFAULT_CONCURRENCY = 80
#: Models whose rounds probe at once in a cycle (`canary run`, `canary serve`). Each round's policy stays
#: sequential; more models in flight only overlap their probing. A round that waits only on its slowest few
#: endpoints steps aside for the next one and finishes beside it: at most twice this many rounds are alive
#: (tasks/orchestration/admission.py).
DEFAULT_MODELS_IN_FLIGHT = 32
#: Consecutive failing rounds before a suspension. One bad round is not enough.
DEFAULT_FAIL_ROUNDS = 2
#: Consecutive clean rounds that restore a suspended endpoint early.
DEFAULT_RESTORE_ROUNDS = 2
#: Routable endpoints (not excluded by any layer) that must remain after a suspension.
DEFAULT_MIN_HOSTS = 2
#: Suspension lengths by ladder step; the last one repeats.
DEFAULT_LADDER: tuple[timedelta, ...] = (timedelta(days=1), timedelta(days=3), timedelta(days=7))
#: Time since the last suspension ended, with no new one, after which the ladder restarts.
DEFAULT_LADDER_DECAY = timedelta(days=14)
#: Minutes between rounds (the deployment's interval).
DEFAULT_INTERVAL_MIN = 30
#: What the canary may spend on its own probes per day, USD; 0 = no budget. When the projected daily spend
#: (the last 24 hours', or the last rounds' x rounds per day, whichever is larger) exceeds it, rounds skip
#: language confirmations, then probe healthy endpoints every other round, and one `budget` alert is raised
#: per day (tasks/core/budget.py). Suspended and failing endpoints are always probed in full.
DEFAULT_BUDGET_USD_PER_DAY = 0.0
#: Minutes after a round with a hard failure until its confirmation round (0: none). A hard fault that starts
#: mid-interval is then suspended after about half an interval plus this delay instead of 30-60 minutes.
#: It is also the spacing of rounds that count (tasks/core/policy.py): two failing (or clean) rounds of an
#: endpoint are consecutive only when at least this far apart, so two rounds seconds apart (serve's start-up
#: cycle, then `canary run`) count as one; 0: any two rounds count.
DEFAULT_CONFIRM_AFTER_MIN = 5
#: Contracts whose failure is confirmed at once: wrong answers that hurt every user right away. The default
#: (None) is each contract's own word: its SPEC's `hard_by_default` (tasks/core/contracts/; today structured,
#: language, opening, refusal, tools). TTFT (slow, often load) and transport (never quality) wait for the next
#: full round.
DEFAULT_HARD_CONTRACTS: tuple[str, ...] | None = None
#: Contracts a config file may never make hard: the built-in ones whose SPEC says `may_be_hard=False`
#: (tests/unit/contracts/test_registry.py checks the two agree; tasks/core/confirm.py applies the SPECs).
NEVER_HARD: frozenset[str] = frozenset({"ttft"})
#: Seconds from a suspicion (docs/design.md "Suspicion": live failures or an OpenRouter uptime drop) to the
#: confirmation round of that endpoint. The watcher runs every third of it (`canary serve`), so a suspicion is
#: seen and its round started within it; 90 s keeps a hard fault's exposure near 8 minutes with live traffic.
DEFAULT_SUSPECT_CONFIRM_AFTER_S = 90
#: Seconds of live traffic the watcher reads per endpoint (never from before its previous suspicion).
DEFAULT_SUSPECT_WINDOW_S = 300
#: Counted live requests an endpoint needs in the window before its failure rate means anything: a blip of
#: a few failed requests on a quiet endpoint is noise. 429s are not counted (OpenRouter's uptime skips them).
DEFAULT_SUSPECT_MIN_REQUESTS = 20
#: Share of the window's counted live requests that failed (no first chunk in budget, cut stream, a 200
#: carrying an error, a protocol violation, 5xx, transport) at or above which the endpoint is suspected.
DEFAULT_SUSPECT_FAILURE_RATE = 0.5
#: How far above the same model's other endpoints ("peers") an endpoint's failure rate in a quality class of the
#: router's judged answers (tools, structured, empty, encoding) must be to suspect it: rate >= peers' pooled
#: rate + this margin (absolute, 0.3 = 30 points), besides `suspect_failure_rate`. A client's own bug (a schema
#: no model can meet) fails on every endpoint alike and suspects no one. At the minimum of 20 judged answers a
#: rate wobbles by about +/-0.11 (one standard deviation at 50 %), so 0.3 is about three of them: an endpoint of
#: a class every provider fails half the time clears it in fewer than 1 look in 150 (Binomial(20, 0.5) >= 16),
#: while a real fault (an endpoint failing most answers, its peers a few) clears it by far. docs/design.md
#: "Suspicion" says what stands in for the peers when they have no evidence.
DEFAULT_SUSPECT_PEER_MARGIN = 0.3
#: Percentage points OpenRouter's most recent uptime (5 min, else 30 min) must be below its day's uptime to
#: be a suspicion (0: the uptime never triggers). Healthy endpoints wobble by a few points; a dead one drops
#: by tens.
DEFAULT_SUSPECT_UPTIME_DROP = 20.0
#: Seconds after a suspicion of an endpoint before it can be suspected again: a lasting blip costs at most one
#: confirmation round per cooldown (the extra probe spend), and a real fault is confirmed by its own rounds.
DEFAULT_SUSPECT_COOLDOWN_S = 900
#: Where the watcher reads the router's live counts: "db" reads the `live_requests` table the router writes into
#: this database (`events_db` in the routes file: one router on this host); "prometheus" reads the counters
#: every router replica exports (`canary_router_live_*_total`), summed over the replicas, from `prometheus_url`
#: (a fleet of routers on other hosts). The same suspicion rules apply to both (docs/operations.md, "Production").
DEFAULT_LIVE_SOURCE = "db"
LIVE_SOURCES: tuple[str, ...] = ("db", "prometheus")
#: The Prometheus that scrapes the routers (its HTTP API: `/api/v1/query`), read when `live_source = "prometheus"`.
#: Its default port on this host; no credentials in the URL.
DEFAULT_PROMETHEUS_URL = "http://127.0.0.1:9090"
DEFAULT_DB_PATH = "canary.duckdb"
#: The reviewed built-in layer of the ignore list (docs/design.md "Exclusions"): `tasks/exclusions.toml`, shipped
#: in the package, so a wheel installed anywhere reads the same reviewed entries as a checkout. A deployment that
#: reviews its own entries names its file here; a named file that is missing is an error, never an empty layer.
DEFAULT_EXCLUSIONS_FILE = str(files("tasks") / "exclusions.toml")
#: Where the published ignore lists (one JSON per model) are written.
DEFAULT_PUBLISH_DIR = "published"
#: Where this checkout's files are browsable (e.g. https://git.example/ops/provider-canary/blob/main/): each
#: Slack alert's runbook link (a section of docs/operations.md) is then absolute. "" (the default): the alert
#: names the file and anchor instead (tasks/core/render/links.py).
DEFAULT_RUNBOOK_BASE_URL = ""
#: The canary's Grafana dashboard (ops/grafana/canary-dashboard.json, imported), e.g.
#: https://grafana.example/d/provider-canary: each Slack alert links it with its model chosen. "": no link.
DEFAULT_GRAFANA_URL = ""


@dataclass(frozen=True)
class CanaryConfig:
    models: tuple[str, ...] = ("meta-llama/llama-3.3-70b-instruct",)
    mode: Mode = Mode.OBSERVE
    base_url: str = DEFAULT_BASE_URL
    db_path: str = DEFAULT_DB_PATH
    publish_dir: str = DEFAULT_PUBLISH_DIR
    exclusions_file: str = DEFAULT_EXCLUSIONS_FILE
    runbook_base_url: str = DEFAULT_RUNBOOK_BASE_URL
    grafana_url: str = DEFAULT_GRAFANA_URL
    refusal_controls: tuple[str, ...] = ()
    languages: tuple[str, ...] = ALL_LANGUAGES
    ttft_s: float = DEFAULT_TTFT_S
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S
    probe_budget_s: float = DEFAULT_PROBE_BUDGET_S
    text_cap_bytes: int = DEFAULT_TEXT_CAP_BYTES
    concurrency: int = DEFAULT_CONCURRENCY
    models_in_flight: int = DEFAULT_MODELS_IN_FLIGHT
    fail_rounds: int = DEFAULT_FAIL_ROUNDS
    restore_rounds: int = DEFAULT_RESTORE_ROUNDS
    min_hosts: int = DEFAULT_MIN_HOSTS
    ladder: tuple[timedelta, ...] = DEFAULT_LADDER
    ladder_decay: timedelta = DEFAULT_LADDER_DECAY
    interval_min: int = DEFAULT_INTERVAL_MIN
    budget_usd_per_day: float = DEFAULT_BUDGET_USD_PER_DAY
    confirm_after_min: int = DEFAULT_CONFIRM_AFTER_MIN
    hard_contracts: tuple[str, ...] | None = DEFAULT_HARD_CONTRACTS
    suspect_confirm_after_s: int = DEFAULT_SUSPECT_CONFIRM_AFTER_S
    suspect_window_s: int = DEFAULT_SUSPECT_WINDOW_S
    suspect_min_requests: int = DEFAULT_SUSPECT_MIN_REQUESTS
    suspect_failure_rate: float = DEFAULT_SUSPECT_FAILURE_RATE
    suspect_peer_margin: float = DEFAULT_SUSPECT_PEER_MARGIN
    suspect_uptime_drop: float = DEFAULT_SUSPECT_UPTIME_DROP
    suspect_cooldown_s: int = DEFAULT_SUSPECT_COOLDOWN_S
    live_source: str = DEFAULT_LIVE_SOURCE
    prometheus_url: str = DEFAULT_PROMETHEUS_URL
    #: Not a file key: a per-run mode (`canary run --mode`, a deployment run's `mode` parameter), set by
    #: `resolve_config`. That run decides in it over the states of the stored mode (the admin's `canary mode`,
    #: else `mode`), and saves them back in the stored mode: not a mode switch (tasks/core/settle.py `run_modes`).
    run_mode: Mode | None = field(default=None, metadata={"per_run": True})


#: The keys that name a file or a directory: relative in canary.toml, they are read against the file's directory.
PATH_KEYS: tuple[str, ...] = ("db_path", "publish_dir", "exclusions_file")

#: The keys a config file (and `--set`) may hold: every field but the per-run ones.
FILE_KEYS: frozenset[str] = frozenset(f.name for f in fields(CanaryConfig) if not f.metadata.get("per_run"))


def public_base_url(cfg: CanaryConfig) -> str:
    """`cfg.base_url` without userinfo: what a flow-run parameter, a log line or an error message may show."""
    return strip_userinfo(cfg.base_url)
