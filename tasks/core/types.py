"""The canary's vocabulary as types (docs/design.md "Vocabulary").

Enum values are exactly docs/design.md's strings; they are what lands in DuckDB, JSON and Slack.
Records are frozen dataclasses: the pure core passes them around, the shell stores them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class Contract(StrEnum):
    TTFT = "ttft"
    REFUSAL = "refusal"
    STRUCTURED = "structured"
    LANGUAGE = "language"
    OPENING = "opening"  # judged over the round's text replies; never probed on its own
    TOOLS = "tools"  # function calling; probed only where `supported_parameters` include "tools"


#: The contracts that send requests (opening is judged from the others' replies).
PROBED_CONTRACTS: tuple[Contract, ...] = (
    Contract.TTFT,
    Contract.REFUSAL,
    Contract.STRUCTURED,
    Contract.LANGUAGE,
    Contract.TOOLS,  # tasks/core/plan.py sends it only to endpoints that list "tools"
)


class Outcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    TRANSPORT = "transport"

    def is_quality(self) -> bool:
        """pass and fail say something about the endpoint's output; the others do not."""
        return self in (Outcome.PASS, Outcome.FAIL)


class RoundStatus(StrEnum):
    CLEAN = "clean"
    FAIL = "fail"
    TRANSPORT = "transport"
    INCONCLUSIVE = "inconclusive"


class ErrorClass(StrEnum):
    """What went wrong on the wire during one attempt (None on the attempt when nothing did)."""

    CONNECT = "connect"  # no TCP/TLS connection
    TIMEOUT = "timeout"  # no response (or no further bytes) within the budget
    HTTP_STATUS = "http_status"  # a non-200 HTTP response before any stream
    STREAM_CUT = "stream_cut"  # the stream ended before a finish_reason / [DONE]
    MIDSTREAM_ERROR = "midstream_error"  # an SSE chunk with a top-level "error"
    BAD_FRAME = "bad_frame"  # a broken exchange we cannot attribute (older rows: a bad SSE frame)
    PROTOCOL = "protocol_violation"  # HTTP 200, then a body that is not what was asked (tasks/core/classify.py)


class Mode(StrEnum):
    OBSERVE = "observe"
    ENFORCE = "enforce"


class Action(StrEnum):
    SUSPEND = "suspend"
    FLOOR_BLOCKED = "floor_blocked"
    RESTORE = "restore"
    EXPIRE = "expire"
    LIFT = "lift"
    WOULD_SUSPEND = "would_suspend"
    WOULD_RESTORE = "would_restore"
    WOULD_EXPIRE = "would_expire"
    WOULD_LIFT = "would_lift"


class Layer(StrEnum):
    BUILTIN = "builtin"
    OPERATIONAL = "operational"
    CANARY = "canary"


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
    contract: Contract
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
    contract: Contract
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


@dataclass(frozen=True, slots=True)
class EndpointState:
    """Policy state of one endpoint (docs/design.md "The quarantine policy"); one per (model, tag, mode).

    In observe mode the same machine runs on a shadow copy (mode="observe"), so switching modes never
    mixes real and shadow suspensions.
    """

    model: str
    tag: str
    mode: Mode = Mode.OBSERVE
    fail_streak: int = 0
    clean_streak: int = 0
    suspended_until: datetime | None = None
    suspended_at: datetime | None = None
    ladder_step: int = 0  # steps used in the current ladder episode (0 = none yet)
    last_suspension_end: datetime | None = None
    floor_blocked: bool = False  # a floor_blocked alert was already raised in this episode
    fail_rounds: tuple[str, ...] = ()  # round ids of the failing rounds in the current streak (evidence)
    clean_rounds: tuple[str, ...] = ()  # round ids of the clean rounds in the current streak

    @property
    def is_suspended(self) -> bool:
        return self.suspended_until is not None


@dataclass(frozen=True, slots=True)
class Decision:
    """One automatic or manual policy decision, with its evidence (a row of `decisions`)."""

    at: datetime
    model: str
    tag: str
    action: Action
    mode: Mode
    ladder_step: int = 0
    until: datetime | None = None
    reason: str = ""
    evidence_round_ids: tuple[str, ...] = ()
    round_id: str | None = None  # the round that produced it (None for manual lifts)
    actor: str = "canary"  # who: "canary" or the admin's name

    @property
    def decision_id(self) -> str:
        """Stable idempotency key (also the Slack outbox key)."""
        return f"{self.model}|{self.tag}|{self.action}|{self.mode}|{self.at.isoformat()}"


@dataclass(frozen=True, slots=True)
class OperationalExclusion:
    """An admin's runtime exclusion (the operational layer)."""

    tag: str
    reason: str
    who: str
    added_at: datetime
    model: str | None = None  # None = every model
    until: datetime | None = None


@dataclass(frozen=True, slots=True)
class BuiltinExclusion:
    """A reviewed entry of exclusions.toml: a tag or provider slug, optional model."""

    tag: str
    reason: str
    evidence: str
    date: str
    model: str | None = None


@dataclass(frozen=True, slots=True)
class IgnoreEntry:
    tag: str
    layer: Layer
    reason: str
    until: datetime | None = None


@dataclass(frozen=True, slots=True)
class IgnoreList:
    """The merged ignore list of one model: `ignore` is the sorted union of the entries' tags."""

    model: str
    ignore: tuple[str, ...]
    entries: tuple[IgnoreEntry, ...]

    def as_json(self) -> dict[str, object]:
        return {
            "model": self.model,
            "ignore": list(self.ignore),
            "entries": [
                {
                    "tag": e.tag,
                    "layer": str(e.layer),
                    "reason": e.reason,
                    "until": e.until.isoformat() if e.until else None,
                }
                for e in self.entries
            ],
        }


@dataclass(frozen=True, slots=True)
class Alert:
    """A message waiting in the outbox. `key` is the idempotency key: one send per key, ever."""

    key: str
    created_at: datetime
    kind: str  # suspend, would_suspend, restore, expire, lift, floor_blocked, probe_weak, pin_mismatch, ...
    model: str
    tag: str | None
    text: str  # plain-text fallback
    blocks_json: str = "[]"  # Block Kit blocks, JSON


@dataclass(frozen=True, slots=True)
class RouteEvent:
    """A router failover or degraded mark (a row of `route_events`)."""

    at: datetime
    key: str  # the routes-file key (model name or API key id; never the secret itself)
    tier: int
    upstream: str  # base URL + model (+ provider preferences summary)
    reason: str  # connect, http_429, http_503, first_chunk_timeout, stream_error_before_commit, ...
    latency_ms: float | None = None
    model: str | None = None


class Reason(StrEnum):
    """Every fixed machine reason the contracts and the judge produce (ContractResult.reason).

    Values are exactly the strings stored in DuckDB. Three families are formed from a code and are not
    members: `http_<status>` (`http_reason`), `midstream_<code>` (`midstream_reason`) and `control_<reason>`
    for a positive control that was neither caught nor missed (`control_reason`).
    """

    OK = "ok"
    # the exchange (tasks/core/classify.py)
    CONNECT = "connect"
    TIMEOUT = "timeout"
    STREAM_CUT = "stream_cut"
    BAD_FRAME = "bad_frame"
    MIDSTREAM_ERROR = "midstream_error"
    NO_RESPONSE = "no_response"
    PROVIDER_ERROR = "provider_error"
    PROTOCOL_VIOLATION = "protocol_violation"
    NO_ATTEMPTS = "no_attempts"
    # ttft
    TTFT_EXCEEDED = "ttft_exceeded"
    NO_TEXT = "no_text"
    # refusal
    CONTENT_FILTER = "content_filter"
    EMPTY_REPLY = "empty_reply"
    REFUSAL_PATTERN = "refusal_pattern"
    TRUNCATED = "truncated"
    TOO_SHORT = "too_short"
    # structured
    INVALID_JSON = "invalid_json"
    FENCED_JSON = "fenced_json"
    SCHEMA_VIOLATION = "schema_violation"
    TEXT_CAPPED = "text_capped"
    # language (tasks/core/langdetect.py produces the detector's reasons)
    LANGUAGE_SWITCH = "language_switch"
    LANGUAGE_MIX = "language_mix"
    ENCODING_CORRUPTION = "encoding_corruption"
    LOW_CONFIDENCE = "low_confidence"
    UNSUPPORTED_LANGUAGE = "unsupported_language"
    NO_MAJORITY = "no_majority"
    # opening
    FEW_REPLIES = "few_replies"
    CORRUPTED_OPENING = "corrupted_opening"
    PROMPT_SUSPECT = "prompt_suspect"
    # the judge (tasks/core/judge.py)
    PIN_MISMATCH = "pin_mismatch"
    CONTROL_CAUGHT = "control_caught"
    CONTROL_MISSED = "control_missed"
    PROBE_WEAK = "probe_weak"


def http_reason(status: int | None) -> str:
    """`http_<status>`: an HTTP error before the stream."""
    return f"http_{status}"


def midstream_reason(code: int | None) -> str:
    """`midstream_<code>`: an error chunk (or finish_reason error) whose code is a transport code."""
    return f"midstream_{code}"


def control_reason(reason: str) -> str:
    """`control_<reason>`: a positive control's refusal row that was neither caught nor missed."""
    return f"control_{reason}"
