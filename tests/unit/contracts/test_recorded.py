"""Golden tests from real simulator streams recorded by tests/data/record_attempts.py.

Each fixture holds an Attempt recorded through the real probe client and the outcome/reason its fault must
get (declared by hand in the recorder). The judges run here exactly as in a round.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tasks.config import CanaryConfig
from tasks.core.contracts import opening
from tasks.core.judge import judge_round
from tasks.core.types import Attempt, Contract, Endpoint, ErrorClass, Outcome, Usage

pytestmark = pytest.mark.unit
RECORDED = Path(__file__).parents[2] / "data" / "recorded"
FIXTURES = sorted(RECORDED.glob("*.json"))


def load(path: Path) -> tuple[dict[str, Any], Attempt]:
    fx = json.loads(path.read_text(encoding="utf-8"))
    raw = dict(fx["attempt"])
    raw["contract"] = Contract(raw["contract"])
    raw["started_at"] = datetime.fromisoformat(raw["started_at"])
    raw["usage"] = Usage(**raw["usage"])
    raw["error_class"] = ErrorClass(raw["error_class"]) if raw["error_class"] else None
    return fx, Attempt(**raw)


def test_fixtures_exist() -> None:
    assert len(FIXTURES) >= 20


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_recorded_attempt_gets_its_expected_outcome(path: Path) -> None:
    fx, a = load(path)
    cfg = CanaryConfig(ttft_s=fx["ttft_s"])
    endpoint = Endpoint(model=a.model, tag=a.tag, provider_name=a.provider_name)
    results = [r for r in judge_round([a], [endpoint], cfg) if r.contract == a.contract]
    assert len(results) == 1
    r = results[0]
    assert (str(r.outcome), r.reason) == (fx["expect"]["outcome"], fx["expect"]["reason"]), r.evidence


def test_recorded_corrupted_openings_fail_the_opening_contract() -> None:
    corrupt = [load(p)[1] for p in FIXTURES if p.stem.startswith("corrupt_")]
    healthy = [load(p)[1] for p in FIXTURES if p.stem.startswith("healthy_") and "structured" not in p.stem]
    assert len(corrupt) == 3 and all(opening.is_corrupted_opening(a.text) for a in corrupt)
    assert not any(opening.is_corrupted_opening(a.text) for a in healthy)
    j = opening.judge_endpoint(corrupt)
    assert (j.outcome, j.reason) == (Outcome.FAIL, "corrupted_opening")
    assert opening.judge_endpoint(healthy).outcome is Outcome.PASS
