"""The Grafana dashboard, as code: built with Grafana's own Python builder (grafana-foundation-sdk, a dev extra).

    .venv/bin/python ops/build.py            # writes ops/grafana/canary-dashboard.json (and the docs' tables)
    .venv/bin/python ops/build.py --check    # exit 1 when a committed file differs from what the code builds

Conventions: one unit per panel (counts, seconds, USD and ratios never share an axis); a table is an instant
query in table format (one row per series, its labels as columns, `Time` hidden); every query reads the series
of `canary metrics` (job canary) or of a router's `GET /metrics`, and tests/e2e/test_operator_stack.py runs each
one against a real Prometheus scraping both (each must return data).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import prometheus, stat, statushistory, table, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

DATASOURCE = model.DataSourceRef(type_val="prometheus", uid="${datasource}")
M = 'model=~"$model"'
#: Histogram series of the router only: the canary's own probe histogram of the same GenAI name has no route.
ROUTED = 'route!=""'
ANNOTATION = 'changes(canary_endpoint_excluded{layer="canary"}[5m]) > 0'


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""


def _target(q: Query, ref: str, instant: bool = False) -> prometheus.Dataquery:
    target = prometheus.Dataquery().expr(q.expr).ref_id(ref).datasource(DATASOURCE)
    if instant:
        return target.instant().format(PromQueryFormat.TABLE)
    return target.range().legend_format(q.legend or "__auto")


def _series(title: str, unit: str, queries: list[Query], description: str, w: int = 12) -> timeseries.Panel:
    panel = (timeseries.Panel().title(title).description(description).unit(unit).datasource(DATASOURCE)
             .height(8).span(w))
    for i, q in enumerate(queries):
        panel = panel.with_target(_target(q, "ABCDEFGH"[i]))
    return panel


def _table(title: str, unit: str, q: Query, description: str, hide: list[str], w: int = 12) -> table.Panel:
    """An instant query in table format: one row per series, its labels as columns."""
    organize = model.DataTransformerConfig(
        id_val="organize", options={"excludeByName": {name: True for name in ["Time", "__name__", *hide]}})
    return (table.Panel().title(title).description(description).unit(unit).datasource(DATASOURCE).height(8)
            .span(w).with_target(_target(q, "A", instant=True)).with_transformation(organize))


def _increase(title: str, counter: str, by: str, window: str, description: str, unit: str = "short"
              ) -> timeseries.Panel:
    """A counter's increase over `window`, summed by one label, for the chosen models."""
    return _series(title, unit, [Query(f"sum by ({by}) (increase({counter}{{{M}}}[{window}]))", f"{{{{{by}}}}}")],
                   description)


def _mapped(values: dict[str, tuple[str, str]]) -> list[model.ValueMapping]:
    return [model.ValueMap(options={v: model.ValueMappingResult(text=text, color=color, index=i)
                                    for i, (v, (text, color)) in enumerate(values.items())})]


def _status_history() -> statushistory.Panel:
    """Endpoint x contract: one row per (endpoint, contract), pass or fail at each round."""
    q = Query(f"canary_probe_success{{{M}}}", "{{provider_tag}} {{contract}}")
    return (statushistory.Panel().title("Endpoint x contract, round by round").description(
        "1 pass, 0 fail or transport; a gap is an inconclusive contract or no round (canary_probe_success).")
        .datasource(DATASOURCE).height(10).span(24).with_target(_target(q, "A"))
        .mappings(_mapped({"1": ("pass", "green"), "0": ("fail", "red")})))


def canary_panels() -> list[object]:
    return [
        dash.Row("The canary"),
        stat.Panel().title("Routable endpoints per model").description(
            "Endpoints of the latest round that no layer excludes; the capacity floor is min_hosts.")
        .unit("short").datasource(DATASOURCE).height(6).span(12)
        .with_target(_target(Query(f"canary_routable_endpoints{{{M}}}", "{{model}}"), "A")),
        _series("Exclusions by layer", "short", [Query(f"sum by (layer) (canary_endpoint_excluded{{{M}}})",
                                                       "{{layer}}")],
                "Endpoints kept out of traffic by each layer (builtin, operational, canary).", w=12),
        _table("Suspended endpoints (until)", "dateTimeAsIso",
               Query(f'canary_endpoint_suspension_end_timestamp_seconds{{{M}, mode="enforce"}} * 1000'),
               "Enforce-mode suspensions and when each ends.", ["job", "instance", "mode"]),
        _table("Last round: contracts that did not pass", "short",
               Query(f'canary_probe_outcome{{{M}, outcome=~"fail|transport"}}'),
               "The last round's failing and transport contracts with their bounded reason.",
               ["job", "instance", "Value"]),
        _status_history(),
        _series("TTFT p95 per endpoint (6 h)", "s", [Query(
            "histogram_quantile(0.95, sum by (gen_ai_request_model, provider_tag, le) (increase("
            'gen_ai_client_operation_time_to_first_chunk_seconds_bucket{gen_ai_request_model=~"$model", '
            'route=""}[6h])))', "{{gen_ai_request_model}} {{provider_tag}}")],
            "From the probes' GenAI first-chunk histogram."),
        _series("Probe duration p95 by error type (6 h)", "s", [Query(
            "histogram_quantile(0.95, sum by (error_type, le) (increase("
            'gen_ai_client_operation_duration_seconds_bucket{gen_ai_request_model=~"$model", route=""}[6h])))',
            "{{error_type}}")], "Whole probe requests (the router's histogram of the same name has a route "
            "label); error_type empty when the exchange completed."),
        _increase("Contract outcomes per hour", "canary_probe_outcomes_total", "outcome", "1h",
                  "pass, fail, transport, inconclusive: mostly transport or inconclusive means a blind canary."),
        _increase("Failures per hour, by reason", "canary_probe_failures_total", "reason", "1h",
                  "fail and transport outcomes by bounded reason."),
        _increase("Spend per model (USD per day)", "canary_spend_usd_total", "model", "1d",
                  "What probes cost over the last 24 h (budget_usd_per_day: canary_config_budget_usd_per_day).",
                  unit="currencyUSD"),
        _increase("Rounds per hour, by final status", "canary_rounds_total", "status", "1h",
                  "complete, crashed, failed: a round counts once it ended."),
        _series("Time since the last complete round", "s", [Query(
            f"time() - max by (model) (canary_round_last_success_timestamp_seconds{{{M}}})", "{{model}}")],
            "CanarySilent fires past two round intervals."),
        _series("Outbox and suspicions", "short", [
            Query("canary_alerts_pending", "alerts pending"),
            Query("canary_alerts_failed_total", "alerts refused for good"),
            Query(f"sum(canary_suspicions_open{{{M}}})", "open suspicions"),
            Query(f"sum(canary_rounds_running{{{M}}})", "rounds running")],
            "Counts: alerts not yet delivered, refused by Slack, suspicions waiting for their round, rounds "
            "in flight."),
    ]


def router_panels() -> list[object]:
    return [
        dash.Row("The router"),
        _series("Requests per second, by route and outcome", "reqps", [Query(
            "sum by (route, outcome) (rate(canary_router_requests_total[5m]))", "{{route}} {{outcome}}")],
            "served by a tier, or all_failed (a 503 to the user)."),
        _series("Requests where every tier failed (share)", "percentunit", [Query(
            'sum by (route) (rate(canary_router_requests_total{outcome="all_failed"}[5m])) / '
            "sum by (route) (rate(canary_router_requests_total[5m]))", "{{route}}")],
            "CanaryRouterAllTiersFailing fires above 5 % for 5 min."),
        _series("Failovers per second, by tier and reason", "reqps", [Query(
            "sum by (route, tier, reason) (rate(canary_router_failovers_total[5m]))",
            "{{route}} tier {{tier}} {{reason}}")], "A tier given up before its first content chunk."),
        _series("Streams failed after the first chunk, per second", "reqps", [Query(
            "sum by (route, server, model) (rate(canary_router_stream_failures_after_commit_total[5m]))",
            "{{route}} {{server}} {{model}}")], "Replies cut mid-way: no failover is possible after the commit."),
        _series("First chunk p95 per tier", "s", [Query(
            "histogram_quantile(0.95, sum by (route, tier, le) (rate("
            f"gen_ai_client_operation_time_to_first_chunk_seconds_bucket{{{ROUTED}}}[5m])))",
            "{{route}} tier {{tier}}")], "From sending upstream to the first content chunk (the commit point)."),
        _series("Ignore-list age", "s", [Query("canary_router_ignore_list_age_seconds", "__auto")],
                "How old each ignore list the router reads is; CanaryRouterIgnoreListStale fires past two "
                "round intervals."),
    ]


def build() -> model.Dashboard:
    model_var = (dash.QueryVariable("model").label("model").datasource(DATASOURCE)
                 .query("label_values(canary_model_configured, model)").multi(True).include_all(True)
                 .all_value(".*").refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED))
    suspensions = (dash.AnnotationQuery().name("Suspensions").enable(True).icon_color("red").datasource(DATASOURCE)
                   .expr(ANNOTATION))
    board = (dash.Dashboard("Provider canary").uid("provider-canary").tags(["canary", "openrouter"])
             .timezone("utc").refresh("1m").time("now-7d", "now")
             .with_variable(dash.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
             .with_variable(model_var).annotation(suspensions))
    for panel in [*canary_panels(), *router_panels()]:
        board = board.with_row(panel) if isinstance(panel, dash.Row) else board.with_panel(panel)  # type: ignore
    return board.build()


def dashboard_json() -> str:
    return json.dumps(build(), cls=JSONEncoder, sort_keys=True, indent=2) + "\n"
