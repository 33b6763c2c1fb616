"""The fault catalogue: every kind an endpoint can show, its parameters, and when a fault fires.

A fault fires on a request deterministically: the n-th applicable request (n from 0) of that fault is
faulty iff floor((n+1)*rate) > floor(n*rate). Rate 0.95 therefore gives exactly 19 faulty of every 20,
rate 0.5 every second request, rate 1 every request: tests never flake.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tasks.config import ALL_LANGUAGES

REQUEST_KINDS = frozenset({"text", "structured", "stream", "tools", "all"})


@dataclass(frozen=True)
class Param:
    """One fault parameter: its type, default and optional allowed values / lower bound."""

    type: type | tuple[type, ...]
    default: Any
    choices: tuple[Any, ...] = ()
    minimum: float | None = None

    def check(self, value: Any) -> str | None:
        """None if the value is acceptable, else what is wrong with it."""
        if isinstance(value, bool) and self.type is not bool:
            return f"must be {_type_name(self.type)}"
        if not isinstance(value, self.type):
            return f"must be {_type_name(self.type)}"
        if self.choices and value not in self.choices:
            return f"must be one of {list(self.choices)}"
        if self.minimum is not None and isinstance(value, int | float) and value < self.minimum:
            return f"must be >= {self.minimum}"
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            return "must be a list of strings"
        return None


def _type_name(t: type | tuple[type, ...]) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false", list: "a list"}
    if isinstance(t, tuple):
        return " or ".join(names.get(x, x.__name__) for x in t if x is not int or float not in t)
    return names.get(t, t.__name__)


_NUM = (int, float)
_LANGS = ALL_LANGUAGES


@dataclass(frozen=True)
class KindSpec:
    applies_to: str
    params: Mapping[str, Param] = field(default_factory=dict)
    doc: str = ""


FAULT_KINDS: dict[str, KindSpec] = {
    "healthy": KindSpec("all", {}, "no fault (useful with windows to document a healthy spell)"),
    "uptime_dip": KindSpec(
        "all",
        {"uptime_5m": Param(_NUM, 55.0, minimum=0), "uptime_30m": Param(_NUM, 85.0, minimum=0),
         "status": Param(int, -2, choices=(0, -1, -2, -3, -5, -10))},
        "the listing only (no request is touched): uptime_last_5m/_30m and status while active",
    ),
    "slow_first_token": KindSpec(
        "all",
        {"delay_s": Param(_NUM, 12.0, minimum=0), "keepalive_s": Param(_NUM, 2.0, minimum=0.01)},
        "first text after delay_s; `: OPENROUTER PROCESSING` every keepalive_s meanwhile",
    ),
    "role_only_then_slow": KindSpec(
        "stream",
        {"delay_s": Param(_NUM, 12.0, minimum=0)},
        "an empty role-only chunk at once, text after delay_s",
    ),
    "stall_after_headers": KindSpec(
        "all", {"max_s": Param(_NUM, 300.0, minimum=0)}, "200 headers, then nothing until the client gives up"
    ),
    "die_after_tokens": KindSpec(
        "all",
        {"tokens": Param(int, 2, minimum=0)},
        "n text chunks, then the connection is cut without [DONE]",
    ),
    "http_error_before_stream": KindSpec(
        "all",
        {
            "status": Param(int, 429, choices=(400, 408, 429, 500, 502, 503, 524, 529)),
            "retry_after_s": Param(_NUM, 0, minimum=0),
        },
        "an HTTP error with an OpenRouter error body (relayed `metadata.raw`, `provider_name`) before the stream",
    ),
    "masked_upstream_failure": KindSpec(
        "all",
        {"native": Param(str, "network_error"), "tokens": Param(int, 0, minimum=0)},
        "HTTP 200, n text chunks, then finish_reason stop with native_finish_reason `native` and no usage: "
        "OpenRouter's report of a failed upstream hop (stream or JSON body)",
    ),
    "midstream_error": KindSpec(
        "stream",
        {
            "tokens": Param(int, 3, minimum=0),
            "code": Param(int, 502, choices=(408, 429, 500, 502, 503, 524, 529)),
            "done": Param(bool, False),
        },
        "error chunk (top-level `error`, finish_reason error) after n text chunks",
    ),
    "corrupted_opening": KindSpec(
        "text",
        {"prefixes": Param(list, ['",', "ing ", ";", ".,", "')"])},
        "the reply starts with a stray prefix before its real opening",
    ),
    "language_switch": KindSpec(
        "text", {"to": Param(str, "en", choices=_LANGS)}, "whole reply in language `to`"
    ),
    "language_mix": KindSpec(
        "text",
        {"with": Param(str, "es", choices=_LANGS), "only_from": Param(list, [])},
        "sentences alternate between the prompt's language and `with` (prompts in only_from, if set)",
    ),
    "mojibake": KindSpec(
        "text",
        {"codec": Param(str, "cp1252", choices=("cp1252", "latin-1"))},
        "UTF-8 bytes decoded as cp1252",
    ),
    "invalid_json": KindSpec(
        "structured",
        {"mode": Param(str, "truncated", choices=("truncated", "trailing_comma", "single_quotes"))},
        "structured reply that does not parse",
    ),
    "fenced_json": KindSpec("structured", {}, "structured reply wrapped in ```json fences"),
    "schema_violation": KindSpec(
        "structured",
        {
            "mode": Param(
                str, "missing_required", choices=("missing_required", "wrong_enum", "wrong_type", "extra_key")
            )
        },
        "valid JSON that breaks the requested schema",
    ),
    "refusal": KindSpec(
        "text", {"text": Param(str, "")}, "a refusal text in the prompt's language, finish stop"
    ),
    "content_filter": KindSpec(
        "text", {"keep_words": Param(int, 0, minimum=0)}, "finish_reason content_filter, native SAFETY"
    ),
    "empty_reply": KindSpec("text", {}, "empty content, finish stop"),
    "truncated": KindSpec(
        "text", {"words": Param(int, 4, minimum=0)}, "a few words then finish_reason length"
    ),
    "pin_not_honoured": KindSpec(
        "all", {"served_by": Param(str, "")}, "response `provider` names another provider's display name"
    ),
    # Protocol violations: HTTP 200, then a body the client cannot use (provider_canary/simulator/protocol.py plays
    # them).
    "html_body": KindSpec(
        "all",
        {"content_type": Param(str, "text/html; charset=utf-8")},
        "HTTP 200 with an HTML error page instead of the reply (stream or not), sent as `content_type`",
    ),
    "invalid_utf8": KindSpec(
        "all",
        {"tokens": Param(int, 2, minimum=0)},
        "after n text chunks, a chunk holding bytes that are not UTF-8 (non-streaming: in the body)",
    ),
    "huge_line": KindSpec(
        "all",
        {"size_bytes": Param(int, 20_000_000, minimum=1)},
        "the first data line (non-streaming: the body) carries size_bytes of content, generated lazily",
    ),
    # tool calling (requests with `tools`; provider_canary/simulator/tools.py decides which turn needs a call)
    "no_call": KindSpec("tools", {}, "a turn that needs a tool call is answered in prose, finish stop"),
    "bad_json_args": KindSpec(
        "tools",
        {"mode": Param(str, "truncated", choices=("truncated", "trailing_comma", "single_quotes"))},
        "the tool call's arguments do not parse as JSON",
    ),
    "unknown_tool": KindSpec(
        "tools",
        {"name": Param(str, "")},
        "the call names a tool that was not offered (default functions.<tool>)",
    ),
    "schema_violating_args": KindSpec(
        "tools",
        {
            "mode": Param(
                str,
                "missing_required",
                choices=("missing_required", "wrong_enum", "wrong_type", "extra_key", "nested"),
            )
        },
        "valid JSON arguments that break the tool's parameters schema",
    ),
    "call_when_none_needed": KindSpec(
        "tools", {}, "a turn that needs no tool calls the first offered tool anyway"
    ),
}

#: The kinds provider_canary/simulator/protocol.py plays instead of the usual reply (the three protocol violations, and
#: the
#: masked upstream failure: a 200 whose body is well-formed but carries no answer).
PROTOCOL_KINDS = frozenset({"html_body", "invalid_utf8", "huge_line", "masked_upstream_failure"})
#: Kinds that never touch a request: "healthy" documents a spell, "uptime_dip" changes the listing's figures.
LISTING_KINDS = frozenset({"healthy", "uptime_dip"})


@dataclass(frozen=True)
class Window:
    """A span of simulated time: [start, end) and/or UTC hours [from, to) (wrapping midnight)."""

    start: datetime | None = None
    end: datetime | None = None
    hours: tuple[int, int] | None = None

    def is_active(self, now: datetime) -> bool:
        if self.start is not None and now < self.start:
            return False
        if self.end is not None and now >= self.end:
            return False
        if self.hours is not None:
            lo, hi = self.hours
            h = now.hour
            return lo <= h < hi if lo < hi else (h >= lo or h < hi)
        return True


@dataclass(frozen=True)
class Fault:
    kind: str
    rate: float = 1.0
    applies_to: str = "all"
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)
    windows: tuple[Window, ...] = ()

    def is_active(self, now: datetime) -> bool:
        return not self.windows or any(w.is_active(now) for w in self.windows)

    def applies(self, *, structured: bool, stream: bool, tools: bool = False) -> bool:
        return {
            "all": True,
            "text": not structured and not tools,
            "structured": structured,
            "stream": stream,
            "tools": tools,
        }[self.applies_to]


def fires(n: int, rate: float) -> bool:
    """Is the n-th (0-based) applicable request faulty at this rate? Deterministic, exact in the long run."""
    return math.floor((n + 1) * rate + 1e-9) > math.floor(n * rate + 1e-9)


class FaultCounters:
    """Per (model, tag, fault index) request counters; thread-safe. Reset by swapping the fleet."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str, int], int] = {}

    def next(self, key: tuple[str, str, int]) -> int:
        with self._lock:
            n = self._counts.get(key, 0)
            self._counts[key] = n + 1
            return n

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()

    def count(self, key: tuple[str, str, int]) -> int:
        """Requests the fault applied to since the fleet was set (whether or not it fired)."""
        with self._lock:
            return self._counts.get(key, 0)


def select_fault(
    model_id: str,
    tag: str,
    faults: tuple[Fault, ...],
    *,
    structured: bool,
    stream: bool,
    now: datetime,
    language: str,
    counters: FaultCounters,
    tools: bool = False,
) -> Fault | None:
    """The fault this request gets, if any. Every applicable active fault's counter advances, so each
    fault keeps its own exact rate; the first one that fires wins."""
    chosen: Fault | None = None
    for i, fault in enumerate(faults):
        if not fault.is_active(now) or not fault.applies(structured=structured, stream=stream, tools=tools):
            continue
        if fault.kind == "language_mix" and not _mixes(fault, language):
            continue
        n = counters.next((model_id, tag, i))
        if chosen is None and fault.kind not in LISTING_KINDS and fires(n, fault.rate):
            chosen = fault
    return chosen


def _mixes(fault: Fault, language: str) -> bool:
    only_from = fault.params.get("only_from") or []
    return fault.params.get("with") != language and (not only_from or language in only_from)


NowFn = Callable[[], datetime]


def listing_figures(faults: tuple[Fault, ...], now: datetime) -> dict[str, Any]:
    """The listing's figures an active `uptime_dip` replaces (empty when none is active)."""
    for fault in faults:
        if fault.kind == "uptime_dip" and fault.is_active(now):
            return {"uptime_last_5m": float(fault.params.get("uptime_5m", 55.0)),
                    "uptime_last_30m": float(fault.params.get("uptime_30m", 85.0)),
                    "status": int(fault.params.get("status", -2))}
    return {}
