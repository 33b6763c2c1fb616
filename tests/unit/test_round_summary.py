"""The round's summary (tasks/round/engine.py `RoundSummary`): built once for both engines, its dict form is
the flow's return value and what `canary run` prints from (provider_canary/cli/runs.py), so its keys are an
interface."""

from __future__ import annotations

import pytest

from tasks.round.engine import RoundSummary

pytestmark = pytest.mark.unit

ROUND_KEYS = ["round_id", "model", "endpoints", "attempts", "decisions", "ignore", "status", "partial", "confirms",
              "confirmation"]
SKIPPED_KEYS = ["round_id", "model", "endpoints", "attempts", "decisions", "ignore", "skipped", "status", "reason"]


def test_a_rounds_summary_has_the_flows_keys_and_plain_lists() -> None:
    done = RoundSummary("m/x@1", "m/x", "deferred", endpoints=3, attempts=9, decisions=("suspend:a",),
                        ignore=("a",), confirmation={"due": "2026-11-01T10:05:00+00:00"}, delivered=2)
    out = done.as_dict()
    assert list(out) == ROUND_KEYS
    assert out["decisions"] == ["suspend:a"] and out["ignore"] == ["a"] and out["status"] == "deferred"
    assert "delivered" not in out  # the flow's log line says it; the summary never did


def test_the_pipelines_summary_adds_reprobed_only() -> None:
    out = RoundSummary("m/x@1", "m/x", "complete", reprobed=4).as_dict()
    assert list(out) == [*ROUND_KEYS, "reprobed"] and out["reprobed"] == 4


@pytest.mark.parametrize("ignore", [["a", "b"], "unknown (the store is busy)"])
def test_a_skipped_round_says_why_and_the_list_in_force(ignore: list[str] | str) -> None:
    out = RoundSummary.skipped("m/x@1", "m/x", ignore).as_dict()
    assert list(out) == SKIPPED_KEYS
    assert out["skipped"] is True and out["status"] == "skipped" and out["ignore"] == ignore
    assert out["reason"] == "the previous round of this model still holds its slot"
    assert (out["endpoints"], out["attempts"], out["decisions"]) == (0, 0, [])
