"""What a round's alerts link to, read from where the round runs (shell): its flow run's page in the Prefect UI
(the UI URL Prefect derives from the configured API URL), and the config's `grafana_url` and `runbook_base_url`
(the pure rendering: tasks/core/render/links.py)."""

from __future__ import annotations

from tasks.config import CanaryConfig
from tasks.core.render.links import AlertLinks


def flow_run_url(flow_run_id: str | None) -> str | None:
    """The flow run's page in the Prefect UI, or None: no run, or no UI (a private server runs without one)."""
    if not flow_run_id:
        return None
    from prefect.utilities.urls import url_for

    try:
        return url_for("flow-run", obj_id=flow_run_id)
    except Exception:  # a malformed id or setting: the alert goes without the link, never without itself
        return None


def round_links(cfg: CanaryConfig, flow_run_id: str | None = None) -> AlertLinks:
    return AlertLinks(flow_run_url(flow_run_id), cfg.grafana_url or None, cfg.runbook_base_url or None)
