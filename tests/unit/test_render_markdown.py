"""The round's Markdown artifact (tasks/core/render/markdown.py): golden, escaped, short cells, the changes since the
last round, and OpenRouter's own figures beside the verdicts."""

from __future__ import annotations

import pytest

from tasks.core.render import (
    describe_changes,
    render_round_markdown,
)
from tasks.core.types import (
    Action,
    Contract,
    ContractResult,
    Mode,
    Outcome,
    RoundInfo,
)
from tests.support.render_cases import IGNORE, M, T, decision
from tests.support.secrets_registry import fresh_secret_registry  # noqa: F401 (autouse)

pytestmark = pytest.mark.unit


ROUND = RoundInfo(round_id="r2", model=M, round_ts=T, mode=Mode.OBSERVE)


def test_round_markdown_golden() -> None:
    results = [
        ContractResult("r2", M, "fireworks", Contract.TTFT, Outcome.PASS, "ok"),
        ContractResult("r2", M, "fireworks", Contract.LANGUAGE, Outcome.FAIL, "language_mix",
                       "sentences es (3) / pt (5)", language="pt"),
        ContractResult("r2", M, "novita", Contract.TTFT, Outcome.TRANSPORT, "http_503", "status (503)"),
        ContractResult("r2", M, "novita", Contract.LANGUAGE, Outcome.PASS, "ok"),
    ]
    md = render_round_markdown(ROUND, results, [decision(Action.WOULD_SUSPEND, "fireworks")], IGNORE,
                               ["`fireworks` language: pass → fail (language_mix)"])
    assert md == (
        "# Canary round `r2`\n"
        "\n"
        "- model: `meta-llama/llama-3.3-70b-instruct`\n"
        "- round_ts: 2026-11-01 10:00 UTC\n"
        "- mode: observe\n"
        "- endpoints: 2\n"
        "\n"
        "## Endpoints × contracts\n"
        "\n"
        "| endpoint | status | ttft | language |\n"
        "| --- | --- | --- | --- |\n"
        "| `fireworks` | fail | ok | FAIL [1] |\n"
        "| `novita` | transport | tx [2] | ok |\n"
        "\n"
        "ok = pass, FAIL = fail, tx = transport (never quality), ? = inconclusive; [n] = evidence line n below\n"
        "\n"
        "## Evidence\n"
        "\n"
        "1. `fireworks` language fail `language_mix`: sentences es (3) / pt (5)\n"
        "2. `novita` ttft transport `http_503`: status (503)\n"
        "\n"
        "## Decisions\n"
        "\n"
        "- would_suspend `fireworks` until 2026-11-02 10:00 UTC: failed 2 consecutive rounds\n"
        "\n"
        "## Changes since last round\n"
        "\n"
        "- `fireworks` language: pass → fail (language_mix)\n"
        "\n"
        "## Ignore list\n"
        "\n"
        "- `deepinfra/fp8` (canary until 2026-11-02 10:00 UTC): failed 2 rounds\n"
        "- `novita` (builtin): mixes pt/es\n"
    )


def test_round_markdown_escapes_cells_and_never_indents() -> None:
    results = [ContractResult("r2", M, "a|b", Contract.STRUCTURED, Outcome.FAIL, "schema|x", " \n indented")]
    md = render_round_markdown(ROUND, results, [], None, [])
    # the table cell escapes "|"; a numbered evidence line is no cell and keeps it
    assert "| `a\\|b` | fail | FAIL [1] |" in md and "1. `a|b` structured fail `schema|x`" in md
    assert all(not line.startswith((" ", "\t")) for line in md.splitlines())
    assert md.count("None.") == 2 and "Empty." in md


def test_round_table_cells_are_short_whatever_the_reasons() -> None:
    """Every contract column stays visible in the Prefect UI: cells are codes, the reasons are below."""
    reasons = ["inconclusive_because_of_a_very_long_reason_name", "control_caught", "stream_cut", "x"]
    results = [ContractResult("r2", M, f"provider-{i}/fp8", contract, outcome, reasons[i % 4], "e")
               for i in range(15) for contract in Contract
               for outcome in [list(Outcome)[(i + len(str(contract))) % 4]]]
    md = render_round_markdown(ROUND, results, [], None, [])
    rows = [line for line in md.splitlines() if line.startswith("| `provider-")]
    assert len(rows) == 15
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")][2:]
        assert len(cells) == len(Contract) and all(len(c) <= len("FAIL [90]") for c in cells), row
    assert "inconclusive_because_of_a_very_long_reason_name" not in "\n".join(rows)
    assert md.count("inconclusive_because_of_a_very_long_reason_name") >= 1  # in the evidence lines


def test_describe_changes() -> None:
    before = [ContractResult("r1", M, "a", Contract.TTFT, Outcome.PASS, "ok"),
              ContractResult("r1", M, "gone", Contract.TTFT, Outcome.PASS, "ok")]
    after = [ContractResult("r2", M, "a", Contract.TTFT, Outcome.FAIL, "ttft_exceeded"),
             ContractResult("r2", M, "new", Contract.TTFT, Outcome.PASS, "ok")]
    assert describe_changes(before, after) == [
        "`new`: new endpoint",
        "`gone`: not in this round",
        "`a` ttft: pass → fail (ttft_exceeded)",
    ]
    assert describe_changes(after, after) == []


def test_round_markdown_shows_openrouters_figures_beside_the_verdicts() -> None:
    from tasks.core.types import Endpoint

    results = [ContractResult("r2", M, "fireworks", Contract.TTFT, Outcome.PASS, "ok")]
    endpoints = [Endpoint(M, "fireworks", "Fireworks", status=0, uptime_last_5m=99.82, uptime_last_30m=99.8,
                          uptime_last_1d=99.7, latency_p50_ms=2687, latency_p90_ms=5954, throughput_p50=35),
                 Endpoint(M, "morph/fast", "Morph", status=-2, uptime_last_30m=82.0),
                 Endpoint(M, "quiet", "Quiet")]
    md = render_round_markdown(ROUND, results, [], None, [], None, endpoints)
    assert "| `fireworks` | 0 | 99.8 | 99.8 | 99.7 | 2687 / 5954 | 35 |" in md
    assert "| `morph/fast` | -2 | - | 82.0 | - | - / - | - |" in md
    assert "`quiet`" not in md.split("## OpenRouter's own figures")[1]  # nothing listed: no row
    assert "## OpenRouter's own figures" not in render_round_markdown(ROUND, results, [], None, [])
