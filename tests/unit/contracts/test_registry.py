"""The contract registry (tasks/core/contracts/__init__.py): every built-in contract declares itself once, and a
contract registered from outside is planned, requested, judged, confirmed and shown like a built-in one."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from tasks.config import NEVER_HARD, CanaryConfig
from tasks.core.confirm import contracts_to_probe, hard_failures
from tasks.core.contracts import (
    BUILTIN,
    ContractSpec,
    PeerRound,
    default_hard,
    in_order,
    names,
    never_hard,
    opening,
    probed,
    register,
    registered,
    spec_of,
    text_contracts,
    unregister,
)
from tasks.core.cost import is_confirmation
from tasks.core.judge import judge_round
from tasks.core.plan import attempts_for, plan_probes
from tasks.core.probe_request import build_request, prompt_language
from tasks.core.render.endpoint_table import endpoint_contract_rows
from tasks.core.types import Attempt, Contract, ContractResult, Endpoint, Judgement, Outcome

pytestmark = pytest.mark.unit

MODEL = "m/x"
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
CFG = CanaryConfig()


def echo_body(attempt_no: int, language: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": f"echo {attempt_no} {language}"}]}


def echo_judge(attempts: Sequence[Attempt], cfg: CanaryConfig) -> Judgement:
    ok = all(a.text == "echo" for a in attempts)
    return Judgement(Outcome.PASS if ok else Outcome.FAIL, "ok" if ok else "no_echo", f"attempts ({len(attempts)})")


def echo_peers(peers: PeerRound, cfg: CanaryConfig) -> dict[str, Judgement]:
    return {t: Judgement(j.outcome, j.reason, f"{j.evidence}, peers ({len(peers.judged)})")
            for t, j in peers.judged.items()}


ECHO = ContractSpec(
    name="echo",
    judge=echo_judge,
    body=echo_body,
    max_tokens=32,
    temperature=0.1,
    applies_to=lambda e: "echo" in e.supported_parameters,
    attempts=(1, 2),
    confirm_attempts=(3,),
    round_judge=echo_peers,
    hard_by_default=True,
)


def endpoint(tag: str, *params: str) -> Endpoint:
    return Endpoint(model=MODEL, tag=tag, provider_name=tag.title(), supported_parameters=tuple(params))


def attempt(tag: str, contract: str, no: int = 1, text: str = "echo") -> Attempt:
    return Attempt(round_id="r1", model=MODEL, tag=tag, provider_name=tag.title(), contract=contract, attempt_no=no,
                   started_at=T0, http_status=200, text=text, finish_reason="stop")


def test_every_builtin_contract_declares_itself_once_in_vocabulary_order() -> None:
    assert [s.name for s in BUILTIN] == list(Contract)
    assert names()[: len(BUILTIN)] == tuple(Contract)
    assert all(isinstance(spec_of(str(c)).name, Contract) for c in Contract)


def test_the_builtin_defaults_come_from_the_specs() -> None:
    assert probed() == (Contract.TTFT, Contract.REFUSAL, Contract.STRUCTURED, Contract.LANGUAGE, Contract.TOOLS)
    assert set(default_hard()) == {"structured", "language", "opening", "refusal", "tools"}
    assert never_hard() == NEVER_HARD  # what a config file may not make hard
    assert text_contracts() == opening.TEXT_CONTRACTS  # the default of opening's direct callers
    assert attempts_for(Contract.TOOLS) == (1, 2) and attempts_for(Contract.LANGUAGE) == (1,)
    assert prompt_language(Contract.LANGUAGE, "ko") == "ko" and prompt_language(Contract.TTFT, "ko") == "en"


def test_a_spec_must_say_how_it_is_judged() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        ContractSpec(name="x", judge=echo_judge, body=echo_body)
    with pytest.raises(ValueError, match="round_judge"):
        ContractSpec(name="x", judge=echo_judge)


def test_register_refuses_a_taken_name_and_unregister_keeps_the_builtin_ones() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register(spec_of("ttft"))
    with pytest.raises(ValueError, match="built in"):
        unregister("ttft")
    with registered(ECHO):
        assert names()[-1] == "echo"
    assert "echo" not in names()


def test_a_registered_contract_is_planned_requested_and_confirmed() -> None:
    eps = [endpoint("a", "echo"), endpoint("b")]
    with registered(ECHO):
        planned = [(p.endpoint.tag, p.contract, p.language) for p in plan_probes(eps, ["en", "de"], {})]
        body = build_request("echo", MODEL, "a", "de", CFG, attempt_no=2)
        hard = hard_failures([ContractResult("r1", MODEL, "a", "echo", Outcome.FAIL, "no_echo")], None)
        again = contracts_to_probe(["echo", "opening"])
        confirmation = is_confirmation(attempt("a", "echo", no=3))
    assert ("a", "echo", "en") in planned and not [p for p in planned if p[:2] == ("b", "echo")]
    assert body["messages"] == [{"role": "user", "content": "echo 2 en"}]  # not rotated: asked in English
    assert body["max_tokens"] == 32 and body["temperature"] == 0.1
    assert body["provider"] == {"only": ["a"], "allow_fallbacks": False} and body["stream"] is True
    assert hard == {"a": ("echo",)}
    assert again == (Contract.TTFT, Contract.REFUSAL, Contract.LANGUAGE, "echo")
    assert confirmation


def test_a_registered_contract_is_judged_with_its_peers_and_shown_in_the_table() -> None:
    attempts = [attempt(t, "echo", n, text) for t, text in (("a", "echo"), ("b", "nope")) for n in (1, 2)]
    with registered(ECHO):
        results = judge_round(attempts, [endpoint("a", "echo"), endpoint("b", "echo")], CFG)
        columns = in_order(["echo", "ttft", "gone"])
        rows = endpoint_contract_rows(results, {})
    echo = {r.tag: (r.outcome, r.reason, r.evidence, r.attempt_ids) for r in results if r.contract == "echo"}
    assert echo == {
        "a": (Outcome.PASS, "ok", "attempts (2), peers (2)", ("r1:a:echo:1", "r1:a:echo:2")),
        "b": (Outcome.FAIL, "no_echo", "attempts (2), peers (2)", ("r1:b:echo:1", "r1:b:echo:2")),
    }
    assert columns == ["ttft", "echo", "gone"]
    assert rows[0]["echo"] == "pass" and rows[1]["echo"] == "fail: no_echo"
