"""Text hygiene for everything we render: secrets redacted, invisible characters shown, lengths capped.

Every piece of outside text (reply excerpts, reasons, evidence, provider names) goes through `clean()`;
mrkdwn additionally escapes Slack's three control characters (& < >; `unmrkdwn` undoes it for a log line),
Markdown table cells escape `|`.

A provider's tag or name (and a model id, an alert key: anything an upstream or an admin can make hostile) is
shown through ONE helper, `name(text, target)`, for each target: a Slack code span, a Markdown code span, a
Markdown table cell, a log line. It redacts, makes newlines and invisible characters visible, replaces
backticks (they would end the span), escapes what the target treats specially and cuts at `NAME_CAP`.
A command built from such a name is shown by `command_span`, which never cuts a command in the middle.
"""

from __future__ import annotations

import re
import shlex
from datetime import UTC, datetime
from typing import Literal

from tasks.core.redaction import redact_process_secrets

EXCERPT_CAP = 200  # characters of a bad reply shown in an alert
#: The longest tag, provider name, model id or alert key shown anywhere (OpenRouter's are under 60).
NAME_CAP = 120

Target = Literal["slack", "markdown", "cell", "log"]


def clean(text: str, cap: int = EXCERPT_CAP) -> str:
    """Redact (before any cut), make newlines and invisible characters visible (⏎, \\uXXXX), cap at `cap`."""
    out: list[str] = []
    for ch in redact_process_secrets(text):
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


_MRKDWN_ENTITIES = re.compile(r"&(amp|lt|gt);")
_UNESCAPED = {"amp": "&", "lt": "<", "gt": ">"}


def unmrkdwn(text: str) -> str:
    """Slack's three escapes undone (`mrkdwn`'s inverse), in one pass: an alert's text as a log line shows it
    (`45%) >= 25%`, not `45%) &gt;= 25%`); what goes to Slack keeps them."""
    return _MRKDWN_ENTITIES.sub(lambda m: _UNESCAPED[m.group(1)], text)


def code(text: str, cap: int = EXCERPT_CAP) -> str:
    """A Slack inline code span of cleaned text (a backtick inside shows as ˋ so it cannot end the span)."""
    return "`" + mrkdwn(clean(text, cap).replace("`", "ˋ")) + "`"


def name(text: str, target: Target, cap: int = NAME_CAP) -> str:
    """A provider's tag or name (a model id, an alert key), escaped and bounded for `target`:

    * slack     a Slack mrkdwn code span (& < > escaped)
    * markdown  a Markdown code span (`*` and `_` do not render inside it)
    * cell      a Markdown code span inside a table cell (`|` escaped too)
    * log       one plain line (no span)
    """
    shown = clean(text, cap).replace("`", "ˋ")
    if target == "log":
        return shown
    if target == "slack":
        return "`" + mrkdwn(shown) + "`"
    span = "`" + shown + "`"
    return span.replace("|", "\\|") if target == "cell" else span


def is_pasteable(arg: str) -> bool:
    """`arg` can appear in a command to paste as it is: short, printable (no newline), no backtick (it would
    end the code span), nothing the redactor masks. The shell quoting is `command`'s."""
    return 0 < len(arg) <= NAME_CAP and arg.isprintable() and "`" not in arg and redact_process_secrets(arg) == arg


def command_span(*argv: str) -> str:
    """A Slack code span holding a command to paste. An argument that cannot be shown verbatim (too long, or
    holding backticks, newlines, quotes...) is replaced by a placeholder (`<model>` after `--model`, else
    `<tag>`) and a note says where to find it: the command is never cut in the middle nor breaks its span."""
    words: list[str] = []
    holders: dict[str, int] = {}
    for i, arg in enumerate(argv):
        if arg == '"..."' or is_pasteable(arg):
            words.append(command(arg))
            continue
        holder = "<model>" if i and argv[i - 1] == "--model" else "<tag>"
        holders[holder] = max(holders.get(holder, 0), len(arg))
        words.append(holder)
    span = "`" + mrkdwn(" ".join(words)) + "`"
    if not holders:
        return span
    which = ", ".join(mrkdwn(h) for h in holders)
    return (f"{span} (replace {which}: {max(holders.values())} characters, or characters a message cannot "
            "show; copy it from `canary status --json`)")


def cell(text: str, cap: int = 120) -> str:
    """Cleaned text safe inside a Markdown table cell."""
    return clean(text, cap).replace("|", "\\|")


def fmt_ts(ts: datetime | None) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if ts else "never"


def command(*argv: str) -> str:
    """A copy-pasteable shell command; arguments that need it are quoted (`"..."` is a placeholder)."""
    return " ".join(a if a == '"..."' else shlex.quote(a) for a in argv)


def lift_cmd(tag: str, model: str) -> str:
    """`canary lift ...` as a Slack code span (see `command_span`)."""
    return command_span("canary", "lift", tag, "--model", model, "--reason", '"..."')


def exclude_cmd(tag: str, model: str) -> str:
    """`canary exclude add ...` as a Slack code span (see `command_span`)."""
    return command_span("canary", "exclude", "add", tag, "--model", model, "--reason", '"..."')


ENFORCE_CMD = "canary mode enforce"
