"""The contracts, judged by code: one pure module each exporting its `ContractSpec`, one registry here.

Adding a contract is one module (its SPEC: request, endpoints, attempts, judges, defaults; see
tasks/core/contracts/spec.py) and one line in `BUILTIN` below. The order of `BUILTIN` is the order of
probing, judging, outcome rows and the demo's columns.

Code outside the project (a test, an extension) adds one with `register(spec)` or, scoped,
`with registered(spec): ...`; the round reads the registry when it plans, probes and judges, so a contract
registered before a round is part of it. The request body is built in the round's process and handed to the
probe worker, so a registered contract needs nothing in the worker.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from tasks.core.contracts import language, opening, refusal, structured, tools, ttft
from tasks.core.contracts.spec import ContractSpec, Judge, PeerRound, RoundJudge

#: The project's contracts, in order.
BUILTIN: tuple[ContractSpec, ...] = (
    ttft.SPEC,
    refusal.SPEC,
    structured.SPEC,
    language.SPEC,
    opening.SPEC,
    tools.SPEC,
)

_registry: dict[str, ContractSpec] = {s.name: s for s in BUILTIN}


def register(spec: ContractSpec) -> None:
    """Add a contract after the built-in ones (ValueError if its name is taken)."""
    if spec.name in _registry:
        raise ValueError(f"contract {spec.name!r} is already registered")
    _registry[spec.name] = spec


def unregister(name: str) -> None:
    """Remove a contract added with `register` (the built-in ones stay)."""
    if any(s.name == name for s in BUILTIN):
        raise ValueError(f"contract {name!r} is built in")
    _registry.pop(name, None)


@contextmanager
def registered(spec: ContractSpec) -> Iterator[ContractSpec]:
    """`register(spec)` for the duration of a `with` block."""
    register(spec)
    try:
        yield spec
    finally:
        unregister(spec.name)


def specs() -> tuple[ContractSpec, ...]:
    """Every registered contract, in order."""
    return tuple(_registry.values())


def spec_of(name: str) -> ContractSpec:
    """The spec of the contract named `name` (KeyError: no such contract)."""
    return _registry[str(name)]


def names() -> tuple[str, ...]:
    return tuple(_registry)


def in_order(present: Iterable[str]) -> list[str]:
    """The contract names in `present`, in registry order (names no longer registered last, sorted): the
    columns of a round's tables."""
    given = {str(c) for c in present}
    known = [str(n) for n in _registry if n in given]
    return known + sorted(given - set(known))


def probed() -> tuple[str, ...]:
    """The contracts that send requests, in order (the others are judged from their replies)."""
    return tuple(s.name for s in _registry.values() if s.is_probed)


def text_contracts() -> frozenset[str]:
    """The probed contracts whose replies are free text (what the opening contract reads)."""
    return frozenset(s.name for s in _registry.values() if s.is_probed and s.free_text)


def default_hard() -> tuple[str, ...]:
    """The `hard_contracts` default: every contract whose spec says it is hard by default."""
    return tuple(s.name for s in _registry.values() if s.hard_by_default and s.may_be_hard)


def never_hard() -> frozenset[str]:
    """Contracts that are never hard, whatever the config says."""
    return frozenset(s.name for s in _registry.values() if not s.may_be_hard)


__all__ = [
    "BUILTIN",
    "ContractSpec",
    "Judge",
    "PeerRound",
    "RoundJudge",
    "default_hard",
    "in_order",
    "names",
    "never_hard",
    "probed",
    "register",
    "registered",
    "spec_of",
    "specs",
    "text_contracts",
    "unregister",
]
