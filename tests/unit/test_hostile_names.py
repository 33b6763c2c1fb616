"""Hostile provider metadata (tags and names with newlines, pipes, `*`, backticks, 10-50 kB) is escaped and
bounded by one helper (tasks.core.render.text.name) everywhere it is rendered: the `provider-ignore-<slug>`
artifact's table, the round artifact, Slack text and blocks, the "What to do" commands."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from tasks.core.render import render_decision_alert, render_round_markdown
from tasks.core.render.markdown import render_ignore_markdown
from tasks.core.render.postable import TEXT_CAP, fallback_alert, post_key, postable
from tasks.core.render.text import NAME_CAP, command_span, name
from tasks.core.types import (
    Action,
    Contract,
    ContractResult,
    Decision,
    IgnoreEntry,
    IgnoreList,
    Mode,
    Outcome,
    RoundInfo,
)

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
NASTY = "ev|l\n| x | y |\n*bold* `tick` <b>&"
HUGE = "deep`infra\n" + "q" * 10_000


def table_rows(md: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith("|")]


def unescaped_pipes(row: str) -> int:
    return sum(1 for i, ch in enumerate(row) if ch == "|" and (i == 0 or row[i - 1] != "\\"))


@pytest.mark.parametrize("target", ["slack", "markdown", "cell", "log"])
def test_name_is_one_line_bounded_and_holds_no_raw_backtick(target: str) -> None:
    shown = name(HUGE, target)  # type: ignore[arg-type]
    assert "\n" not in shown and len(shown) <= NAME_CAP + 2
    inner = shown[1:-1] if target != "log" else shown
    assert "`" not in inner


def test_ignore_artifact_table_keeps_one_row_per_entry_and_renders_nothing() -> None:
    entries = (IgnoreEntry(tag=NASTY, layer="operational", reason="bad | reason\nsecond line"),
               IgnoreEntry(tag="novita", layer="builtin", reason="r"))
    md = render_ignore_markdown(IgnoreList(model="acme/m", ignore=(NASTY, "novita"), entries=entries))
    rows = table_rows(md)
    assert len(rows) == 2 + len(entries)  # header, rule, one row per entry: no row broken by a newline
    assert all(unescaped_pipes(r) == 5 for r in rows), rows
    nasty_row = rows[2]
    assert "`ev\\|l⏎\\| x \\| y \\|⏎*bold* ˋtickˋ <b>&`" in nasty_row  # one code span: `*` and tags do not render


def test_round_artifact_table_survives_a_hostile_tag() -> None:
    info = RoundInfo("acme/m@2026-11-01T10:00:00Z", "acme/m", NOW, Mode.ENFORCE)
    results = [ContractResult(round_id=info.round_id, model="acme/m", tag=t, contract=Contract.TTFT,
                              outcome=Outcome.FAIL, reason="ttft_exceeded", evidence="ttft_ms (12000) > 10000")
               for t in (NASTY, "ok")]
    md = render_round_markdown(info, results, [], None, [])
    rows = table_rows(md)
    assert len(rows) == 4 and all(unescaped_pipes(r) == 4 for r in rows), rows
    assert all(r.count("`") in (0, 2) for r in rows), rows  # a backtick in a tag does not end its code span


def decision(tag: str) -> Decision:
    return Decision(at=NOW, model="acme/m", tag=tag, action=Action.SUSPEND, mode=Mode.ENFORCE, ladder_step=1,
                    until=NOW + timedelta(days=1), reason="failed 2 rounds in a row")


@pytest.mark.parametrize("tag", [NASTY, HUGE], ids=["backtick-newline", "10kB"])
def test_what_to_do_command_is_whole_and_never_breaks_its_code_span(tag: str) -> None:
    alert = render_decision_alert(decision(tag))
    blocks = json.loads(alert.blocks_json)
    todo = next(b["text"]["text"] for b in blocks if "What to do" in b.get("text", {}).get("text", ""))
    assert "\n" not in todo and todo.count("`") % 2 == 0
    assert '`canary lift &lt;tag&gt; --model acme/m --reason "..."`' in todo  # whole, the tag a placeholder
    assert "canary status --json" in todo and len(todo) < 400
    assert tag not in alert.text and "q" * (NAME_CAP + 1) not in alert.text


def test_a_plain_tag_still_gives_a_command_to_paste() -> None:
    assert command_span("canary", "lift", "odd tag;rm", "--model", "acme/m") == \
        "`canary lift 'odd tag;rm' --model acme/m`"


def test_postable_caps_text_and_blocks_and_keeps_short_alerts_unchanged() -> None:
    small = render_decision_alert(decision("fireworks"))
    assert postable(small) == small
    big = render_decision_alert(decision("fireworks"))
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "s" * 5000}}] * 80
    big = replace(big, text="t" * 60_000, blocks_json=json.dumps(blocks))
    out = postable(big)
    assert len(out.text) <= TEXT_CAP
    capped = json.loads(out.blocks_json)
    assert len(capped) <= 50 and all(len(b["elements"][0]["text"] if b["type"] == "context" else
                                         b["text"]["text"]) <= 3000 for b in capped)
    assert sum(len(json.dumps(b)) for b in capped) <= 13_000


def test_fallback_alert_is_short_plain_text_with_a_bounded_key() -> None:
    original = render_decision_alert(decision(HUGE))
    fb = fallback_alert(original, "slack http 200: msg_too_long", NOW)
    assert fb.blocks_json == "[]" and len(fb.text) < 1000 and "msg_too_long" in fb.text
    assert len(fb.key) <= 250 and len(post_key(original.key)) <= 200
