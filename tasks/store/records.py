"""Conversions between the record types of tasks/core/types.py and table rows (dicts keyed by column)."""

from __future__ import annotations

import json
from typing import Any

from tasks.core.types import Attempt, ContractResult, Endpoint, ErrorClass, Outcome, ToolCall, Usage, as_contract
from tasks.runtime.secrets import redact_known_secrets_opt
from tasks.store.rows import one_line, utc

#: OpenRouter's per-endpoint figures kept with each round's endpoints (migration 9): Endpoint fields = columns.
SIGNAL_COLUMNS = (
    "uptime_last_5m", "uptime_last_30m", "uptime_last_1d",
    "latency_p50_ms", "latency_p75_ms", "latency_p90_ms", "latency_p99_ms",
    "throughput_p50", "throughput_p75", "throughput_p90", "throughput_p99",
)

#: Defensive cap on stored reply text, characters (probes already cap at text_cap_bytes of UTF-8).
MAX_TEXT_CHARS = 64 * 1024


def endpoint_row(round_id: str, e: Endpoint) -> dict[str, Any]:
    return {
        "round_id": round_id,
        "model": e.model,
        "tag": e.tag,
        "provider_name": e.provider_name or None,
        "quantization": e.quantization,
        "endpoint_status": e.status,
        "context_length": e.context_length,
        "supported_parameters": list(e.supported_parameters),
        "prompt_price_usd": e.prompt_price_usd,
        "completion_price_usd": e.completion_price_usd,
        "request_price_usd": e.request_price_usd,
        **{name: getattr(e, name) for name in SIGNAL_COLUMNS},
    }


def attempt_row(a: Attempt) -> dict[str, Any]:
    text = a.text if len(a.text) <= MAX_TEXT_CHARS else a.text[:MAX_TEXT_CHARS]
    return {
        "attempt_id": a.attempt_id,
        "round_id": a.round_id,
        "model": a.model,
        "tag": a.tag,
        "provider_name": a.provider_name,
        "contract": str(a.contract),
        "attempt_no": a.attempt_no,
        "language": a.language,
        "started_at": utc(a.started_at),
        "http_status": a.http_status,
        "ttft_ms": a.ttft_ms,
        "total_ms": a.total_ms,
        "chunk_count": a.chunk_count,
        "keepalive_count": a.keepalive_count,
        "finish_reason": a.finish_reason,
        "native_finish_reason": a.native_finish_reason,
        "served_provider": a.served_provider,
        "pin_mismatch": a.is_pin_mismatch,
        "prompt_tokens": a.usage.prompt_tokens,
        "completion_tokens": a.usage.completion_tokens,
        "total_tokens": a.usage.total_tokens,
        "cost": a.usage.cost,
        "text": redact_known_secrets_opt(text),
        "text_truncated": a.text_truncated or text != a.text,
        "reasoning": redact_known_secrets_opt(a.reasoning[:MAX_TEXT_CHARS]),
        "error_class": str(a.error_class) if a.error_class else None,
        "error_code": a.error_code,
        "error_detail": one_line(a.error_detail),
        "retry_after_s": a.retry_after_s,
        "tool_calls": tool_calls_json(a.tool_calls),
    }


def tool_calls_json(calls: tuple[ToolCall, ...]) -> str:
    """The `attempts.tool_calls` value: a JSON array (arguments redacted and capped like the text)."""
    return json.dumps(
        [
            {"index": c.index, "id": c.id, "name": c.name,
             "arguments": redact_known_secrets_opt(c.arguments[:MAX_TEXT_CHARS])}
            for c in calls
        ],
        ensure_ascii=False,
    )


def tool_calls_from_json(value: Any) -> tuple[ToolCall, ...]:
    """Back from the column (NULL, from a row landed before migration 4, is no call)."""
    if value is None:
        return ()
    items = json.loads(value) if isinstance(value, str) else value
    return tuple(
        ToolCall(
            index=int(c["index"]),
            id=c.get("id"),
            name=c.get("name") or "",
            arguments=c.get("arguments") or "",
        )
        for c in items
    )


def attempt_from_row(r: dict[str, Any]) -> Attempt:
    return Attempt(
        round_id=r["round_id"],
        model=r["model"],
        tag=r["tag"],
        provider_name=r["provider_name"],
        contract=as_contract(r["contract"]),
        attempt_no=r["attempt_no"],
        started_at=r["started_at"],
        language=r["language"],
        http_status=r["http_status"],
        ttft_ms=r["ttft_ms"],
        total_ms=r["total_ms"],
        chunk_count=r["chunk_count"],
        keepalive_count=r["keepalive_count"],
        finish_reason=r["finish_reason"],
        native_finish_reason=r["native_finish_reason"],
        served_provider=r["served_provider"],
        usage=Usage(r["prompt_tokens"], r["completion_tokens"], r["total_tokens"], r["cost"]),
        text=r["text"],
        text_truncated=r["text_truncated"],
        reasoning=r["reasoning"],
        error_class=ErrorClass(r["error_class"]) if r["error_class"] else None,
        error_code=r["error_code"],
        error_detail=r["error_detail"],
        retry_after_s=r["retry_after_s"],
        tool_calls=tool_calls_from_json(r.get("tool_calls")),
    )


def outcome_row(round_id: str, c: ContractResult) -> dict[str, Any]:
    if c.round_id != round_id:
        raise ValueError(f"outcome of round {c.round_id!r} landed under {round_id!r}")
    return {
        "round_id": round_id,
        "model": c.model,
        "tag": c.tag,
        "contract": str(c.contract),
        "outcome": str(c.outcome),
        "reason": c.reason,
        "evidence": redact_known_secrets_opt(c.evidence),
        "attempt_ids": list(c.attempt_ids),
        "language": c.language,
    }


def outcome_from_row(r: dict[str, Any]) -> ContractResult:
    return ContractResult(
        round_id=r["round_id"],
        model=r["model"],
        tag=r["tag"],
        contract=as_contract(r["contract"]),
        outcome=Outcome(r["outcome"]),
        reason=r["reason"],
        evidence=r["evidence"],
        attempt_ids=tuple(r["attempt_ids"]),
        language=r["language"],
    )
