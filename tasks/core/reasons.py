"""Every machine reason the contracts and the judge produce (ContractResult.reason), and the formed families."""

from __future__ import annotations

from enum import StrEnum


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
    UPSTREAM_ERROR = "upstream_error"  # a failed upstream hop reported inside a 200 (native_finish_reason)
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
    LOW_CONFIDENCE = "low_confidence"  # no language reaches SWITCH_CONFIDENCE for the whole reply
    SENTENCES_DISAGREE = "sentences_disagree"  # confidently another language as a whole, not per sentence
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
