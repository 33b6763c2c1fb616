"""judge_round: contract grouping, pin mismatches, positive controls, the opening row, and findings."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "contracts"))
from attempt_factory import attempt  # noqa: E402

from tasks.config import CanaryConfig  # noqa: E402
from tasks.core.contracts import probed, structured
from tasks.core.judge import RoundFindings, findings_from_results, judge_round  # noqa: E402
from tasks.core.types import (  # noqa: E402
    Contract,
    ContractResult,
    Endpoint,
    ErrorClass,
    Outcome,
    Reason,
)

pytestmark = pytest.mark.unit

SCENE = "*Kael rises slowly.* " + "The rain keeps hammering the shutters while the mercenaries wait. " * 8
EN = json.loads((Path(__file__).parent.parent / "data" / "language_corpus.jsonl").open().readline())["text"]
CARD = json.dumps(
    {
        "name": "Odo",
        "age": 40,
        "character_class": "merchant",
        "is_hostile": False,
        "traits": ["shrewd"],
        "greeting": "Hello.",
    }
)


def ep(tag: str, name: str | None = None) -> Endpoint:
    return Endpoint(model="m/x", tag=tag, provider_name=name or tag.split("/")[0].title())


def healthy(tag: str, **refusal_kw: object) -> list:
    name = tag.split("/")[0].title()
    common = dict(tag=tag, provider_name=name, served_provider=name)
    return [
        attempt(Contract.TTFT, text="*She grins.* Welcome aboard.", **common),
        attempt(Contract.REFUSAL, **{"text": SCENE, **common, **refusal_kw}),
        attempt(Contract.STRUCTURED, text=CARD, **common),
        attempt(Contract.LANGUAGE, text=EN, language="en", **common),
    ]


def by_key(results: list[ContractResult]) -> dict[tuple[str, str], ContractResult]:
    return {(r.tag, str(r.contract)): r for r in results}


def test_every_probed_contract_plus_opening_per_endpoint() -> None:
    attempts = healthy("alpha") + healthy("beta")
    out = judge_round(attempts, [ep("alpha"), ep("beta")], CanaryConfig())
    assert isinstance(out, list)
    rows = by_key(out)
    assert set(rows) == {
        (t, c) for t in ("alpha", "beta") for c in ("ttft", "refusal", "structured", "language", "opening")
    }
    assert rows[("alpha", "language")].outcome is Outcome.PASS
    assert rows[("alpha", "language")].language == "en"
    assert rows[("alpha", "ttft")].outcome is Outcome.PASS
    assert rows[("alpha", "opening")].outcome is Outcome.PASS
    assert rows[("alpha", "opening")].attempt_ids == tuple(sorted(a.attempt_id for a in healthy("alpha")))
    assert out.findings == RoundFindings()
    assert out.results == list(out) and out.probe_weak is False and out.pin_mismatches == []


def test_language_confirmations_are_judged_together() -> None:
    mix = json.loads(
        next(
            line
            for line in (Path(__file__).parent.parent / "data" / "language_corpus.jsonl").open()
            if '"mixed-pt-es-0"' in line
        )
    )["text"]
    common = dict(tag="alpha", provider_name="Alpha", served_provider="Alpha", language="pt")
    attempts = [attempt(Contract.LANGUAGE, text=mix, attempt_no=n, **common) for n in (1, 2, 3)]
    row = by_key(judge_round(attempts, [ep("alpha")], CanaryConfig()))[("alpha", "language")]
    assert (row.outcome, row.reason, row.language) == (Outcome.FAIL, "language_mix", "pt")
    assert row.attempt_ids == ("r1:alpha:language:1", "r1:alpha:language:2", "r1:alpha:language:3")


def test_unprobed_contract_has_no_row() -> None:
    out = judge_round(healthy("alpha")[:1], [ep("alpha")], CanaryConfig())
    assert [(r.contract, r.outcome, r.reason) for r in out] == [
        (Contract.TTFT, Outcome.PASS, "ok"),
        (Contract.OPENING, Outcome.INCONCLUSIVE, "few_replies"),
    ]


def test_pin_mismatch_is_inconclusive_and_reported() -> None:
    attempts = healthy("alpha")
    attempts[1] = attempt(
        Contract.REFUSAL, tag="alpha", provider_name="Alpha", served_provider="Beta", text=""
    )
    out = judge_round(attempts, [ep("alpha")], CanaryConfig())
    row = by_key(out)[("alpha", "refusal")]
    assert (row.outcome, row.reason) == (Outcome.INCONCLUSIVE, "pin_mismatch")
    assert row.evidence == "served_provider (Beta) != Alpha"
    assert out.findings.pin_mismatches == ("alpha",)
    assert findings_from_results(out, CanaryConfig()).pin_mismatches == ("alpha",)


def test_control_that_passes_makes_the_refusal_probe_weak() -> None:
    cfg = CanaryConfig(refusal_controls=("filterhost",))
    attempts = healthy("alpha") + healthy("beta", text="") + healthy("filterhost")
    out = judge_round(attempts, [ep("alpha"), ep("beta"), ep("filterhost")], cfg)
    rows = by_key(out)
    assert out.probe_weak and out.findings.weak_controls == ("filterhost",)
    assert (rows[("alpha", "refusal")].outcome, rows[("alpha", "refusal")].reason) == (
        Outcome.INCONCLUSIVE,
        "probe_weak",
    )
    assert rows[("beta", "refusal")].reason == "probe_weak"  # even a failure is not trusted on a weak probe
    assert "was fail empty_reply" in rows[("beta", "refusal")].evidence
    assert (rows[("filterhost", "refusal")].outcome, rows[("filterhost", "refusal")].reason) == (
        Outcome.INCONCLUSIVE,
        "control_missed",
    )
    assert rows[("filterhost", "ttft")].outcome is Outcome.PASS  # controls' other contracts count normally
    assert findings_from_results(out, cfg).probe_weak


def test_control_that_is_caught_keeps_the_probe_trusted() -> None:
    cfg = CanaryConfig(refusal_controls=("filterhost",))
    attempts = (
        healthy("alpha") + healthy("beta", text="") + healthy("filterhost", finish_reason="content_filter")
    )
    out = judge_round(attempts, [ep("alpha"), ep("beta"), ep("filterhost")], cfg)
    rows = by_key(out)
    assert not out.probe_weak
    assert rows[("alpha", "refusal")].outcome is Outcome.PASS
    assert (rows[("beta", "refusal")].outcome, rows[("beta", "refusal")].reason) == (
        Outcome.FAIL,
        "empty_reply",
    )
    ctl = rows[("filterhost", "refusal")]
    assert (ctl.outcome, ctl.reason) == (Outcome.INCONCLUSIVE, "control_caught")
    assert "content_filter" in ctl.evidence


def test_unreachable_control_does_not_weaken_the_probe() -> None:
    cfg = CanaryConfig(refusal_controls=("filterhost",))
    down = dict(http_status=503, error_class=ErrorClass.HTTP_STATUS, error_code=503, finish_reason=None)
    out = judge_round(healthy("alpha") + healthy("filterhost", **down), [ep("alpha"), ep("filterhost")], cfg)
    rows = by_key(out)
    assert not out.probe_weak
    assert rows[("filterhost", "refusal")].reason == "control_http_503"
    assert rows[("alpha", "refusal")].outcome is Outcome.PASS


def test_judges_parameter_overrides_a_contracts_judge() -> None:
    schema = {"type": "object", "required": ["mood"]}
    judges = {"structured": functools.partial(structured.judge, schema=schema)}
    out = judge_round(healthy("alpha"), [ep("alpha")], CanaryConfig(), judges=judges)
    row = by_key(out)[("alpha", "structured")]
    assert (row.outcome, row.reason, row.evidence) == (
        Outcome.FAIL,
        "schema_violation",
        "$: 'mood' is a required property",
    )


def test_corrupted_openings_fail_only_the_faulty_endpoint() -> None:
    bad = [
        attempt(Contract.TTFT, tag="bad", provider_name="Bad", served_provider="Bad", text='",*She grins.'),
        attempt(
            Contract.REFUSAL, tag="bad", provider_name="Bad", served_provider="Bad", text="ing *He " + SCENE
        ),
        attempt(
            Contract.LANGUAGE, tag="bad", provider_name="Bad", served_provider="Bad", text=".The " + SCENE
        ),
    ]
    attempts = healthy("alpha") + healthy("beta") + healthy("gamma") + bad
    out = judge_round(attempts, [ep("alpha"), ep("beta"), ep("gamma"), ep("bad")], CanaryConfig())
    rows = by_key(out)
    assert (rows[("bad", "opening")].outcome, rows[("bad", "opening")].reason) == (
        Outcome.FAIL,
        "corrupted_opening",
    )
    assert all(rows[(t, "opening")].outcome is Outcome.PASS for t in ("alpha", "beta", "gamma"))


HTML = dict(
    http_status=200,
    error_class=ErrorClass.PROTOCOL,
    error_detail="HTTP 200 content-type (text/html) is not an event stream: '<!DOCTYPE html>' (4096 bytes)",
    ttft_ms=None,
    finish_reason=None,
    served_provider=None,
    text="",
)


def test_an_endpoint_serving_html_fails_every_probed_contract_and_the_round() -> None:
    broken = [attempt(c, tag="beta", provider_name="Beta", **HTML) for c in probed()]
    out = judge_round(healthy("alpha") + broken, [ep("alpha"), ep("beta")], CanaryConfig())
    rows = by_key(out)
    for c in probed():
        assert (rows[("beta", str(c))].outcome, rows[("beta", str(c))].reason) == (
            Outcome.FAIL,
            Reason.PROTOCOL_VIOLATION,
        )
    assert rows[("beta", "opening")].outcome is Outcome.INCONCLUSIVE  # no trustworthy reply to look at
    assert all(rows[("alpha", str(c))].outcome is Outcome.PASS for c in probed() if c is not Contract.TOOLS)


def test_a_control_that_breaks_the_protocol_is_neither_caught_nor_missed() -> None:
    cfg = CanaryConfig(refusal_controls=("filterhost",))
    attempts = healthy("alpha") + healthy("filterhost")
    attempts[-3] = attempt(Contract.REFUSAL, tag="filterhost", provider_name="Filterhost", **HTML)
    out = judge_round(attempts, [ep("alpha"), ep("filterhost")], cfg)
    rows = by_key(out)
    assert rows[("filterhost", "refusal")].reason == "control_protocol_violation"
    assert rows[("filterhost", "refusal")].outcome is Outcome.INCONCLUSIVE
    assert not out.probe_weak and rows[("alpha", "refusal")].outcome is Outcome.PASS


def _row(tag: str, reason: str, evidence: str = "e") -> ContractResult:
    return ContractResult("r1", "m/x", tag, Contract.REFUSAL, Outcome.INCONCLUSIVE, reason, evidence)


def test_findings_from_stored_results_compare_reason_codes_not_text() -> None:
    cfg = CanaryConfig(refusal_controls=("ctl", "ctl2"))
    rows = [
        _row("ctl", "control_missed"),
        _row("ctl2", "control_pin_mismatch", "served_provider (X) != Ctl2"),  # a control's pin: not a finding
        _row("a", "pin_mismatch", "served_provider (Other) != A"),
        _row("b", "probe_weak", "controls passed (ctl); was pass ok; pin_mismatch elsewhere"),
        _row("c", "control_missed"),  # not a control: a stored oddity, not a weak probe
        _row("d", "not a reason pin_mismatch"),
    ]
    found = findings_from_results(rows, cfg)
    assert found.weak_controls == ("ctl",) and found.probe_weak
    assert found.pin_mismatches == ("a",) and found.pin_evidence == {"a": "served_provider (Other) != A"}


def test_every_fixed_reason_a_judge_writes_is_a_reason_member() -> None:
    cfg = CanaryConfig(refusal_controls=("filterhost",))
    attempts = healthy("alpha") + healthy("beta", text="") + healthy("filterhost")
    dynamic = ("http_", "midstream_", "control_")
    for r in judge_round(attempts, [ep("alpha"), ep("beta"), ep("filterhost")], cfg):
        assert r.reason in set(Reason) or r.reason.startswith(dynamic), r.reason
