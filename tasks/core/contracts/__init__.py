"""The contracts, judged by code: one pure module each, one registry here.

Every judge takes the attempts of one endpoint for one contract in one round (confirmations included) and the
config, and returns a `Judgement` (outcome, machine reason, one-line Gatus-style evidence). The opening
contract takes the endpoint's text replies of all contracts; tasks/core/judge.py adds its peer comparison,
pin mismatches and positive controls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tasks.config import CanaryConfig
from tasks.core.contracts import language, opening, refusal, structured, tools, ttft
from tasks.core.types import Attempt, Contract, Judgement

Judge = Callable[[Sequence[Attempt], CanaryConfig], Judgement]

#: Contract -> judge. The one registry: tasks/core/judge.py applies whatever is listed here.
CONTRACTS: dict[Contract, Judge] = {
    Contract.TTFT: ttft.judge,
    Contract.REFUSAL: refusal.judge,
    Contract.STRUCTURED: structured.judge,
    Contract.LANGUAGE: language.judge,
    Contract.OPENING: opening.judge,
    Contract.TOOLS: tools.judge,
}

__all__ = ["CONTRACTS", "Judge"]
