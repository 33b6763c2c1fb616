"""The records of one round's probing: the endpoint probed, each attempt on the wire, and what the contracts said.

Frozen dataclasses: the pure core passes them around, the shell stores them (tasks/store/records.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from tasks.core.vocabulary import ErrorClass, Mode, Outcome


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One provider route serving a model, as discovery reports it."""

    model: str
    tag: str  # e.g. "deepinfra/fp8"
    provider_name: str  # display name, e.g. "DeepInfra"; what responses report in "provider"
    quantization: str | None = None
    supported_parameters: tuple[str, ...] = ()
    status: int | None = None
    context_length: int | None = None
    # Listed pricing, USD (OpenRouter's `pricing`, after its `discount`); None when not listed.
    prompt_price_usd: float | None = None  # per prompt token
    completion_price_usd: float | None = None  # per completion token
    request_price_usd: float | None = None  # per request
    # OpenRouter's own figures from the listing (docs/openrouter-api.md 1a), None when it gives none. Evidence
    # for a suspicion (tasks/core/suspicion.py), never a verdict.
    uptime_last_5m: float | None = None  # percent 0..100, rate-limited requests excluded
    uptime_last_30m: float | None = None
    uptime_last_1d: float | None = None
    latency_p50_ms: float | None = None  # latency_last_30m: time to first token, ms
    latency_p75_ms: float | None = None
    latency_p90_ms: float | None = None
    latency_p99_ms: float | None = None
    throughput_p50: float | None = None  # throughput_last_30m: tokens/s (p99 is the lowest)
    throughput_p75: float | None = None
    throughput_p90: float | None = None
    throughput_p99: float | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cost: float | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of a reply, assembled by `index` from streamed `delta.tool_calls` fragments.

    ``arguments`` is the raw text the model produced (JSON by contract, not parsed here): the tools contract
    judges whether it parses and validates.
    """

    index: int
    id: str | None = None
    name: str = ""
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One HTTP request to one endpoint for one contract, with everything the wire showed.

    Timings are milliseconds measured with a monotonic clock from just before the request was sent.
    ``text`` is the concatenated content deltas, capped (``text_truncated`` says when the cap cut it);
    ``reasoning`` likewise for reasoning deltas. ``error_class`` is None when the exchange completed.
    """

    round_id: str
    model: str
    tag: str
    provider_name: str  # the endpoint's expected display name
    contract: str  # a `Contract` for the built-in contracts (vocabulary.as_contract)
    attempt_no: int  # 1 for the first request; confirmations are 2, 3
    started_at: datetime  # UTC
    language: str | None = None  # the prompt's language (language contract; "en" elsewhere)
    http_status: int | None = None
    ttft_ms: float | None = None  # first non-empty content/reasoning delta
    total_ms: float | None = None
    chunk_count: int = 0  # data: chunks parsed (comments and blank lines excluded)
    keepalive_count: int = 0  # SSE comment lines seen
    finish_reason: str | None = None
    native_finish_reason: str | None = None
    served_provider: str | None = None  # the "provider" field of the response
    usage: Usage = field(default_factory=Usage)
    text: str = ""
    text_truncated: bool = False
    reasoning: str = ""
    error_class: ErrorClass | None = None
    error_code: int | None = None  # HTTP status of the error, or a mid-stream error.code
    error_detail: str | None = None  # one line, never containing a secret
    retry_after_s: float | None = None
    tool_calls: tuple[ToolCall, ...] = ()  # in index order; empty when the reply called no tool

    @property
    def attempt_id(self) -> str:
        return f"{self.round_id}:{self.tag}:{self.contract}:{self.attempt_no}"

    @property
    def is_pin_mismatch(self) -> bool:
        return self.served_provider is not None and self.served_provider != self.provider_name


@dataclass(frozen=True, slots=True)
class Judgement:
    """What a contract says about some attempts: an outcome, a machine reason, a one-line evidence."""

    outcome: Outcome
    reason: str  # machine reason, e.g. "ok", "ttft_exceeded", "language_mix", "pin_mismatch"
    evidence: str = ""  # Gatus-style resolved value, e.g. "ttft_ms (12400) > 10000"


@dataclass(frozen=True, slots=True)
class ContractResult:
    """The outcome of one contract for one endpoint in one round (a row of `outcomes`)."""

    round_id: str
    model: str
    tag: str
    contract: str  # a `Contract` for the built-in contracts
    outcome: Outcome
    reason: str
    evidence: str = ""
    attempt_ids: tuple[str, ...] = ()
    language: str | None = None


@dataclass(frozen=True, slots=True)
class RoundInfo:
    round_id: str
    model: str
    round_ts: datetime  # UTC; the policy's "now" for this round
    mode: Mode
    partial: bool = False  # a confirmation round: only some endpoints probed (tasks/core/confirm.py)
    run_id: str | None = None  # the run that chose round_ts (a cycle's flow run): another run never replaces it
