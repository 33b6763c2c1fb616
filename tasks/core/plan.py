"""What a round sends (pure): one probe per endpoint x probed contract, each with its language.

Each contract's SPEC (tasks/core/contracts/) says which endpoints it applies to (the tools contract goes only to
endpoints whose `supported_parameters` include "tools", docs/design.md "tools"), whether it is asked in the
endpoint's rotated language (only the language contract) and how many requests its probe stands for (the tools
contract: the call turn, attempt 1, and the control turn, attempt 2): `attempts_for` says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from tasks.core.contracts import probed, spec_of
from tasks.core.rotation import plan_languages
from tasks.core.types import Endpoint, Outcome


@dataclass(frozen=True, slots=True)
class Probe:
    endpoint: Endpoint
    contract: str  # a registered contract's name (a `Contract` for the built-in ones)
    language: str


def make_round_id(model: str, round_ts: datetime) -> str:
    """The model and the round time to the millisecond: `m@2026-11-01T10:00:00.250Z`, or to the second when the
    time is a whole second (`m@2026-11-01T10:00:00Z`: the ids of a schedule's or a history's whole-second times,
    and every id stored before milliseconds were added). Two rounds of one model in one second get two ids; the
    save refuses a round id another run already holds (tasks/store/settlement.py `claim_round_id`)."""
    return f"{model}@{round_stamp(round_ts, '%Y-%m-%dT%H:%M:%S')}Z"


def round_stamp(round_ts: datetime, fmt: str) -> str:
    """`round_ts` in `fmt`, plus `.mmm` when the time is not a whole second (round ids, spool file names)."""
    stamp = round_ts.strftime(fmt)
    return stamp if round_ts.microsecond == 0 else f"{stamp}.{round_ts.microsecond // 1000:03d}"


def is_model_id(model: str) -> bool:
    """`author/slug`: one slash, both parts non-empty, every character printable and none a space (a newline,
    a tab or a control character in a model id would reach URLs, log lines and alerts)."""
    author, sep, slug = model.partition("/")
    return bool(sep and author and slug) and "/" not in slug and all(c.isprintable() and not c.isspace()
                                                                     for c in model)


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
    contracts: Sequence[str] | None = None,
) -> list[Probe]:
    """Every endpoint gets every probed contract (default: all registered) it supports; only a
    `rotated_language` contract is asked in the endpoint's rotated language, the others in English."""
    langs = plan_languages([e.tag for e in endpoints], languages, previous_languages)
    probes: list[Probe] = []
    wanted = probed() if contracts is None else tuple(contracts)
    for endpoint in sorted(endpoints, key=lambda e: e.tag):
        for contract in wanted:
            if not supports(endpoint, contract):
                continue
            language = langs[endpoint.tag] if spec_of(contract).rotated_language else "en"
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


def supports(endpoint: Endpoint, contract: str) -> bool:
    """Whether the endpoint is probed for `contract` at all (its SPEC's `applies_to`: tools only where it
    lists "tools")."""
    return spec_of(contract).applies_to(endpoint)


def attempts_for(contract: str) -> tuple[int, ...]:
    """The attempt numbers one probe of `contract` sends up front (confirmations come on top): its SPEC's
    `attempts` (the tools contract's call turn and control turn, one request for every other contract)."""
    return spec_of(contract).attempts
