"""Text hygiene for everything we render: secrets redacted, invisible characters shown, lengths capped.

Every piece of outside text (reply excerpts, reasons, evidence, provider names) goes through `clean()`;
mrkdwn additionally escapes Slack's three control characters (& < >), Markdown table cells escape `|`.
"""

from __future__ import annotations

import shlex
from datetime import UTC, datetime

from tasks.core.redaction import redact as _redact

EXCERPT_CAP = 200  # characters of a bad reply shown in an alert


def redact(text: str) -> str:
    """Every known secret value and every secret shape masked (the redactor tasks/secrets.py installs)."""
    return _redact(text)


def clean(text: str, cap: int = EXCERPT_CAP) -> str:
    """Redact (before any cut), make newlines and invisible characters visible (⏎, \\uXXXX), cap at `cap`."""
    out: list[str] = []
    for ch in redact(text):
        if ch == "\n":
            out.append("⏎")
        elif ch in "\t\r":
            out.append(" ")
        elif not ch.isprintable():
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return cap_text("".join(out), cap)


def cap_text(text: str, cap: int) -> str:
    return text if len(text) <= cap else text[: cap - 1] + "…"


def mrkdwn(text: str) -> str:
    """Escape Slack's control characters (its mrkdwn treats &, < and > specially)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def code(text: str, cap: int = EXCERPT_CAP) -> str:
    """A Slack inline code span of cleaned text (a backtick inside shows as ˋ so it cannot end the span)."""
    return "`" + mrkdwn(clean(text, cap).replace("`", "ˋ")) + "`"


def cell(text: str, cap: int = 120) -> str:
    """Cleaned text safe inside a Markdown table cell."""
    return clean(text, cap).replace("|", "\\|")


def fmt_ts(ts: datetime | None) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if ts else "never"


def command(*argv: str) -> str:
    """A copy-pasteable shell command; arguments that need it are quoted (`"..."` is a placeholder)."""
    return " ".join(a if a == '"..."' else shlex.quote(a) for a in argv)


def lift_cmd(tag: str, model: str) -> str:
    return command("canary", "lift", tag, "--model", model, "--reason", '"..."')


def exclude_cmd(tag: str, model: str) -> str:
    return command("canary", "exclude", "add", tag, "--model", model, "--reason", '"..."')


ENFORCE_CMD = "canary mode enforce"
