"""The dead-man automation as data: its window, its message, the Slack request its action makes, and the
prefect.yaml step that applies it. tests/e2e/test_prefect_postgres.py has it fire on a real server."""

from __future__ import annotations

import json
import shlex
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from tasks.alerts.slack_settings import SlackSettings
from tasks.core.silence import automation_name, silence_text, silence_window
from tasks.orchestration.deadman_automation import SLACK_API_URL, silence_trigger, slack_request

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("interval", "window"), [
    (timedelta(minutes=30), timedelta(minutes=60)),  # the default interval_min: an hour
    (timedelta(minutes=7), timedelta(minutes=14)),
    (timedelta(seconds=15), timedelta(seconds=30)),  # a test's CANARY_SERVE_INTERVAL_S
    (timedelta(seconds=2), timedelta(seconds=10)),  # Prefect's floor for a Proactive window
], ids=["30min", "7min", "15s", "2s-floor"])
def test_the_window_is_two_intervals(interval: timedelta, window: timedelta) -> None:
    assert silence_window(interval) == window


def test_the_window_needs_an_interval() -> None:
    with pytest.raises(ValueError, match="interval must be positive"):
        silence_window(timedelta(0))


def test_the_message_says_what_is_silent_for_how_long_and_what_to_do() -> None:
    text = silence_text("canary-cycle-shard-a", timedelta(minutes=60))
    assert "no run of `canary-cycle-shard-a` completed in the last 60 min (2 round intervals)" in text
    assert "prefect automation pause canary-cycle-shard-a-silent" in text and "`canary run`" in text
    assert automation_name("canary-cycle") == "canary-cycle-silent"
    assert "30 s" in silence_text("canary-cycle", timedelta(seconds=30))


def test_the_whole_message_as_slack_shows_it() -> None:
    assert silence_text("canary-cycle", timedelta(minutes=60)) == (
        ":rotating_light: *The canary is silent:* no run of `canary-cycle` completed in the last 60 min (2 round "
        "intervals). Nothing of it is probed: no suspension starts or ends early and its ignore lists are not "
        "refreshed.\nPrefect's server sent this itself, so it arrives with `canary serve` (or the work pool's "
        "worker) down. *What to do:* check that process and the Prefect server (`prefect flow-run ls --flow-name "
        "canary-cycle`), then run one cycle by hand (`canary run`). This repeats every window until a cycle "
        "completes; to stop it while you work, `prefect automation pause canary-cycle-silent`.")


def test_the_trigger_is_proactive_on_completed_runs_of_the_deployment() -> None:
    from prefect.events.schemas.automations import Posture

    trigger = silence_trigger("canary-cycle", timedelta(minutes=60))
    assert trigger.posture == Posture.Proactive and trigger.threshold == 1
    assert trigger.expect == {"prefect.flow-run.Completed"} and trigger.within == timedelta(minutes=60)
    assert trigger.model_dump(mode="json")["match_related"] == {
        "prefect.resource.role": "deployment", "prefect.resource.name": "canary-cycle"}


def test_the_slack_request_of_each_transport() -> None:
    web = SlackSettings.from_env({"SLACK_BOT_TOKEN": "xoxb-unit-token-123", "SLACK_CHANNEL": "C0CANARY"})
    url, headers, body = slack_request(web, "hello") or ("", {}, "")
    assert url == f"{SLACK_API_URL}chat.postMessage"
    assert headers == {"Authorization": "Bearer xoxb-unit-token-123", "Content-Type": "application/json; charset=utf-8"}
    assert json.loads(body) == {"channel": "C0CANARY", "text": "hello", "unfurl_links": False}
    local = SlackSettings.from_env({"SLACK_BOT_TOKEN": "xoxb-unit-token-123", "SLACK_CHANNEL": "C0CANARY",
                                    "SLACK_API_URL": "http://127.0.0.1:9/api"})
    assert (slack_request(local, "x") or ("",))[0] == "http://127.0.0.1:9/api/chat.postMessage"
    hook = SlackSettings.from_env({"SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T1/B2/secretpart"})
    url, headers, body = slack_request(hook, "hello") or ("", {}, "")
    assert url == "https://hooks.slack.com/services/T1/B2/secretpart" and "Authorization" not in headers
    assert json.loads(body) == {"text": "hello"}
    assert slack_request(SlackSettings.from_env({}), "hello") is None


def test_prefect_yaml_applies_the_automation_for_the_cycle_deployment() -> None:
    """The canary-cycle deployment's build step runs `canary deadman-automation` for that deployment, with the
    config the deployment uses."""
    from typer.testing import CliRunner

    from provider_canary.cli.main import app

    spec = yaml.safe_load((REPO / "prefect.yaml").read_text(encoding="utf-8"))
    cycle = next(d for d in spec["deployments"] if d["name"] == "canary-cycle")
    [step] = cycle["build"]
    argv = shlex.split(step["prefect.deployments.steps.run_shell_script"]["script"])
    assert argv[:2] == ["canary", "deadman-automation"]
    opts = dict(zip(argv[2::2], argv[3::2], strict=True))
    assert opts == {"--config": cycle["parameters"]["config_path"], "--deployment": "canary-cycle"}
    assert CliRunner().invoke(app, [*argv[1:], "--help"]).exit_code == 0


def test_the_command_without_a_prefect_api_is_one_line(tmp_path: Path) -> None:
    """`canary deadman-automation` needs the server whose automation it makes: no PREFECT_API_URL is one line,
    exit 2 (as a `prefect deploy` build step, that line is what the failed deploy shows)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "CANARY_"))}
    env["PREFECT_HOME"] = str(tmp_path)  # no profile with an API URL
    out = subprocess.run([sys.executable, "-c", "from provider_canary.cli.main import main; main()",
                          "deadman-automation",
                          "--config", str(REPO / "canary.toml")], env=env, cwd=REPO, capture_output=True,
                         text=True, timeout=60)
    assert (out.returncode, out.stderr) == (2, "canary: deadman-automation needs the Prefect server's API: "
                                                "export PREFECT_API_URL\n")
