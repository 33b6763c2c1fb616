"""What a round sends (pure): one probe per endpoint x probed contract, each with its language."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from tasks.rotation import plan_languages
from tasks.types import PROBED_CONTRACTS, Contract, Endpoint, Outcome


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
    """Every endpoint gets every probed contract; ttft/refusal/structured are asked in English."""
    langs = plan_languages([e.tag for e in endpoints], languages, previous_languages)
    probes: list[Probe] = []
    for endpoint in sorted(endpoints, key=lambda e: e.tag):
        for contract in contracts:
            language = langs[endpoint.tag] if contract is Contract.LANGUAGE else "en"
            probes.append(Probe(endpoint, contract, language))
    return probes
