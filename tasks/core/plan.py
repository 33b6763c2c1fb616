"""What a round sends (pure): one probe per endpoint x probed contract, each with its language.

The tools contract goes only to endpoints whose `supported_parameters` include "tools" (docs/design.md "tools"):
a provider that does not claim tool calling is never judged on it. Its probe stands for two requests, the
call turn (attempt 1) and the control turn (attempt 2): `attempts_for` says how many the probe sends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from tasks.core.rotation import plan_languages
from tasks.core.types import PROBED_CONTRACTS, Contract, Endpoint, Outcome


@dataclass(frozen=True, slots=True)
class Probe:
    endpoint: Endpoint
    contract: Contract
    language: str


def make_round_id(model: str, round_ts: datetime) -> str:
    """Stable per (model, round time): rerunning a round with the same time replaces its rows."""
    return f"{model}@{round_ts.strftime('%Y-%m-%dT%H:%M:%SZ')}"


def model_slug(model: str) -> str:
    """`meta-llama/llama-3.3-70b-instruct` -> `meta-llama-llama-3-3-70b-instruct` (artifact-key safe)."""
    out = "".join(c if c.isalnum() else "-" for c in model.lower())
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")


def plan_probes(
    endpoints: Sequence[Endpoint],
    languages: Sequence[str],
    previous_languages: Mapping[str, tuple[str, Outcome]],
    contracts: Sequence[Contract] = PROBED_CONTRACTS,
) -> list[Probe]:
    """Every endpoint gets every probed contract it supports; all but language are asked in English."""
    langs = plan_languages([e.tag for e in endpoints], languages, previous_languages)
    probes: list[Probe] = []
    for endpoint in sorted(endpoints, key=lambda e: e.tag):
        for contract in contracts:
            if not supports(endpoint, contract):
                continue
            language = langs[endpoint.tag] if contract is Contract.LANGUAGE else "en"
            probes.append(Probe(endpoint, contract, language))
    return probes


@dataclass(frozen=True, slots=True)
class EndpointPlan:
    """Everything one endpoint is asked in a round: one Prefect task (`probe-<tag>`), its contracts inside."""

    endpoint: Endpoint
    probes: tuple[Probe, ...]


def by_endpoint(probes: Sequence[Probe]) -> list[EndpointPlan]:
    """Group a round's probes per endpoint, in tag order (the order `plan_probes` gives)."""
    plans: dict[str, list[Probe]] = {}
    for p in probes:
        plans.setdefault(p.endpoint.tag, []).append(p)
    return [EndpointPlan(ps[0].endpoint, tuple(ps)) for ps in plans.values()]


def supports(endpoint: Endpoint, contract: Contract) -> bool:
    """Whether the endpoint is probed for `contract` at all (tools only where it lists "tools")."""
    return contract is not Contract.TOOLS or "tools" in endpoint.supported_parameters


def attempts_for(contract: Contract) -> tuple[int, ...]:
    """The attempt numbers one probe of `contract` sends up front (confirmations come on top): the tools
    contract's call turn and control turn (tasks/core/tool_prompts.py), one request for every other contract."""
    return (1, 2) if contract is Contract.TOOLS else (1,)
