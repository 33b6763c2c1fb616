"""Tool calling (issue 13; docs/design.md "tools"): a call where one is needed, none where none is, and calls a
client can execute.

The request (tasks/core/tool_prompts.py) has two turns, one attempt each: odd attempt numbers are the **call
turn** (the user asks for a dice roll only `roll_dice` can give), even ones the **control turn** (a plain
description; no tool helps).

Per attempt, after the exchange rules of tasks/core/contracts/common.py (transport stays transport; a protocol
violation or an upstream failure reported as success is judged once, whatever the turn) and the encoding check
(`encoding_corruption` on broken decoding in the text or the arguments):

call turn     no tool call, completed (finish `stop`, or `tool_calls` without a call)   fail `no_call`
              a call to a tool that was not offered                                   fail `unknown_tool`
              arguments that do not parse as a JSON object                            fail `bad_json_args`
              (`arguments: ""` to a tool without required parameters is `{}`, a valid call)
              arguments that break the tool's JSON Schema (the path is the evidence)  fail `schema_violation`
              `content_filter` and no call                                            fail `content_filter`
              only calls to another offered tool, all valid                         inconclusive `other_tool`
              cut by `length` (or our cap) before the call was whole                  inconclusive `truncated`
              a valid `roll_dice` call                                                pass `ok`
control turn  any tool call                                                           fail `unneeded_call`
              a text reply and no call                                                pass `ok`
              nothing at all (no text, no call)                                     inconclusive `empty_reply`

The contract: the first failing turn (call turn first), else the call turn's pass (the control turn's state
is in the evidence), else the call turn's transport, else inconclusive.

Peer comparison (`compare_with_peers`, applied by tasks/core/judge.py over one model's endpoints in the round),
with K2 Vendor Verifier's figures: trigger rate = call turns answered with `finish_reason == "tool_calls"` /
call turns; ``tool_call_f1`` = F1 of `finish_reason == "tool_calls"` against the reference (call turn:
yes, control turn: no); schema accuracy = valid calls / calls. An endpoint whose trigger rate is at least
`PEER_GAP` below the median of its peers' (two peers or more with evidence) gets the figures appended to its
evidence. When no endpoint of the model triggered at all (three or more with evidence), a `no_call` says
more about the model than about any provider: it becomes inconclusive `no_call_everywhere`.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tasks.config import CanaryConfig
from tasks.core.contracts.common import (
    encoding_judgement,
    exchange_judgement,
    exchange_override,
    latest_judgement,
)
from tasks.core.contracts.spec import ContractSpec, PeerRound
from tasks.core.contracts.structured import schema_error
from tasks.core.tool_prompts import CALL_TURN, CONTROL_TURN, TOOLS_MAX_TOKENS, tools_body_fields
from tasks.core.types import Attempt, Contract, Endpoint, Judgement, Outcome, ToolCall

#: A trigger rate this far below the peers' median is flagged with the figures.
PEER_GAP = 0.5
#: Peers (other endpoints of the model with evidence) needed before the comparison says anything.
MIN_PEERS = 2
#: Endpoints with evidence needed before "nobody called" downgrades a no_call.
MIN_ENDPOINTS_FOR_MODEL_VERDICT = 3
EXCERPT_CHARS = 60


_DEFAULT_SCHEMAS: dict[str, dict[str, Any]] = {}


def default_schemas() -> dict[str, dict[str, Any]]:
    """The offered tools' parameter schemas, copied once per process (read-only: judging never changes them,
    and structured.schema_error keeps one validator per schema object)."""
    if not _DEFAULT_SCHEMAS:
        from tasks.core.tool_prompts import tool_schemas

        _DEFAULT_SCHEMAS.update(tool_schemas())
    return _DEFAULT_SCHEMAS


def _turn(a: Attempt) -> str:
    from tasks.core.tool_prompts import tools_turn

    return tools_turn(a.attempt_no)


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= EXCERPT_CHARS else flat[: EXCERPT_CHARS - 1] + "…")


def call_problem(call: ToolCall, schemas: Mapping[str, Mapping[str, Any]]) -> Judgement | None:
    """Why a client could not execute this call (unknown tool, bad JSON, schema violation), or None."""
    label = f"call[{call.index}]"
    if call.name not in schemas:
        offered = ", ".join(sorted(schemas))
        return Judgement(
            Outcome.FAIL, "unknown_tool", f"{label} name ({call.name or 'none'!s}) not offered ({offered})"
        )
    schema = schemas[call.name]
    args: Any = None
    if call.arguments.strip():
        try:
            args = json.loads(call.arguments)
        except (json.JSONDecodeError, RecursionError) as exc:
            detail = f"{exc.msg} at char {exc.pos}" if isinstance(exc, json.JSONDecodeError) else "too deep"
            return Judgement(
                Outcome.FAIL,
                "bad_json_args",
                f"{label} {call.name} arguments do not parse ({detail}): {_excerpt(call.arguments)}",
            )
    elif not schema.get("required"):
        args = {}  # `arguments: ""` to a tool without required parameters: no arguments, i.e. {}
    if not isinstance(args, dict):
        return Judgement(
            Outcome.FAIL,
            "bad_json_args",
            f"{label} {call.name} arguments are not a JSON object: {_excerpt(call.arguments)}",
        )
    violation = schema_error(args, schema)
    if violation is not None:
        return Judgement(Outcome.FAIL, "schema_violation", f"{label} {call.name} {violation}")
    return None


def judge_attempt(a: Attempt, schemas: Mapping[str, Mapping[str, Any]], expected: str) -> Judgement:
    broken = exchange_override(a) or exchange_judgement(a)
    if broken is not None:
        return broken
    corrupted = encoding_judgement("\n".join([a.text, *(c.arguments for c in a.tool_calls)]))
    if corrupted is not None:
        return corrupted
    if _turn(a) == "control":
        return _control_turn(a)
    return _call_turn(a, schemas, expected)


def _control_turn(a: Attempt) -> Judgement:
    """The control turn needs no tool: a call fails it, text passes it."""
    calls = a.tool_calls
    if calls:
        names = ", ".join(c.name or "?" for c in calls)
        return Judgement(
            Outcome.FAIL,
            "unneeded_call",
            f"control turn: tool_calls ({len(calls)}: {names}), finish_reason ({a.finish_reason})",
        )
    if not a.text.strip():
        return Judgement(
            Outcome.INCONCLUSIVE,
            "empty_reply",
            f"control turn: no text, finish_reason ({a.finish_reason})",
        )
    return Judgement(Outcome.PASS, "ok", f"control turn: no call, text_chars ({len(a.text.strip())})")


def _call_turn(a: Attempt, schemas: Mapping[str, Mapping[str, Any]], expected: str) -> Judgement:
    """The call turn needs the `expected` tool called with arguments its schema takes."""
    calls = a.tool_calls
    if not calls:
        if a.finish_reason == "content_filter":
            return Judgement(Outcome.FAIL, "content_filter", "call turn: finish_reason (content_filter)")
        if a.finish_reason == "length":
            return Judgement(Outcome.INCONCLUSIVE, "truncated", "call turn: finish_reason (length), no call")
        return Judgement(
            Outcome.FAIL,
            "no_call",
            f"call turn: no tool call, finish_reason ({a.finish_reason}), text {_excerpt(a.text)}",
        )
    problems = [p for p in (call_problem(c, schemas) for c in calls) if p is not None]
    if problems:
        first = problems[0]
        if first.reason == "bad_json_args" and (a.finish_reason == "length" or a.text_truncated):
            return Judgement(Outcome.INCONCLUSIVE, "truncated", f"{first.evidence}; cut by length or cap")
        return first
    if not any(c.name == expected for c in calls):
        names = ", ".join(c.name for c in calls)
        return Judgement(
            Outcome.INCONCLUSIVE, "other_tool", f"call turn: called ({names}), expected {expected}"
        )
    call = next(c for c in calls if c.name == expected)
    return Judgement(
        Outcome.PASS,
        "ok",
        f"call turn: {call.name} {_excerpt(call.arguments)} valid, finish_reason ({a.finish_reason})",
    )


def judge(
    attempts: Sequence[Attempt],
    cfg: CanaryConfig,
    *,
    schemas: Mapping[str, Mapping[str, Any]] | None = None,
    expected: str | None = None,
) -> Judgement:
    from tasks.core.tool_prompts import EXPECTED_TOOL

    resolved = default_schemas() if schemas is None else schemas
    want = EXPECTED_TOOL if expected is None else expected
    ordered = sorted(attempts, key=lambda a: a.attempt_no)
    call = [judge_attempt(a, resolved, want) for a in ordered if _turn(a) == "call"]
    control = [judge_attempt(a, resolved, want) for a in ordered if _turn(a) == "control"]
    call_j = latest_judgement(call) if call else None
    control_j = latest_judgement(control) if control else None
    for j in (call_j, control_j):
        if j is not None and j.outcome is Outcome.FAIL:
            return j
    if call_j is None:
        if control_j is not None and control_j.outcome is Outcome.TRANSPORT:
            return control_j
        return Judgement(Outcome.INCONCLUSIVE, "no_call_turn", "call turn not sent")
    if call_j.outcome is Outcome.PASS:
        tail = f"{control_j.outcome} {control_j.reason}" if control_j is not None else "not sent"
        return replace(call_j, evidence=f"{call_j.evidence}; control turn {tail}")
    return call_j


# --- peer comparison (K2 Vendor Verifier figures) ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolFigures:
    """One endpoint's tool-calling figures over the round's completed tools attempts."""

    call_turns: int
    triggered: int  # call turns with finish_reason == "tool_calls"
    control_turns: int
    false_triggers: int  # control turns with finish_reason == "tool_calls"
    calls: int
    valid_calls: int

    @property
    def trigger_rate(self) -> float | None:
        return self.triggered / self.call_turns if self.call_turns else None

    @property
    def tool_call_f1(self) -> float | None:
        tp, fp, fn = self.triggered, self.false_triggers, self.call_turns - self.triggered
        return 2 * tp / (2 * tp + fp + fn) if (tp + fp + fn) else None

    @property
    def schema_accuracy(self) -> float | None:
        return self.valid_calls / self.calls if self.calls else None


def figures(
    attempts: Sequence[Attempt], schemas: Mapping[str, Mapping[str, Any]] | None = None
) -> ToolFigures:
    """K2VV's counts over the attempts whose exchange completed (transport and HTTP errors say nothing)."""
    resolved = default_schemas() if schemas is None else schemas
    done = [a for a in attempts if exchange_judgement(a) is None]
    call = [a for a in done if _turn(a) == "call"]
    control = [a for a in done if _turn(a) == "control"]
    all_calls = [c for a in done for c in a.tool_calls]
    return ToolFigures(
        call_turns=len(call),
        triggered=sum(a.finish_reason == "tool_calls" for a in call),
        control_turns=len(control),
        false_triggers=sum(a.finish_reason == "tool_calls" for a in control),
        calls=len(all_calls),
        valid_calls=sum(call_problem(c, resolved) is None for c in all_calls),
    )


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def compare_with_peers(
    attempts_by_tag: Mapping[str, Sequence[Attempt]],
    judgements_by_tag: Mapping[str, Judgement],
    schemas: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Judgement]:
    """The tools judgements of one model's endpoints, with the peer comparison applied (module docstring)."""
    figs = {tag: figures(attempts_by_tag.get(tag, ()), schemas) for tag in judgements_by_tag}
    with_evidence = [t for t, f in figs.items() if f.call_turns]
    nobody_triggered = len(with_evidence) >= MIN_ENDPOINTS_FOR_MODEL_VERDICT and not any(
        figs[t].triggered for t in with_evidence
    )
    out: dict[str, Judgement] = {}
    for tag, j in judgements_by_tag.items():
        mine = figs[tag]
        peers = [figs[t] for t in with_evidence if t != tag]
        if j.reason == "no_call" and nobody_triggered:
            j = Judgement(
                Outcome.INCONCLUSIVE,
                "no_call_everywhere",
                f"{j.evidence}; no endpoint of the model triggered ({len(with_evidence)} with evidence)",
            )
        elif mine.trigger_rate is not None and len(peers) >= MIN_PEERS:
            peer_rate = _median([p.trigger_rate for p in peers])
            if peer_rate is not None and peer_rate - mine.trigger_rate >= PEER_GAP:
                note = (
                    f"trigger rate {mine.triggered}/{mine.call_turns} vs peers' median {_fmt(peer_rate)} "
                    f"({len(peers)} peers); tool_call_f1 {_fmt(mine.tool_call_f1)} vs "
                    f"{_fmt(_median([p.tool_call_f1 for p in peers]))}; schema accuracy "
                    f"{_fmt(mine.schema_accuracy)} vs {_fmt(_median([p.schema_accuracy for p in peers]))}"
                )
                j = replace(j, evidence=f"{j.evidence}; {note}")
        out[tag] = j
    return out


def lists_tools(endpoint: Endpoint) -> bool:
    """Probed only where `supported_parameters` include "tools": a provider that does not claim tool calling is
    never judged on it."""
    return "tools" in endpoint.supported_parameters


def judge_peers(peers: PeerRound, cfg: CanaryConfig) -> dict[str, Judgement]:
    """Round-level form of `compare_with_peers`: the model's endpoints judged on tools this round."""
    attempts_by_tag = {t: [a for a in peers.attempts[t] if a.contract == SPEC.name] for t in peers.judged}
    return compare_with_peers(attempts_by_tag, peers.judged)


#: Two requests per probe, the call turn and the control turn; the model's default sampling.
SPEC = ContractSpec(
    name=Contract.TOOLS,
    judge=judge,
    body=lambda attempt_no, language: tools_body_fields(attempt_no),
    max_tokens=TOOLS_MAX_TOKENS,
    applies_to=lists_tools,
    attempts=(CALL_TURN, CONTROL_TURN),
    round_judge=judge_peers,
    hard_by_default=True,
)
