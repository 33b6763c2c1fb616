"""Silent filters and refusals (docs/requirements.md 2.2), judged on one fixed roleplay continuation.

`fail` reasons, in the order checked:
* `content_filter`: finish_reason `content_filter` (checked before transport: the filter spoke);
* `empty_reply`: nothing but whitespace;
* `refusal_pattern`: a high-confidence, anchored refusal (tasks/core/contracts/refusal_patterns.py);
* `truncated`: finish_reason `length` with fewer than `LENGTH_FACTOR` x REFUSAL_MIN_EXPECTED_CHARS
  characters (max_tokens is generous, so the endpoint capped the output far below what was asked);
* `too_short`: a completed reply below REFUSAL_MIN_EXPECTED_CHARS (tasks/core/prompts.py: the scene asks for
  three to five paragraphs; a reply this short was cut by something other than the model's judgement).
A 200 that was not an event stream or did not decode -> `fail` `protocol_violation`, an upstream failure reported
as success -> `fail` `upstream_error` (both checked first, tasks/core/classify.py). Broken decoding in the reply
(mojibake, U+FFFD, byte-level BPE symbols) -> `fail` `encoding_corruption`, before the text rules.
Transport -> `transport`. Positive controls are applied per round in tasks/core/judge.py, not here.
"""

from __future__ import annotations

from collections.abc import Sequence

from tasks.config import CanaryConfig
from tasks.core.contracts.common import encoding_judgement, exchange_judgement, exchange_override, judge_each
from tasks.core.contracts.refusal_patterns import find_refusal
from tasks.core.contracts.spec import ContractSpec
from tasks.core.prompts import REFUSAL_MAX_TOKENS, REFUSAL_MIN_EXPECTED_CHARS, ROLEPLAY_TEMPERATURE, refusal_body
from tasks.core.types import Attempt, Contract, Judgement, Outcome, Reason

#: finish_reason `length` below this multiple of REFUSAL_MIN_EXPECTED_CHARS is a truncation.
LENGTH_FACTOR = 2.0


def judge_attempt(a: Attempt, min_chars: int = REFUSAL_MIN_EXPECTED_CHARS) -> Judgement:
    violation = exchange_override(a)
    if violation is not None:
        return violation
    if a.finish_reason == "content_filter":
        return Judgement(
            Outcome.FAIL,
            Reason.CONTENT_FILTER,
            f"finish_reason (content_filter), native ({a.native_finish_reason})",
        )
    broken = exchange_judgement(a)
    if broken is not None:
        return broken
    corrupted = encoding_judgement(a.text)
    if corrupted is not None:
        return corrupted
    text = a.text.strip()
    if not text:
        return Judgement(
            Outcome.FAIL, Reason.EMPTY_REPLY, f"text_chars (0), finish_reason ({a.finish_reason})"
        )
    found = find_refusal(a.text)
    if found is not None:
        lang, matched = found
        return Judgement(
            Outcome.FAIL,
            Reason.REFUSAL_PATTERN,
            f"refusal ({lang}) {matched[:80]!r} in text_chars ({len(text)})",
        )
    n = len(text)
    if a.text_truncated:
        return Judgement(
            Outcome.PASS, Reason.OK, f"text_chars ({n}+, capped), finish_reason ({a.finish_reason})"
        )
    length_min = int(min_chars * LENGTH_FACTOR)
    if a.finish_reason == "length" and n < length_min:
        return Judgement(
            Outcome.FAIL, Reason.TRUNCATED, f"finish_reason (length), text_chars ({n}) < {length_min}"
        )
    if n < min_chars:
        return Judgement(
            Outcome.FAIL,
            Reason.TOO_SHORT,
            f"text_chars ({n}) < {min_chars}, finish_reason ({a.finish_reason})",
        )
    return Judgement(
        Outcome.PASS, Reason.OK, f"text_chars ({n}) >= {min_chars}, finish_reason ({a.finish_reason})"
    )


def judge(attempts: Sequence[Attempt], cfg: CanaryConfig) -> Judgement:
    return judge_each(attempts, judge_attempt)


SPEC = ContractSpec(
    name=Contract.REFUSAL,
    judge=judge,
    body=refusal_body,
    max_tokens=REFUSAL_MAX_TOKENS,
    temperature=ROLEPLAY_TEMPERATURE,
    free_text=True,
    hard_by_default=True,
)
