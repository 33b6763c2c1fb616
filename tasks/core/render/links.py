"""The links an alert carries (pure): the round's flow run in the Prefect UI, the Grafana dashboard, the runbook.

    links = AlertLinks(flow_run_url=..., grafana_url=cfg.grafana_url, runbook_base_url=cfg.runbook_base_url)
    alert = with_links(alert, links)        # one context line: Flow run · Dashboard · Runbook

The runbook of an alert kind is a section of docs/operations.md (`RUNBOOKS`: the generated runbook of the
Prometheus alert that means the same, else section 5). With `runbook_base_url` (where the checkout's files are
browsable, e.g. https://git.example/ops/provider-canary/blob/main/) the link is absolute; without it the alert
names the file and anchor. The flow-run link exists only where the round ran under a Prefect UI (the shell
passes its URL); the dashboard link only when `grafana_url` is set (the model is chosen in it: `var-model`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from urllib.parse import quote

from tasks.core.render.slack import parse_blocks
from tasks.core.types import Alert

#: The Block Kit block id of the links line: an alert gets it once (settling a round again adds nothing).
LINKS_BLOCK_ID = "canary-links"
RUNBOOK_FILE = "docs/operations.md"
#: Anchor of the section that explains every alert kind (docs/operations.md "5. What each alert means").
DEFAULT_RUNBOOK = "5-what-each-alert-means"
#: Alert kind -> the docs/operations.md anchor of its runbook (the Prometheus alert's, which says what to do).
RUNBOOKS: Mapping[str, str] = {
    "suspend": "canaryendpointsuspended",
    "would_suspend": "canaryendpointsuspended",
    "escalate": "canaryendpointsuspended",
    "would_escalate": "canaryendpointsuspended",
    "floor_blocked": "canarymodelatcapacityfloor",
    "probe_weak": "canaryrefusalprobeweak",
    "deadman": "canarysilent",
    "budget": "canaryspendabovebudget",
    "delivery_failed": "canaryalertsrefused",
}


@dataclass(frozen=True, slots=True)
class AlertLinks:
    flow_run_url: str | None = None  # the Prefect UI page of the round's flow run
    grafana_url: str | None = None  # the canary's dashboard
    runbook_base_url: str | None = None  # where docs/operations.md is browsable (ends with "/")


def runbook_url(kind: str, base: str | None) -> str:
    """The runbook of `kind`: absolute under `base`, else the file and anchor in the checkout."""
    path = f"{RUNBOOK_FILE}#{RUNBOOKS.get(kind, DEFAULT_RUNBOOK)}"
    if not base:
        return path
    return (base if base.endswith("/") else base + "/") + path


def dashboard_url(grafana_url: str, model: str) -> str:
    """The dashboard with the model chosen (its `model` variable); a list of models opens it unfiltered."""
    if "," in model or not model:
        return grafana_url
    return f"{grafana_url}{'&' if '?' in grafana_url else '?'}var-model={quote(model, safe='')}"


def _link(url: str, label: str) -> str:
    """A Slack mrkdwn link: the characters that would end it (`|`, `>`) or break it are percent-encoded."""
    safe = quote(url, safe=":/?#[]@!$'()*+,;=%~-._&").replace("&", "&amp;")
    return f"<{safe}|{label}>"


def links_line(links: AlertLinks, kind: str, model: str) -> str:
    """`Flow run · Dashboard · Runbook` as Slack links (the runbook as a path when there is no base URL)."""
    parts = []
    if links.flow_run_url:
        parts.append(_link(links.flow_run_url, "Flow run"))
    if links.grafana_url:
        parts.append(_link(dashboard_url(links.grafana_url, model), "Dashboard"))
    runbook = runbook_url(kind, links.runbook_base_url)
    parts.append(_link(runbook, "Runbook") if links.runbook_base_url else f"Runbook: `{runbook}`")
    return " · ".join(parts)


def with_links(alert: Alert, links: AlertLinks) -> Alert:
    """`alert` with its links line (a context block and a line of its text), once."""
    blocks = parse_blocks(alert.blocks_json)
    if any(isinstance(b, dict) and b.get("block_id") == LINKS_BLOCK_ID for b in blocks):
        return alert
    line = links_line(links, alert.kind, alert.model)
    blocks.append({"type": "context", "block_id": LINKS_BLOCK_ID, "elements": [{"type": "mrkdwn", "text": line}]})
    return replace(alert, text=f"{alert.text}\n{line}",
                   blocks_json=json.dumps(blocks, ensure_ascii=False, separators=(",", ":")))
