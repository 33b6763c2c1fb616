"""Time to first token (docs/requirements.md 2.1): the first *text* delta, not headers or keep-alives.

* HTTP 200, and no text within `cfg.ttft_s` -> `fail` `ttft_exceeded`, even if keep-alives kept arriving and
  even if the stream was later cut or timed out: the user already waited past the threshold.
* No HTTP response, connect error, 408/429/5xx/529, or a stream that died *before* the threshold without
  text -> `transport` (tasks/core/classify.py).
* HTTP 200 whose body was not an event stream or whose frames did not decode -> `fail` `protocol_violation`,
  checked first (tasks/core/classify.py).
* An upstream failure reported as success (`native_finish_reason` `network_error`...) -> `fail` `upstream_error`,
  checked first with the protocol (tasks/core/classify.py `exchange_override`).
* Text within the threshold -> `pass`, even if the stream was cut afterwards: the latency was measured; unless
  the text shows broken decoding (`encoding_corruption`, tasks/core/contracts/textscan.py).
* A completed stream with no text at all before the threshold -> `inconclusive` `no_text` (the refusal
  contract judges empty replies).
"""

from __future__ import annotations

from collections.abc import Sequence

from tasks.config import CanaryConfig
from tasks.core.contracts.common import encoding_judgement, exchange_judgement, exchange_override, fmt_ms, judge_each
from tasks.core.contracts.spec import ContractSpec
from tasks.core.prompts import ROLEPLAY_TEMPERATURE, TTFT_MAX_TOKENS, ttft_body
from tasks.core.types import Attempt, Contract, Judgement, Outcome, Reason


def judge_attempt(a: Attempt, ttft_s: float) -> Judgement:
    limit_ms = ttft_s * 1000.0
    limit = f"{limit_ms:.0f}"
    violation = exchange_override(a)
    if violation is not None:
        return violation
    if a.http_status == 200:
        if a.ttft_ms is not None and a.ttft_ms > limit_ms:
            return Judgement(
                Outcome.FAIL,
                Reason.TTFT_EXCEEDED,
                f"ttft_ms ({a.ttft_ms:.0f}) > {limit}; keepalives ({a.keepalive_count})",
            )
        if a.ttft_ms is None and a.total_ms is not None and a.total_ms >= limit_ms:
            return Judgement(
                Outcome.FAIL,
                Reason.TTFT_EXCEEDED,
                f"ttft_ms (none after {a.total_ms:.0f}) > {limit}; keepalives ({a.keepalive_count})",
            )
        if a.ttft_ms is not None:
            return encoding_judgement(a.text) or Judgement(
                Outcome.PASS, Reason.OK, f"ttft_ms ({a.ttft_ms:.0f}) <= {limit}"
            )
    broken = exchange_judgement(a)
    if broken is not None:
        return broken
    return Judgement(
        Outcome.INCONCLUSIVE,
        Reason.NO_TEXT,
        f"ttft_ms (none), total_ms ({fmt_ms(a.total_ms)}), finish ({a.finish_reason})",
    )


def judge(attempts: Sequence[Attempt], cfg: CanaryConfig) -> Judgement:
    return judge_each(attempts, lambda a: judge_attempt(a, cfg.ttft_s))


#: Slowness is often load, not a broken endpoint: never hard (the next full round decides).
SPEC = ContractSpec(
    name=Contract.TTFT,
    judge=judge,
    body=ttft_body,
    max_tokens=TTFT_MAX_TOKENS,
    temperature=ROLEPLAY_TEMPERATURE,
    free_text=True,
    may_be_hard=False,
)
