"""Replay input: parse and validate the JSON Lines that `canary replay` folds the policy over (tasks/core/replay.py).

Input (docs/design.md "Outside interfaces"), JSON Lines, one object a line, blank lines skipped:

    {"round_ts": "2026-11-01T10:00:00Z", "model": "m", "tag": "x", "status": "clean"}
    {"round_ts": "2026-11-01T10:00:00Z", "model": "m", "builtin": ["deepinfra"], "operational": []}

A status line says how one endpoint did in one round; all status lines with the same (model, round_ts) are
one round, and every tag with a status line counts as discovered in it.

**Partial rounds** (confirmation rounds, tasks/core/confirm.py) carry `"partial": true` on their status lines
and list only the endpoints they probed. The endpoints they do not list are absent: their streaks freeze
(policy rule 2), exactly as in the live round. For the floor (rule 4), a partial round's discovered
endpoints are those of the same model's latest full round plus its own, the rule the live confirmation
round applies (tasks/core/settle.py `discovered_tags`), so `canary export-history` then `canary replay`
gives the live decisions. A status line may carry the `"mode"` the round ran in (`observe` or `enforce`, the
same on every line of a round; `canary export-history` writes it): that round is replayed in that mode, and
a change of mode between rounds carries the states over as a live switch does. Lines without it are
replayed in the configured mode (older exports; `--set mode=...` replays every round in one mode).

A line with `builtin` and/or `operational` sets the exclusions of that layer in force from its `round_ts` on
(no `round_ts`: from the start), for its `model` (no `model`: every model), until another line for the same
layer and scope replaces them. Items are tags or provider slugs, or objects `{"tag": ..., "until": ...}`; an
item past its `until` no longer counts. Naive timestamps are read as UTC. Rounds are replayed in time order
(then model), whatever the line order; each model keeps its own states, all starting fresh.

`build_replay_lines` writes this input from a round-status history (`canary export-history`).
This module is pure: `parse_replay` takes lines, not a path.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from tasks.core.exclusions import matches
from tasks.core.types import Layer, Mode, RoundStatus
from tasks.errors import CanaryError

_LAYERS = (Layer.BUILTIN, Layer.OPERATIONAL)


class ReplayInputError(CanaryError):
    """A replay input line is not valid; the message names the line number."""

    def __init__(self, lineno: int, problem: str) -> None:
        super().__init__(f"replay: line {lineno}: {problem}")
        self.lineno = lineno


@dataclass(frozen=True, slots=True)
class ReplayRound:
    model: str
    round_ts: datetime
    statuses: Mapping[str, RoundStatus]
    excluded: Mapping[str, Layer]
    partial: bool = False
    discovered: tuple[str, ...] = ()  # the floor's discovered tags (partial: the latest full round's too)
    mode: Mode | None = None  # the mode the round ran in, if the input says (else: the configured mode)

    @property
    def round_id(self) -> str:
        return f"{self.model}@{iso(self.round_ts)}"


@dataclass(frozen=True, slots=True)
class ReplayHistory:
    rounds: tuple[ReplayRound, ...]

    @property
    def end(self) -> datetime | None:
        return self.rounds[-1].round_ts if self.rounds else None

    @property
    def status_rows(self) -> int:
        return sum(len(r.statuses) for r in self.rounds)

    def in_mode(self, mode: Mode | None) -> ReplayHistory:
        """Every round replayed in `mode` (a `--set mode=...` what-if), whatever the lines recorded."""
        return ReplayHistory(tuple(replace(r, mode=mode) for r in self.rounds))


@dataclass(frozen=True, slots=True)
class _Change:
    """Exclusions of one layer in force from `ts` on (None: from the start) for `model` (None: all)."""

    ts: datetime | None
    model: str | None
    layer: Layer
    items: tuple[tuple[str, datetime | None], ...]  # (tag or slug, until)
    lineno: int


def iso(ts: datetime) -> str:
    """UTC ISO 8601 with a Z, as the input uses it."""
    return ts.astimezone(UTC).isoformat().replace("+00:00", "Z")


class _Parser:
    def __init__(self) -> None:
        self.statuses: dict[tuple[str, datetime], dict[str, RoundStatus]] = defaultdict(dict)
        self.partial: dict[tuple[str, datetime], bool] = {}
        self.modes: dict[tuple[str, datetime], Mode | None] = {}
        self.changes: list[_Change] = []
        self._ts_cache: dict[str, datetime] = {}

    def ts(self, value: Any, lineno: int, key: str = "round_ts") -> datetime:
        if not isinstance(value, str):
            raise ReplayInputError(lineno, f"{key} must be an ISO 8601 string (got {value!r})")
        cached = self._ts_cache.get(value)
        if cached is None:
            try:
                parsed = datetime.fromisoformat(value)
            except ValueError:
                raise ReplayInputError(lineno, f"{key} is not an ISO 8601 time (got {value!r})") from None
            cached = (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)
            self._ts_cache[value] = cached
        return cached

    def line(self, obj: Any, lineno: int) -> None:
        if not isinstance(obj, dict):
            raise ReplayInputError(lineno, "expected a JSON object")
        model = obj.get("model")
        if model is not None and (not isinstance(model, str) or not model):
            raise ReplayInputError(lineno, f"model must be a non-empty string (got {model!r})")
        has_status = "status" in obj or "tag" in obj
        layers = [layer for layer in _LAYERS if layer.value in obj]
        if not has_status and not layers:
            raise ReplayInputError(lineno, "expected a status line (round_ts, model, tag, status) "
                                           "or an exclusion line (builtin/operational)")
        if has_status:
            self.status(obj, model, lineno)
        for layer in layers:
            ts = self.ts(obj["round_ts"], lineno) if "round_ts" in obj else None
            items = self.items(obj[layer.value], layer, lineno)
            self.changes.append(_Change(ts, model, layer, items, lineno))

    def status(self, obj: dict[str, Any], model: str | None, lineno: int) -> None:
        if model is None:
            raise ReplayInputError(lineno, "status line without model")
        if "round_ts" not in obj:
            raise ReplayInputError(lineno, "status line without round_ts")
        ts = self.ts(obj["round_ts"], lineno)
        tag, status = obj.get("tag"), str(obj.get("status"))
        if not isinstance(tag, str) or not tag:
            raise ReplayInputError(lineno, f"tag must be a non-empty string (got {tag!r})")
        try:
            st = RoundStatus(status)
        except ValueError:
            raise ReplayInputError(lineno, f"status must be one of clean, fail, transport, inconclusive "
                                           f"(got {status!r})") from None
        partial = obj.get("partial", False)
        if not isinstance(partial, bool):
            raise ReplayInputError(lineno, f"partial must be true or false (got {partial!r})")
        if self.partial.setdefault((model, ts), partial) is not partial:
            raise ReplayInputError(lineno, f"partial differs between the lines of {model} at {iso(ts)}")
        raw_mode = obj.get("mode")
        try:
            mode = None if raw_mode is None else Mode(raw_mode)
        except ValueError:
            raise ReplayInputError(lineno, f"mode must be observe or enforce (got {raw_mode!r})") from None
        if self.modes.setdefault((model, ts), mode) is not mode:
            raise ReplayInputError(lineno, f"mode differs between the lines of {model} at {iso(ts)}")
        bucket = self.statuses[(model, ts)]
        if tag in bucket:
            raise ReplayInputError(lineno, f"second status for {model} {tag} at {iso(ts)}")
        bucket[tag] = st

    def items(self, value: Any, layer: Layer, lineno: int) -> tuple[tuple[str, datetime | None], ...]:
        values = [value] if isinstance(value, str | dict) else value
        if not isinstance(values, list):
            raise ReplayInputError(lineno, f"{layer} must be a list of tags (got {value!r})")
        out: list[tuple[str, datetime | None]] = []
        for item in values:
            if isinstance(item, str) and item:
                out.append((item, None))
            elif isinstance(item, dict) and isinstance(item.get("tag"), str) and item["tag"]:
                until = item.get("until")
                out.append((item["tag"], None if until is None else self.ts(until, lineno, "until")))
            else:
                raise ReplayInputError(lineno, f"{layer} items must be tags or {{\"tag\", \"until\"}} "
                                               f"objects (got {item!r})")
        return tuple(out)


def parse_replay(lines: Iterable[str | Mapping[str, Any]]) -> ReplayHistory:
    """Parse and validate replay input (strings are JSON lines; mappings are taken as already parsed)."""
    parser = _Parser()
    for lineno, raw in enumerate(lines, start=1):
        if isinstance(raw, str):
            if not raw.strip():
                continue
            try:
                obj: Any = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ReplayInputError(lineno, f"not JSON ({exc.msg} at column {exc.colno})") from None
        else:
            obj = dict(raw)
        parser.line(obj, lineno)
    far_past = datetime.min.replace(tzinfo=UTC)
    changes = sorted(parser.changes, key=lambda c: (c.ts or far_past, c.lineno))
    in_force: dict[tuple[Layer, str | None], tuple[tuple[str, datetime | None], ...]] = {}
    rounds: list[ReplayRound] = []
    last_full: dict[str, tuple[str, ...]] = {}
    i = 0
    for model, ts in sorted(parser.statuses, key=lambda k: (k[1], k[0])):
        while i < len(changes) and (changes[i].ts or far_past) <= ts:
            in_force[(changes[i].layer, changes[i].model)] = changes[i].items
            i += 1
        statuses = parser.statuses[(model, ts)]
        partial = parser.partial.get((model, ts), False)
        discovered = tuple(sorted(set(statuses) | (set(last_full.get(model, ())) if partial else set())))
        if not partial:
            last_full[model] = discovered
        excluded: dict[str, Layer] = {}
        for layer in _LAYERS:
            items = [t for t, until in (*in_force.get((layer, model), ()), *in_force.get((layer, None), ()))
                     if until is None or until > ts]
            for tag in discovered:
                if tag not in excluded and any(matches(item, tag) for item in items):
                    excluded[tag] = layer
        rounds.append(ReplayRound(model, ts, dict(sorted(statuses.items())), excluded, partial, discovered,
                                  parser.modes.get((model, ts))))
    return ReplayHistory(tuple(rounds))


def build_replay_lines(statuses: pd.DataFrame) -> Iterator[dict[str, Any]]:
    """A round-status history (columns round_ts, model, tag, status; optional boolean `partial` and `mode`)
    -> replay input lines, in time order; lines of a partial round carry `"partial": true`, and every line
    the round's `"mode"` when the history has it.

    Naive timestamps are taken as UTC. The store feeds this from its `rounds`/`outcomes` history.
    """
    if statuses.empty:
        return
    ts = pd.to_datetime(statuses["round_ts"], utc=True)
    partial = statuses["partial"].fillna(False).astype(bool) if "partial" in statuses else False
    modes = statuses["mode"] if "mode" in statuses else None
    frame = pd.DataFrame({"round_ts": ts, "model": statuses["model"].astype(str),
                          "tag": statuses["tag"].astype(str), "status": statuses["status"].astype(str),
                          "partial": partial, "mode": modes})
    frame = frame.sort_values(["round_ts", "model", "tag"], kind="stable")
    for round_ts, model, tag, status, part, mode in zip(frame["round_ts"], frame["model"], frame["tag"],
                                                        frame["status"], frame["partial"], frame["mode"],
                                                        strict=True):
        line: dict[str, Any] = {"round_ts": iso(round_ts.to_pydatetime()), "model": model, "tag": tag,
                                "status": RoundStatus(status).value}
        if part:
            line["partial"] = True
        if isinstance(mode, str) and mode:
            line["mode"] = Mode(mode).value
        yield line
