"""What a contract declares about itself (pure): one frozen `ContractSpec` per contract module, exported as SPEC.

The round reads these records from the registry (tasks/core/contracts/__init__.py) and nothing else: which
endpoints a contract applies to (tasks/core/plan.py), the request it sends (tasks/core/probe_request.py), its
attempts and confirmations (tasks/round/probe_task.py), its judges (tasks/core/judge.py), whether its failure asks
for a confirmation round (tasks/core/confirm.py) and its column in the demo's table (provider_canary/demo/run.py).

    SPEC = ContractSpec(
        name="ttft",                        # the `contract` column in DuckDB, Slack, JSON
        judge=judge,                        # one endpoint's attempts of this contract -> Judgement
        body=lambda attempt_no, language: {"messages": messages(TTFT_MESSAGES)},
        max_tokens=200,
        may_be_hard=False,                  # slowness is often load: never confirmed at once
    )
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tasks.core.types import Attempt, Endpoint, Judgement

if TYPE_CHECKING:
    from tasks.config import CanaryConfig

#: One endpoint's attempts of one contract in one round (confirmations included) -> its judgement.
Judge = Callable[[Sequence[Attempt], "CanaryConfig"], Judgement]
#: (attempt number, prompt language) -> the request fields the contract sets: `messages`, `response_format`,
#: `tools`... (tasks/core/probe_request.py adds the model, the pin, max_tokens, sampling and streaming).
Body = Callable[[int, str], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class PeerRound:
    """One model's endpoints in a round, as a round-level judge sees them."""

    #: Per tag, every attempt of the round (all contracts).
    attempts: Mapping[str, Sequence[Attempt]]
    #: Per tag, this contract's own judgement (tags whose attempts were served by another provider left out).
    judged: Mapping[str, Judgement]
    #: The contracts whose replies are free text (`ContractSpec.free_text`).
    text_contracts: frozenset[str]


#: The model's endpoints -> per tag, the judgement that replaces (or, for an unprobed contract, makes) its row.
RoundJudge = Callable[[PeerRound, "CanaryConfig"], Mapping[str, Judgement]]


def every_endpoint(endpoint: Endpoint) -> bool:
    """The default `applies_to`: the contract is probed on every endpoint."""
    return True


@dataclass(frozen=True, slots=True)
class ContractSpec:
    """Everything the round needs to know about one contract (see the module docstring for who reads what)."""

    #: The contract's name: what lands in DuckDB's `contract` columns, Slack and JSON.
    name: str
    #: Per-endpoint judge. For an unprobed contract, the judge of one endpoint's round without its peers.
    judge: Judge
    #: The request fields; None for a contract that sends nothing (judged from the others' replies).
    body: Body | None = None
    #: Completion budget (tokens): generous, so a cut reply means the endpoint cut it, not us.
    max_tokens: int = 0
    #: Sampling temperature sent; None leaves the model's default (strict structured output, tool calls).
    temperature: float | None = None
    #: Sets `provider.require_parameters`: only endpoints that honour every parameter may serve it.
    require_parameters: bool = False
    #: Which endpoints are probed for it (e.g. only those listing "tools" in `supported_parameters`).
    applies_to: Callable[[Endpoint], bool] = every_endpoint
    #: Asked in the endpoint's rotated language (tasks/core/rotation.py) instead of English; its outcome row
    #: records that language.
    rotated_language: bool = False
    #: The languages a `rotated_language` contract can be asked in (its prompts); empty: any.
    prompt_languages: tuple[str, ...] = ()
    #: The attempt numbers one probe sends up front (the body may tell them apart).
    attempts: tuple[int, ...] = (1,)
    #: Whether the first attempt's failure asks for more attempts in the same round, and their numbers
    #: (skipped when the round's budget footprint drops confirmations).
    confirm_first: Callable[[Attempt], bool] | None = None
    confirm_attempts: tuple[int, ...] = ()
    #: Replies are free text (what the opening contract reads).
    free_text: bool = False
    #: Round-level judge over the model's endpoints: peer comparison, or the row of an unprobed contract.
    round_judge: RoundJudge | None = None
    #: Its failure asks for a confirmation round by default (the `hard_contracts` key overrides the list).
    hard_by_default: bool = False
    #: False: never hard, whatever the config says.
    may_be_hard: bool = True

    @property
    def is_probed(self) -> bool:
        """Sends requests of its own (else it is judged from the other contracts' replies)."""
        return self.body is not None

    def __post_init__(self) -> None:
        if self.body is not None and self.max_tokens <= 0:
            raise ValueError(f"contract {self.name!r}: a probed contract needs max_tokens > 0")
        if self.body is None and self.round_judge is None:
            raise ValueError(f"contract {self.name!r}: an unprobed contract needs a round_judge")
