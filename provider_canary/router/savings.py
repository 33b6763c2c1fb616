"""Token savers: a deterministic pipeline of pure functions on the chat messages, failing open.

Each saver takes the messages (a deep copy: it may not touch the caller's) and a `SaverContext`, and
returns new messages. `run_savers` runs the named ones in order. If any saver raises or returns something
that is not a list of message objects, the pipeline stops and returns the **original** messages, unchanged
(the request then goes out byte-identical to one sent without savers), with the failure named.

The pipeline never reports its own savings: the router serializes the body it actually sends and counts
its tokens (provider_canary/router/tokens.py), then subtracts that from the count of the body it would have sent without
savers (`measure_savings`).

**A saver never changes data.** A change is made only where the saver can tell it keeps the meaning; where it
cannot tell, it leaves the text as it came. Tool results (`tool`, `function` messages), tool-call arguments, JSON,
code, tabs and runs of spaces that can carry meaning (aligned columns, a TSV row, indentation) are never touched.

Savers:
- `drop_duplicate_system` (default): a system (or developer) message identical to an earlier one (every key
  and value the same: the same instruction given twice) is dropped.
- `collapse_whitespace` (opt-in): in prose only (`is_prose`: a system, developer, user or assistant text with
  no tab, no code (backticks, an indented line), none of the characters JSON, markup and tables are made of
  (`{ } [ ] < > |`), and no aligned columns: no two lines whose runs of spaces end at the same place), a run
  of spaces between two words becomes one space and three or more newlines become two. Trailing spaces are kept
  (a Markdown line break, or a field of data). What it cannot tell: a single line whose run of spaces separates
  two fields (`New York    10`) reads as prose: opt in where clients send prose.
- `trim_old_turns`: while the prompt exceeds `token_budget` tokens, the oldest whole turn (a user message
  and everything up to the next user message) is dropped. System messages and the last turn always stay.
  `token_budget = 0` disables it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from provider_canary.router.tokens import content_texts, count_body, count_messages

Messages = list[dict[str, Any]]


#: Characters of message text past which the router skips the savers (fail open, named): each megabyte of
#: text costs the savers ~60 ms of CPU in C regex calls that hold the GIL, so the event loop (every other
#: client) would wait that long; a prompt that large is far beyond any model's context anyway.
MAX_TEXT_CHARS = 1_000_000


@dataclass(frozen=True)
class SaverContext:
    token_budget: int = 0
    count: Callable[[Sequence[Any]], int] = count_messages
    max_text_chars: int = 0  # 0: no limit


Saver = Callable[[Messages, SaverContext], Messages]

_INLINE_RUN = re.compile(r"(?<=\S) {2,}(?=\S)")
_MANY_NEWLINES = re.compile(r"\n{3,}")
#: Signs that a text is not prose: a tab, code (a backtick, an indented line), the characters of JSON, markup
#: and tables.
_STRUCTURE = re.compile(r"[\t`{}\[\]<>|]|^[ \t]", re.MULTILINE)
_SYSTEM_ROLES = ("system", "developer")
#: Roles whose text may be prose; a tool result (`tool`, `function`) is data, whatever it looks like.
_PROSE_ROLES = frozenset({"system", "developer", "user", "assistant"})


def is_prose(text: str) -> bool:
    """Whether whitespace in `text` can be collapsed without changing its meaning: no tab, no code, no JSON,
    markup or table characters, and no aligned columns (runs of spaces ending at the same place on two lines)."""
    if _STRUCTURE.search(text):
        return False
    seen: set[int] = set()
    for line in text.split("\n"):
        ends = {m.end() for m in _INLINE_RUN.finditer(line)}
        if ends & seen:
            return False
        seen |= ends
    return True


def _collapse_text(text: str) -> str:
    if not is_prose(text):
        return text
    return _MANY_NEWLINES.sub("\n\n", _INLINE_RUN.sub(" ", text))


def _map_text(message: dict[str, Any], fn: Callable[[str], str]) -> dict[str, Any]:
    if message.get("role") not in _PROSE_ROLES:
        return message
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": fn(content)}
    if isinstance(content, list):
        parts = [
            {**p, "text": fn(p["text"])} if isinstance(p, dict) and isinstance(p.get("text"), str) else p
            for p in content
        ]
        return {**message, "content": parts}
    return message


def collapse_whitespace(messages: Messages, ctx: SaverContext) -> Messages:
    return [_map_text(m, _collapse_text) for m in messages]


def drop_duplicate_system(messages: Messages, ctx: SaverContext) -> Messages:
    seen: list[dict[str, Any]] = []
    kept: Messages = []
    for message in messages:
        if message.get("role") in _SYSTEM_ROLES:
            if message in seen:  # every key and value equal: the same instruction, given again
                continue
            seen.append(message)
        kept.append(message)
    return kept


def trim_old_turns(messages: Messages, ctx: SaverContext) -> Messages:
    if ctx.token_budget <= 0:
        return messages
    kept = list(messages)
    while ctx.count(kept) > ctx.token_budget:
        turn_starts = [i for i, m in enumerate(kept) if m.get("role") == "user"]
        if len(turn_starts) < 2:
            break  # only the last turn is left: never drop it
        start, end = turn_starts[0], turn_starts[1]
        # the oldest turn: its user message and the replies/tool results up to the next user message;
        # also any non-system messages before it (an assistant greeting with no user turn before it).
        first_non_system = next(i for i, m in enumerate(kept) if m.get("role") not in _SYSTEM_ROLES)
        start = min(start, first_non_system)
        kept = kept[:start] + [m for m in kept[start:end] if m.get("role") in _SYSTEM_ROLES] + kept[end:]
    return kept


#: The saver registry: the names the routes file may list under `router.savers`.
SAVERS: dict[str, Saver] = {
    "collapse_whitespace": collapse_whitespace,
    "drop_duplicate_system": drop_duplicate_system,
    "trim_old_turns": trim_old_turns,
}


@dataclass(frozen=True)
class PipelineResult:
    messages: Any  # what to send: the savers' output, or the original object untouched
    applied: tuple[str, ...] = ()
    failed: str | None = None  # "saver_name: ErrorType: message" when the pipeline failed open

    @property
    def changed(self) -> bool:
        return self.failed is None and bool(self.applied)


def _is_messages(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(m, dict) for m in value)


def run_savers(
    messages: Any, names: Sequence[str], ctx: SaverContext, registry: Mapping[str, Saver] = SAVERS
) -> PipelineResult:
    """Run the named savers in order; on any failure return the original messages (fail open)."""
    if not names:
        return PipelineResult(messages)
    if not _is_messages(messages):
        return PipelineResult(messages, failed="pipeline: messages is not a list of objects")
    if ctx.max_text_chars:
        chars = sum(len(t) for m in messages for t in content_texts(m.get("content")))
        if chars > ctx.max_text_chars:
            return PipelineResult(messages, failed=f"pipeline: {chars} characters of text, over the savers' "
                                                   f"limit of {ctx.max_text_chars}")
    current: Messages = messages
    for name in names:
        try:
            saver = registry[name]
            result = saver(copy.deepcopy(current), ctx)
        except Exception as exc:  # fail open: the request must still go out
            return PipelineResult(messages, failed=f"{name}: {type(exc).__name__}: {str(exc)[:200]}")
        if not _is_messages(result):
            return PipelineResult(messages, failed=f"{name}: returned {type(result).__name__}, not messages")
        current = result
    return PipelineResult(current, applied=tuple(names))


@dataclass(frozen=True)
class Savings:
    """Tokens measured on the two serialized bodies: the one without savers and the one sent."""

    tokens_before: int | None
    tokens_sent: int | None

    @property
    def tokens_saved(self) -> int | None:
        if self.tokens_before is None or self.tokens_sent is None:
            return None
        return self.tokens_before - self.tokens_sent


def measure_savings(baseline_body: bytes, sent_body: bytes) -> Savings:
    sent = count_body(sent_body)
    before = sent if baseline_body == sent_body else count_body(baseline_body)
    return Savings(tokens_before=before, tokens_sent=sent)
