"""The upstream's own word, judged once (tasks/core/classify.py): a failed hop reported inside a 200, relayed
error causes, redirects, BPE artifacts and empty tool arguments, across every contract judge."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from attempt_factory import attempt

from tasks.config import CanaryConfig
from tasks.core.classify import exchange_judgement, upstream_failure
from tasks.core.contracts import opening, probed, spec_of, tools
from tasks.core.contracts.textscan import MIN_BPE_SYMBOLS, scan_encoding
from tasks.core.judge import judge_round
from tasks.core.types import (
    Contract,
    Endpoint,
    ErrorClass,
    Outcome,
    Reason,
    ToolCall,
    Usage,
)
from tasks.core.wire.chunks import RAW_EXCERPT_CHARS, chunk_error

pytestmark = pytest.mark.unit
CFG = CanaryConfig()
CORPUS = Path(__file__).parents[2] / "data" / "language_corpus.jsonl"
#: What the model-blaming reasons of the old judgement were (issue 22): none may come back for it.
MODEL_REASONS = {"empty_reply", "invalid_json", "no_call", "no_text", "too_short"}


def masked(contract: Contract, **kw: object) -> object:
    """The masked upstream failure as the probe records it from the real capture (stream or JSON body)."""
    base: dict[str, object] = dict(
        text="", ttft_ms=None, finish_reason="stop", native_finish_reason="network_error",
        served_provider="DeepInfra", usage=Usage(), chunk_count=1,
    )
    base.update(kw)
    return attempt(contract, **base)


@pytest.mark.parametrize("contract", probed(), ids=str)
def test_masked_network_error_is_one_upstream_judgement_for_every_contract(contract: Contract) -> None:
    j = spec_of(contract).judge([masked(contract)], CFG)  # type: ignore[list-item]
    assert (j.outcome, j.reason) == (Outcome.FAIL, Reason.UPSTREAM_ERROR), j
    assert "native_finish_reason (network_error)" in j.evidence
    assert "provider (DeepInfra)" in j.evidence and "no usage" in j.evidence


def test_masked_failure_after_the_ttft_threshold_is_still_the_upstream_s_word() -> None:
    j = spec_of(Contract.TTFT).judge([masked(Contract.TTFT, total_ms=60_000.0)], CFG)  # type: ignore[list-item]
    assert j.reason == Reason.UPSTREAM_ERROR


def test_partial_text_cut_by_the_failed_hop_is_not_an_answer() -> None:
    a = masked(Contract.STRUCTURED, text='{"name": "Ka', ttft_ms=300.0)
    j = spec_of(Contract.STRUCTURED).judge([a], CFG)  # type: ignore[list-item]
    assert (j.reason, "text_chars (12)" in j.evidence) == (Reason.UPSTREAM_ERROR, True)


def test_a_round_of_masked_failures_names_no_model_failure() -> None:
    """The issue's round: refusal, structured and tools were three model failures; now one upstream reason."""
    endpoints = [Endpoint(model="m/x", tag=t, provider_name="DeepInfra") for t in ("a", "b", "c")]
    attempts = [
        masked(c, tag=t, attempt_no=n)
        for t in ("a", "b", "c")
        for c in probed()
        for n in ((1, 2) if c is Contract.TOOLS else (1,))
    ]
    rows = judge_round(attempts, endpoints, CFG)  # type: ignore[arg-type]
    judged = [r for r in rows if r.contract is not Contract.OPENING]
    assert {(r.outcome, r.reason) for r in judged} == {(Outcome.FAIL, Reason.UPSTREAM_ERROR)}
    assert not MODEL_REASONS & {r.reason for r in rows}
    assert all("network_error" in r.evidence for r in judged)
    assert {r.reason for r in rows if r.contract is Contract.OPENING} == {Reason.FEW_REPLIES}


def test_a_control_s_upstream_failure_proves_nothing_about_its_filter() -> None:
    cfg = CanaryConfig(refusal_controls=("a",))
    rows = judge_round([masked(Contract.REFUSAL, tag="a")], [Endpoint("m/x", "a", "DeepInfra")], cfg)  # type: ignore[list-item]
    row = next(r for r in rows if r.contract is Contract.REFUSAL)
    assert (row.outcome, row.reason) == (Outcome.INCONCLUSIVE, "control_upstream_error")


@pytest.mark.parametrize(
    ("native", "finish", "word"),
    [
        ("network_error", "stop", "network_error"),
        ("error", "error", "error"),
        ("upstream_timeout", "stop", "upstream_timeout"),
        (None, "error", "error"),
        ("MALFORMED_FUNCTION_CALL", "error", None),  # the model's own failure (Gemini): provider_error stays
        ("stop", "stop", None),
        ("completed", "stop", None),  # OpenAI's Responses-era native reason on a healthy stream
        ("tool_calls", "tool_calls", None),
        ("SAFETY", "content_filter", None),
        ("content_filter_error", "content_filter", None),  # the filter's own rule judges it
        ("network_error", "length", None),
    ],
)
def test_which_native_reasons_name_an_upstream_failure(native: str | None, finish: str, word: str | None) -> None:
    assert upstream_failure(masked(Contract.REFUSAL, native_finish_reason=native, finish_reason=finish)) == word  # type: ignore[arg-type]


def test_an_error_object_keeps_its_code_rule_with_the_relayed_cause() -> None:
    detail = "Provider returned error [Chutes]: m is temporarily rate-limited upstream"
    a = masked(Contract.REFUSAL, error_class=ErrorClass.MIDSTREAM_ERROR, error_code=429, error_detail=detail)
    j = exchange_judgement(a)  # type: ignore[arg-type]
    assert j is not None and (j.outcome, j.reason) == (Outcome.TRANSPORT, "midstream_429")
    assert "[Chutes]: m is temporarily rate-limited upstream" in j.evidence


def test_http_error_evidence_keeps_the_relayed_cause() -> None:
    a = attempt(http_status=400, error_class=ErrorClass.HTTP_STATUS, error_code=400, finish_reason=None,
                error_detail="HTTP 400: Provider returned error [OpenAI]: at most 64 tools are allowed")
    j = exchange_judgement(a)
    assert j is not None and j.reason == "http_400"
    assert j.evidence == (
        "http_status (400) not a transport code: Provider returned error [OpenAI]: at most 64 tools are allowed"
    )


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        pytest.param(
            {"message": "Provider returned error", "code": 429, "metadata": {
                "raw": "stealth/ox-alpha is temporarily rate-limited upstream. Please retry shortly.",
                "provider_name": "Stealth", "limit_source": "upstream_provider_shared_pool"}},
            (429, "Provider returned error [Stealth]: stealth/ox-alpha is temporarily rate-limited upstream. "
                  "Please retry shortly."),
            id="raw-text",
        ),
        pytest.param(
            {"message": "Provider returned error", "code": 400, "metadata": {
                "raw": json.dumps({"error": {"message": "at most 64 tools are allowed", "type": "x"}}),
                "provider_name": "OpenAI"}},
            (400, "Provider returned error [OpenAI]: at most 64 tools are allowed"),
            id="raw-json-string",
        ),
        pytest.param(
            {"message": "Upstream error from AtlasCloud: x", "code": 502, "metadata": {
                "raw": {"object": "error", "message": "Unexpected token", "code": 400},
                "provider_name": "AtlasCloud"}},
            (502, "Upstream error from AtlasCloud: x [AtlasCloud]: Unexpected token"),
            id="raw-object",
        ),
        pytest.param(
            {"message": "m", "code": 500, "metadata": {"raw": "x" * 5000}},
            (500, "m upstream: " + "x" * (RAW_EXCERPT_CHARS - 1) + "…"),
            id="raw-bounded",
        ),
    ],
)
def test_chunk_error_keeps_the_upstream_s_words(error: dict, expected: tuple[int, str]) -> None:
    assert chunk_error({"error": error}) == expected


def test_redirect_is_a_protocol_violation_with_its_location() -> None:
    a = attempt(http_status=302, error_class=ErrorClass.HTTP_STATUS, error_code=302, finish_reason=None,
                ttft_ms=None, error_detail="HTTP 302: redirect to 'https://example.test/login'")
    for contract in probed():
        j = spec_of(contract).judge([attempt(contract, **{k: getattr(a, k) for k in (
            "http_status", "error_class", "error_code", "finish_reason", "ttft_ms", "error_detail")})], CFG)
        assert (j.outcome, j.reason) == (Outcome.FAIL, Reason.PROTOCOL_VIOLATION), (contract, j)
        assert "redirect to 'https://example.test/login'" in j.evidence


def _corpus() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").split("\n") if line.strip()]


def test_no_corpus_text_in_17_languages_and_no_maltese_is_bpe_corruption() -> None:
    texts = [r["text"] for r in _corpus()] + [
        "Il-Ġimgħa filgħodu Ġużeppi u Ċensu marru l-Mġarr. Ġie wkoll Ċikku, u qalu: Ġesù!",
        "IL-ĠIMGĦA L-KBIRA F'MĠARR U Ċ-ĊIRKEWWA",  # all caps: Ġ after a capital is a letter
    ]
    flagged = [t[:40] for t in texts if scan_encoding(t).bpe_space + scan_encoding(t).bpe_newline]
    assert flagged == []


def test_every_corpus_text_with_spaces_turned_into_bpe_symbols_is_encoding_corruption() -> None:
    checked = 0
    for row in _corpus():
        text = row["text"]
        if text.count(" ") < MIN_BPE_SYMBOLS + 2 or scan_encoding(text).is_corrupted:
            continue
        broken = text.replace(" ", "\u0120").replace("\n", "\u010a")
        scan = scan_encoding(broken)
        assert scan.is_corrupted, (row["id"], scan)
        checked += 1
    assert checked > 100


@pytest.mark.parametrize("contract", probed(), ids=str)
def test_bpe_artifacts_are_encoding_corruption_whatever_the_contract(contract: Contract) -> None:
    text = "ĠTheĠknightĠdrewĠhisĠsword.ĊĊ\"Stay back,\"Ġhe said." * 8
    calls = (ToolCall(0, "c1", "roll_dice", '{"sides": 6}'),) if contract is Contract.TOOLS else ()
    j = spec_of(contract).judge([attempt(contract, text=text, tool_calls=calls)], CFG)
    assert (j.outcome, j.reason) == (Outcome.FAIL, Reason.ENCODING_CORRUPTION), j
    assert "U+0120" in j.evidence and "Ġ" in j.evidence


def test_empty_arguments_to_a_tool_without_required_parameters_are_an_empty_object() -> None:
    schemas = {"ping": {"type": "object", "properties": {}}, "roll": {"type": "object", "required": ["n"]}}
    assert tools.call_problem(ToolCall(0, "c", "ping", ""), schemas) is None
    problem = tools.call_problem(ToolCall(0, "c", "roll", ""), schemas)
    assert problem is not None and problem.reason == "bad_json_args"


def test_opening_leaves_replies_cut_by_a_failed_hop_out() -> None:
    cut = [masked(Contract.REFUSAL, text=",*She", attempt_no=n) for n in (1, 2, 3)]
    assert opening.judge_endpoint(cut).reason == Reason.FEW_REPLIES  # type: ignore[arg-type]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
