"""Build `Attempt` records for contract tests (imported by the test modules next to it)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tasks.core.types import Attempt, Contract

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)


def attempt(contract: Contract = Contract.REFUSAL, **kw: Any) -> Attempt:
    """A completed 200 stream by default; override any field."""
    base: dict[str, Any] = dict(
        round_id="r1",
        model="m/x",
        tag="deepinfra/fp8",
        provider_name="DeepInfra",
        contract=contract,
        attempt_no=1,
        started_at=T0,
        language="en",
        http_status=200,
        ttft_ms=400.0,
        total_ms=2500.0,
        chunk_count=20,
        finish_reason="stop",
        served_provider="DeepInfra",
        text="",
    )
    base.update(kw)
    return Attempt(**base)
