"""The store tests' rounds (tests/integration/test_store*.py): a round of a model, its attempts, a contract result, and
the rows each table holds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tasks import store
from tasks.core.contracts import probed
from tasks.core.types import (
    Attempt,
    Contract,
    ContractResult,
    Endpoint,
    Mode,
    Outcome,
    RoundInfo,
    Usage,
)

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
MODEL = "meta-llama/llama-3.3-70b-instruct"
ENDPOINTS = [Endpoint(MODEL, "deepinfra/fp8", "DeepInfra"), Endpoint(MODEL, "novita", "Novita")]


def make_round(n: int, model: str = MODEL) -> RoundInfo:
    return RoundInfo(f"r{n}", model, T0 + timedelta(minutes=30 * n), Mode.OBSERVE)


def make_attempts(info: RoundInfo, ttft_ms: float = 120.0) -> list[Attempt]:
    return [
        Attempt(
            round_id=info.round_id,
            model=info.model,
            tag=e.tag,
            provider_name=e.provider_name,
            contract=c,
            attempt_no=1,
            started_at=info.round_ts,
            language="pt" if c is Contract.LANGUAGE else "en",
            http_status=200,
            ttft_ms=ttft_ms,
            total_ms=900.5,
            chunk_count=12,
            keepalive_count=1,
            finish_reason="stop",
            served_provider=e.provider_name,
            usage=Usage(10, 20, 30, 0.0001),
            text=f"*smiles* reply of {e.tag}",
        )
        for e in ENDPOINTS
        for c in probed()
    ]


def result(
    info: RoundInfo, tag: str, contract: Contract, outcome: Outcome, reason: str = "ok"
) -> ContractResult:
    return ContractResult(
        info.round_id,
        info.model,
        tag,
        contract,
        outcome,
        reason,
        evidence=f"{reason} seen",
        attempt_ids=(f"{info.round_id}:{tag}:{contract}:1",),
        language="pt" if contract is Contract.LANGUAGE else None,
    )


def table_counts(con: store.Connection) -> dict[str, int]:
    tables = ("rounds", "round_endpoints", "attempts", "outcomes", "endpoint_rounds")
    return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}  # type: ignore[index]
