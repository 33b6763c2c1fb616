"""Golden tests for the rendered alerts (Gatus ExpectedBody style); the round's Markdown artifact is tested in
test_render_markdown.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.core.deadman import Overdue
from tasks.core.render import (
    EvidenceLine,
    alerts_for_round,
    clean,
    render_deadman_alerts,
    render_decision_alert,
    render_pin_mismatch_alerts,
    render_probe_weak_alert,
)
from tasks.core.types import (
    Action,
    Attempt,
    Contract,
    ContractResult,
    IgnoreList,
    Outcome,
)
from tests.support.render_cases import DIGEST, IGNORE, M, T, blocks, context, decision, header, section
from tests.support.secrets_registry import fresh_secret_registry  # noqa: F401 (autouse)

pytestmark = pytest.mark.unit


def test_suspend_alert_golden_blocks() -> None:
    evidence = [
        EvidenceLine("refusal", "empty_reply", "len(text.strip()) (0) > 0", "", round_id="r2"),
        EvidenceLine("opening", "corrupted_opening", "corrupted (19) / replies (20)", '."*Hello*',
                     round_id="r2"),
    ]
    alert = render_decision_alert(decision(Action.SUSPEND), IGNORE, evidence)
    assert alert.key == f"{M}|deepinfra/fp8|suspend|enforce|2026-11-01T10:00:00+00:00"
    assert (alert.kind, alert.model, alert.tag, alert.created_at) == ("suspend", M, "deepinfra/fp8", T)
    assert blocks(alert) == [
        header("Suspended: deepinfra/fp8 on meta-llama/llama-3.3-70b-instruct"),
        section("`deepinfra/fp8` on `meta-llama/llama-3.3-70b-instruct` is out of traffic until "
                "2026-11-02 10:00 UTC (ladder step 1).\nReason: failed 2 consecutive rounds\n"
                "Rounds: `r1`, `r2`"),
        section("*Evidence*\n• `r2` refusal `empty_reply`: len(text.strip()) (0) &gt; 0\n"
                "• `r2` opening `corrupted_opening`: corrupted (19) / replies (20); reply: `.\"*Hello*`"),
        section("*What to do:* nothing if the evidence holds. If it is a false positive: "
                "`canary lift deepinfra/fp8 --model meta-llama/llama-3.3-70b-instruct --reason \"...\"`"),
        context(DIGEST),
    ]
    assert alert.text.splitlines()[0] == "Suspended: deepinfra/fp8 on meta-llama/llama-3.3-70b-instruct"
    assert alert.text.splitlines()[-1] == DIGEST


def test_would_suspend_alert_golden_blocks() -> None:
    alert = render_decision_alert(decision(Action.WOULD_SUSPEND, "fireworks"), IgnoreList(M, (), ()))
    assert alert.kind == "would_suspend"
    assert blocks(alert) == [
        header("Would suspend (observe mode): fireworks on meta-llama/llama-3.3-70b-instruct"),
        section("`fireworks` on `meta-llama/llama-3.3-70b-instruct` would be out of traffic until "
                "2026-11-02 10:00 UTC (ladder step 1).\nReason: failed 2 consecutive rounds\n"
                "Rounds: `r1`, `r2`"),
        section("*What to do:* observe mode changed nothing. To exclude it now: "
                "`canary exclude add fireworks --model meta-llama/llama-3.3-70b-instruct --reason \"...\"`; "
                "to let the canary act on such findings: `canary mode enforce`"),
        context("Ignore list for `meta-llama/llama-3.3-70b-instruct`: empty"),
    ]


def test_probe_weak_alert_golden_blocks() -> None:
    alert = render_probe_weak_alert(M, "r2", T, IGNORE, ["anthropic"])
    assert alert.key == "probe_weak|meta-llama/llama-3.3-70b-instruct|r2"
    assert (alert.kind, alert.tag) == ("probe_weak", None)
    assert blocks(alert) == [
        header("Refusal probe is weak: meta-llama/llama-3.3-70b-instruct"),
        section("In round `r2` of `meta-llama/llama-3.3-70b-instruct`, the positive controls `anthropic` "
                "passed the refusal probe although known to filter. Refusal outcomes of every endpoint in "
                "this round are `inconclusive` (`probe_weak`)."),
        section("*What to do:* check whether the controls still filter and whether the probe still triggers "
                "them; fix the prompt or the patterns, or update `refusal_controls` in canary.toml."),
        context(DIGEST),
    ]


def test_deadman_alert_golden_blocks() -> None:
    overdue = Overdue(M, T, timedelta(hours=2))
    [alert] = render_deadman_alerts([overdue], timedelta(minutes=30), T + timedelta(hours=2), {M: IGNORE})
    assert alert.key == "deadman|meta-llama/llama-3.3-70b-instruct|2026-11-01T10:00:00+00:00"
    assert blocks(alert) == [
        header("No canary round completed: meta-llama/llama-3.3-70b-instruct"),
        section("The last complete round of `meta-llama/llama-3.3-70b-instruct` was at 2026-11-01 10:00 UTC; "
                "rounds run every 30 min. Nothing is probed, so suspensions neither start nor end early."),
        section("*What to do:* check the Prefect deployment and its worker (`prefect flow-run ls`), then run "
                "one round by hand: `canary run --model meta-llama/llama-3.3-70b-instruct`"),
        context(DIGEST),
    ]


@pytest.mark.parametrize(
    ("action", "command"),
    [
        (Action.SUSPEND, "canary lift deepinfra/fp8 --model {m} --reason \"...\""),
        (Action.WOULD_SUSPEND, "canary mode enforce"),
        (Action.WOULD_SUSPEND, "canary exclude add deepinfra/fp8 --model {m} --reason \"...\""),
        (Action.FLOOR_BLOCKED, "canary exclude add deepinfra/fp8 --model {m} --reason \"...\""),
        (Action.RESTORE, "canary exclude add deepinfra/fp8 --model {m} --reason \"...\""),
        (Action.WOULD_RESTORE, "canary exclude add deepinfra/fp8 --model {m} --reason \"...\""),
        (Action.EXPIRE, "canary exclude add deepinfra/fp8 --model {m} --reason \"...\""),
        (Action.WOULD_EXPIRE, "canary exclude add deepinfra/fp8 --model {m} --reason \"...\""),
        (Action.LIFT, "canary exclude add deepinfra/fp8 --model {m} --reason \"...\""),
    ],
    ids=lambda v: str(v)[:24],
)
def test_every_decision_says_what_to_do(action: Action, command: str) -> None:
    alert = render_decision_alert(decision(action), IGNORE)
    assert alert.key == decision(action).decision_id
    assert alert.kind == action.value
    todo = [b for b in blocks(alert) if b["type"] == "section" and "*What to do:*" in b["text"]["text"]]
    assert len(todo) == 1
    assert f"`{command.format(m=M)}" in todo[0]["text"]["text"]
    assert blocks(alert)[-1] == context(DIGEST)


def test_lift_names_the_admin() -> None:
    alert = render_decision_alert(decision(Action.LIFT, actor="alice", reason="provider fixed it"), IGNORE)
    assert "lifted by `alice`" in alert.text
    assert "Reason: provider fixed it" in alert.text


def test_secrets_are_redacted_everywhere() -> None:
    secrets = ["sk-or-v1-0123456789abcdef0123", "xoxb-1111-2222-abcdefABCDEF", "Bearer abc.def-123"]
    evidence = [EvidenceLine("refusal", f"leak {secrets[1]}", f"auth: {secrets[2]}", f"key={secrets[0]}")]
    alert = render_decision_alert(decision(Action.SUSPEND, reason=f"saw {secrets[0]}"), IGNORE, evidence)
    for secret in [*secrets, "abc.def-123", "0123456789abcdef0123"]:
        assert secret not in alert.text
        assert secret not in alert.blocks_json
    assert "sk-or-***" in alert.text and "Bearer ***" in alert.text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("plain", "plain"),
        ("line1\nline2", "line1⏎line2"),
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("bell\x07", "bell\\u0007"),
        ("x" * 300, "x" * 199 + "…"),
        ("token xoxp-123-abc", "token xox?-***"),
        ("https://hooks.slack.com/services/T/B/X", "https://hooks.slack.com/***"),
    ],
    ids=["plain", "newline", "zero-width", "control", "capped", "slack-token", "webhook-url"],
)
def test_clean(raw: str, expected: str) -> None:
    assert clean(raw) == expected


def test_reply_excerpt_cannot_ping_or_break_formatting() -> None:
    excerpt = "<!channel> `rm -rf` & <https://evil|click> " + "y" * 400
    evidence_lines = [EvidenceLine("refusal", "r", "", excerpt)]
    alert = render_decision_alert(decision(Action.SUSPEND), IGNORE, evidence_lines)
    evidence = blocks(alert)[2]["text"]["text"]
    assert "<!channel>" not in alert.blocks_json and "&lt;!channel&gt;" in evidence
    assert "&amp;" in evidence and "<https" not in evidence
    span = evidence.split("reply: ", 1)[1]
    assert span.startswith("`") and span.endswith("`") and span.count("`") == 2
    assert len(span) <= 200 + 2 + 40  # capped at 200 characters, plus escapes for & < >


@settings(max_examples=60, deadline=None)
@given(reason=st.text(max_size=5000), excerpt=st.text(max_size=5000), tag=st.text(min_size=1, max_size=300))
def test_any_input_gives_valid_slack_blocks(reason: str, excerpt: str, tag: str) -> None:
    evidence = [EvidenceLine("language", reason, reason, excerpt, round_id="r") for _ in range(10)]
    alert = render_decision_alert(decision(Action.SUSPEND, tag=tag, reason=reason), IGNORE, evidence)
    parsed = blocks(alert)
    assert parsed[0]["type"] == "header" and len(parsed[0]["text"]["text"]) <= 150
    for b in parsed[1:-1]:
        assert b["type"] == "section" and 0 < len(b["text"]["text"]) <= 3000
        assert "<" not in b["text"]["text"] and ">" not in b["text"]["text"]
    assert len(parsed) <= 50


def test_command_quotes_unusual_tags() -> None:
    alert = render_decision_alert(decision(Action.SUSPEND, tag="odd tag;rm"), IGNORE)
    assert "`canary lift 'odd tag;rm' --model" in alert.text


def test_pin_mismatch_from_tags_and_from_attempts() -> None:
    attempt = Attempt(round_id="r2", model=M, tag="fireworks", provider_name="Fireworks",
                      contract=Contract.TTFT, attempt_no=1, started_at=T, served_provider="Together")
    ok = Attempt(round_id="r2", model=M, tag="novita", provider_name="Novita", contract=Contract.TTFT,
                 attempt_no=1, started_at=T, served_provider="Novita")
    alerts = render_pin_mismatch_alerts(M, "r2", T, [attempt, ok, "deepinfra/fp8"], IGNORE)
    assert [a.key for a in alerts] == [f"pin_mismatch|{M}|deepinfra/fp8|r2", f"pin_mismatch|{M}|fireworks|r2"]
    assert "expected `Fireworks`, served by `Together`; 1 attempts: ttft" in alerts[1].text
    assert "canary exclude add fireworks --model" in alerts[1].text
    assert all(a.kind == "pin_mismatch" for a in alerts)


def test_alerts_for_round_collects_every_transition_with_evidence() -> None:
    results = [
        ContractResult("r2", M, "deepinfra/fp8", Contract.REFUSAL, Outcome.FAIL, "refusal_pattern",
                       "pattern ('I can't') matched", attempt_ids=("r2:deepinfra/fp8:refusal:1",)),
        ContractResult("r2", M, "deepinfra/fp8", Contract.TTFT, Outcome.PASS, "ok"),
    ]
    attempts = [Attempt(round_id="r2", model=M, tag="deepinfra/fp8", provider_name="DeepInfra",
                        contract=Contract.REFUSAL, attempt_no=1, started_at=T, text="I can't continue this.")]
    decisions = [decision(Action.SUSPEND), decision(Action.RESTORE, tag="novita")]
    out = alerts_for_round(M, "r2", T, decisions, True, ["fireworks"], IGNORE, results=results, attempts=attempts)
    alerts = list(out.alerts)
    # the round's two decisions in ONE message, then probe_weak and the pin mismatch
    assert [a.kind for a in alerts] == ["decisions", "probe_weak", "pin_mismatch"]
    assert alerts[0].key == "decisions|r2" and alerts[0].tag is None and alerts[0].thread_key is None
    assert alerts[0].text.startswith(f"{M}: 1 suspended, 1 restored\n")
    assert "`refusal_pattern`" in alerts[0].text and "reply: `I can't continue this.`" in alerts[0].text
    assert alerts[0].text.count("*Evidence*") == 1  # the restore has none
    assert out.threads == {decisions[0].decision_id: "decisions|r2"}  # the suspension is followed in its thread
    assert list(alerts_for_round(M, "r2", T, [], False, [], IGNORE).alerts) == []


def test_redact_leaves_ordinary_text() -> None:
    from tasks.core.redaction import redact_process_secrets as redact

    text = "skipped the sk-8 ladder; Bearer of bad news"
    assert redact(text) == "skipped the sk-8 ladder; Bearer *** bad news"  # "Bearer X": X is a token
