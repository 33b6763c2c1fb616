"""What every contract judge shares: the exchange rule and how several attempts combine (pure).

Transport vs quality is decided in tasks/core/classify.py (the one home of that rule); judges call
`exchange_override` first (a 200 that was not what was asked is `fail` `protocol_violation`, an upstream failure
reported as success is `fail` `upstream_error`, whatever the contract) and `exchange_judgement` before judging
the text.

Decided here: several attempts of one non-language contract (a transport retry) combine to the latest
quality judgement (pass/fail), else the latest inconclusive, else the latest transport: a retry only ever
follows a transport failure, so it can never hide a quality failure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tasks.core.classify import exchange_judgement, exchange_override, protocol_judgement
from tasks.core.contracts.textscan import scan_encoding
from tasks.core.types import Attempt, Judgement, Outcome, Reason

__all__ = [
    "exchange_judgement",
    "encoding_judgement",
    "exchange_override",
    "fmt_ms",
    "judge_each",
    "latest_judgement",
    "protocol_judgement",
]


def latest_judgement(judgements: Sequence[Judgement]) -> Judgement:
    """Latest pass/fail, else latest inconclusive, else latest transport (see module docstring)."""
    if not judgements:
        return Judgement(Outcome.INCONCLUSIVE, Reason.NO_ATTEMPTS, "attempts (0)")
    for wanted in ((Outcome.PASS, Outcome.FAIL), (Outcome.INCONCLUSIVE,), (Outcome.TRANSPORT,)):
        for j in reversed(judgements):
            if j.outcome in wanted:
                return j
    return judgements[-1]


def judge_each(attempts: Sequence[Attempt], judge_one: Callable[[Attempt], Judgement]) -> Judgement:
    ordered = sorted(attempts, key=lambda a: a.attempt_no)
    return latest_judgement([judge_one(a) for a in ordered])


def encoding_judgement(text: str) -> Judgement | None:
    """`fail` `encoding_corruption` when the reply text shows broken decoding (U+FFFD, C1 controls, mojibake,
    byte-level BPE symbols: tasks/core/contracts/textscan.py), whatever the contract that received it."""
    corruption = scan_encoding(text)
    if not corruption.is_corrupted:
        return None
    return Judgement(Outcome.FAIL, Reason.ENCODING_CORRUPTION, corruption.evidence)


def fmt_ms(value: float | None) -> str:
    return "none" if value is None else f"{value:.0f}"
