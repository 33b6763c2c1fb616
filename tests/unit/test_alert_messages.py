"""A round's decisions as Slack messages (tasks/core/render/decision_groups.py) and the links every alert carries
(tasks/core/render/links.py): one message per model and round, a suspension's later events in its thread, the
parent rewritten to say how it ended, runbook links absolute from `runbook_base_url`."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tasks.core.render.decision_groups import decision_messages, ended_parent, round_messages
from tasks.core.render.links import RUNBOOKS, AlertLinks, links_line, runbook_url, with_links
from tasks.core.types import Action, Decision, Mode
from tests.support.secrets_registry import fresh_secret_registry  # noqa: F401 (autouse)

pytestmark = pytest.mark.unit

T = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
M = "acme/model"
ROOT = Path(__file__).resolve().parents[2]


def d(action: Action, tag: str, at: datetime = T, **kw: object) -> Decision:
    mode = Mode.OBSERVE if action.value.startswith("would_") else Mode.ENFORCE
    fields: dict = dict(at=at, model=M, tag=tag, action=action, mode=mode, ladder_step=1, until=at + timedelta(days=1),
                        reason="failed 2 consecutive rounds", evidence_round_ids=("r1", "r2"), round_id="r2")
    fields.update(kw)
    return Decision(**fields)


def test_five_suspensions_of_one_round_are_one_message_whose_thread_follows_each() -> None:
    tags = [f"p{i}" for i in range(5)]
    out = round_messages(M, "r2", [d(Action.SUSPEND, t) for t in tags], {})
    [alert] = out.alerts
    assert (alert.key, alert.kind, alert.tag, alert.thread_key) == ("decisions|r2", "suspend", None, None)
    assert alert.text.startswith(f"{M}: 5 suspended\n")
    assert all(f"`{t}` on `{M}` is out of traffic" in alert.text for t in tags)
    assert all(f"canary lift {t} --model {M}" in alert.text for t in tags)  # what to do, per endpoint
    assert set(out.threads.values()) == {"decisions|r2"} and len(out.threads) == 5


def test_one_decision_reads_as_it_always_did() -> None:
    [alert] = round_messages(M, "r2", [d(Action.SUSPEND, "p0")], {}).alerts
    assert alert.text.startswith(f"Suspended: p0 on {M}\n") and (alert.kind, alert.tag) == ("suspend", "p0")


def test_later_events_go_in_their_suspensions_threads_and_new_ones_in_the_rounds_message() -> None:
    threads = {"a": "decisions|r1", "b": "decisions|r0"}
    at = T + timedelta(hours=2)
    decisions = [d(Action.RESTORE, "a", at), d(Action.EXPIRE, "b", at), d(Action.SUSPEND, "c", at),
                 d(Action.FLOOR_BLOCKED, "e", at)]
    out = round_messages(M, "r5", decisions, threads)
    by_key = {a.key: a for a in out.alerts}
    assert set(by_key) == {"decisions|r5", "thread|decisions|r1|r5", "thread|decisions|r0|r5"}
    top = by_key["decisions|r5"]
    assert top.thread_key is None and top.kind == "decisions" and "1 suspended, 1 held back by the floor" in top.text
    restored = by_key["thread|decisions|r1|r5"]
    assert (restored.thread_key, restored.kind, restored.tag) == ("decisions|r1", "restore", "a")
    assert by_key["thread|decisions|r0|r5"].kind == "expire"
    # the new suspension is followed in the round's message; a floor block opens nothing
    assert out.threads == {decisions[0].decision_id: "decisions|r1", decisions[1].decision_id: "decisions|r0",
                           decisions[2].decision_id: "decisions|r5"}


def test_a_suspension_renewed_at_its_expiry_is_an_escalation_in_the_same_thread() -> None:
    at = T + timedelta(days=1)
    again = [d(Action.EXPIRE, "a", at), d(Action.SUSPEND, "a", at, ladder_step=2, until=at + timedelta(days=3))]
    out = round_messages(M, "r9", again, {"a": "decisions|r1"})
    [alert] = out.alerts
    assert (alert.kind, alert.thread_key) == ("escalate", "decisions|r1")
    assert alert.text.startswith(f"Suspended again: a on {M}\n") and "(ladder step 2)" in alert.text
    assert set(out.threads.values()) == {"decisions|r1"}  # its restore will go in the same thread


def test_an_admin_lift_goes_in_the_thread_or_alone() -> None:
    lift = d(Action.LIFT, "a", actor="alice", round_id=None)
    [threaded] = decision_messages([lift], {"a": "decisions|r1"}).alerts
    assert (threaded.key, threaded.thread_key) == (f"thread|decisions|r1|{lift.decision_id}", "decisions|r1")
    [alone] = decision_messages([lift], {}).alerts
    assert (alone.key, alone.thread_key) == (lift.decision_id, None)


def test_the_parent_is_rewritten_to_say_how_each_suspension_ended() -> None:
    [parent] = round_messages(M, "r1", [d(Action.SUSPEND, "a"), d(Action.SUSPEND, "b")], {}).alerts
    ends = [round_messages(M, "r3", [d(Action.RESTORE, "a", T + timedelta(hours=1))], {"a": parent.key}).alerts[0],
            round_messages(M, "r4", [d(Action.EXPIRE, "b", T + timedelta(days=1))], {"b": parent.key}).alerts[0]]
    updated = ended_parent(parent, list(reversed(ends)))
    blocks = json.loads(updated.blocks_json)
    assert blocks[0] == json.loads(parent.blocks_json)[0]  # the header stays first
    since = blocks[1]["text"]["text"]
    assert since.splitlines() == ["*Since then (in the thread):*",
                                  f"• 2026-11-01 11:00 UTC: Restored: a on {M}",
                                  f"• 2026-11-02 10:00 UTC: Suspension expired: b on {M}"]
    assert since in updated.text and updated.text.startswith(f"{M}: 2 suspended\n")
    assert blocks[2:] == json.loads(parent.blocks_json)[1:]  # the rest as first posted
    again = ended_parent(updated, ends)  # rewritten, not stacked
    assert json.loads(again.blocks_json) == blocks
    assert ended_parent(parent, []) == parent


def test_links_are_absolute_from_the_runbook_base_url_and_added_once() -> None:
    [alert] = round_messages(M, "r2", [d(Action.SUSPEND, "p0")], {}).alerts
    links = AlertLinks(flow_run_url="http://prefect:4200/runs/flow-run/abc",
                       grafana_url="https://grafana.example/d/provider-canary",
                       runbook_base_url="https://git.example/ops/canary/blob/main/")
    linked = with_links(alert, links)
    line = ("<http://prefect:4200/runs/flow-run/abc|Flow run> · "
            "<https://grafana.example/d/provider-canary?var-model=acme%2Fmodel|Dashboard> · "
            "<https://git.example/ops/canary/blob/main/docs/operations.md#canaryendpointsuspended|Runbook>")
    assert linked.text.endswith("\n" + line)
    assert json.loads(linked.blocks_json)[-1]["elements"][0]["text"] == line
    assert with_links(linked, links) == linked  # a round settled again keeps one links line
    assert links_line(AlertLinks(), "restore", M) == "Runbook: `docs/operations.md#5-what-each-alert-means`"
    assert runbook_url("floor_blocked", "https://g.example/x") == \
        "https://g.example/x/docs/operations.md#canarymodelatcapacityfloor"


def test_a_link_cannot_be_broken_out_of() -> None:
    line = links_line(AlertLinks(flow_run_url="http://h/run|x>y <z&w"), "suspend", M)
    assert line.startswith("<http://h/run%7Cx%3Ey%20%3Cz&amp;w|Flow run>")


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.+)$", markdown, re.M)}


def test_every_runbook_an_alert_links_exists() -> None:
    anchors = _anchors((ROOT / "docs" / "operations.md").read_text(encoding="utf-8"))
    for kind in [*RUNBOOKS, "restore"]:
        assert runbook_url(kind, None).split("#", 1)[1] in anchors, kind
