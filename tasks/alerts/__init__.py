"""Alerts (shell): the outbox delivered to Slack, paced and threaded, and where alerts go.

* delivery        `deliver_outbox`: the outbox to Slack with no DuckDB lock held during a post
* delivery_loop   one delivery loop per Slack channel in a process, paced to Slack's limit
* threads         threads at delivery: where each follow-up goes, each parent's update
* trail           which alert a delivery process is posting, in a small file beside the database
* slack_client    the Slack transports (web, webhook, log): the only slack_sdk importer
* slack_settings  the Slack settings read from the environment or Prefect Secret blocks
* store_alarm     when the database cannot be used, tell an admin anyway
* links           what a round's alerts link to: its flow run in the Prefect UI, Grafana
* route           where alerts go, said at `canary serve`'s start and in `canary status`
"""

__all__ = [
    "delivery",
    "delivery_loop",
    "threads",
    "trail",
    "slack_client",
    "slack_settings",
    "store_alarm",
    "links",
    "route",
]
