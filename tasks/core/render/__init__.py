"""Pure renderers (no prefect, httpx, duckdb or slack_sdk): Slack alerts and the round's Markdown artifact.

* text       clean / mrkdwn / code / cell: text hygiene and the `canary ...` commands
* slack      Alert records with Block Kit blocks; a policy decision's sections
* decision_groups  a round's decisions as one message per model, later events in their suspension's thread
* links      what an alert links to: the round's flow run, the dashboard, the runbook
* round_alerts  probe_weak, pin_mismatch, deadman alerts; alerts_for_round (what the flow calls)
* fault_alerts  store_unreadable, spool_unwritable (sent straight to Slack by tasks/alerts/store_alarm.py)
* markdown   the round's Markdown artifact
* status     `canary status` as text (what traffic avoids first), from its JSON report
"""

from tasks.core.render.markdown import (
    describe_changes,
    render_failed_round_markdown,
    render_round_markdown,
    round_status,
)
from tasks.core.render.round_alerts import (
    alerts_for_round,
    evidence_from_round,
    render_deadman_alerts,
    render_pin_mismatch_alerts,
    render_probe_weak_alert,
    silence_alerts,
)
from tasks.core.render.slack import (
    EvidenceLine,
    build_alert,
    digest,
    render_decision_alert,
)
from tasks.core.render.text import clean

__all__ = [
    "EvidenceLine",
    "alerts_for_round",
    "build_alert",
    "clean",
    "describe_changes",
    "digest",
    "evidence_from_round",
    "render_deadman_alerts",
    "render_decision_alert",
    "render_pin_mismatch_alerts",
    "render_probe_weak_alert",
    "silence_alerts",
    "render_failed_round_markdown",
    "render_round_markdown",
    "round_status",
]
