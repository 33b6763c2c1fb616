"""Every counter the exporter writes only rises (tasks/metrics/exporter.py, tasks/store/metric_rollup.py): Hypothesis
runs random sequences of rounds, crashed rounds (a round left `running`, marked `crashed` by its model's next round),
deferred rounds landing late, a spool landed twice and exporter restarts against a real DuckDB file, scraping
after each step; no `_total`, `_bucket`, `_sum` or `_count` sample may ever be lower than at the scrape before
(Prometheus would read a fall as a counter reset: false `rate()`/`increase()`)."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from tasks import store
from tasks.config import CanaryConfig
from tasks.core.settle import Prior, Settlement, settle_round
from tasks.core.types import Attempt, Contract, Endpoint, EndpointState, ErrorClass, Mode, RoundInfo, Usage
from tasks.metrics.exporter import CanaryCollector, exposition
from tasks.store.settlement import mark_crashed, mark_running, save_settlement, unfinished_rounds
from tests.support import NO_EXCLUSIONS

pytestmark = pytest.mark.integration
T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(days=2)
CFG = CanaryConfig(ttft_s=1, min_hosts=1, exclusions_file=NO_EXCLUSIONS)
MODELS = ("m", "n")
COUNTED = ("_total", "_bucket", "_sum", "_count")


def _settlement(model: str, ts: datetime, slow: bool) -> Settlement:
    round_id = f"{model}@{ts.isoformat()}"
    endpoints = [Endpoint(model, "a", "A"), Endpoint(model, "b", "B")]
    attempts = [
        Attempt(round_id=round_id, model=model, tag="a", provider_name="A", contract=Contract.TTFT, attempt_no=1,
                started_at=ts, http_status=200, ttft_ms=3000.0 if slow else 120.0, total_ms=3500.0, chunk_count=5,
                finish_reason="stop", served_provider="A", text="Hello there, traveller.", usage=Usage(cost=0.001)),
        Attempt(round_id=round_id, model=model, tag="b", provider_name="B", contract=Contract.TTFT, attempt_no=1,
                started_at=ts, http_status=429, error_class=ErrorClass.HTTP_STATUS, error_code=429, total_ms=20.0),
    ]
    prior = Prior(model, Mode.ENFORCE, states={t: EndpointState(model, t, Mode.ENFORCE) for t in ("a", "b")})
    return settle_round(prior, attempts, endpoints, CFG, ts, round_id=round_id)


def _counted(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples if s.name.endswith(COUNTED)}


STEPS = st.lists(st.one_of(
    st.tuples(st.just("round"), st.sampled_from(MODELS), st.booleans()),
    st.tuples(st.just("crash"), st.sampled_from(MODELS), st.booleans()),
    st.tuples(st.just("late"), st.sampled_from(MODELS), st.booleans()),
    st.tuples(st.just("again"), st.sampled_from(MODELS), st.booleans()),
    st.tuples(st.just("restart"), st.just(""), st.just(False)),
), min_size=2, max_size=7)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS)
def test_no_counter_sample_ever_falls(steps: list[tuple[str, str, bool]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "canary.duckdb"
        collector = CanaryCollector([db], CFG)
        clock = {m: T0 for m in MODELS}
        saved: dict[str, Settlement] = {}
        seen: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        for step, model, slow in steps:
            with store.open_store(db, snapshot=True) as con:
                if step == "restart":
                    collector = CanaryCollector([db], CFG)  # a new exporter process reads the same file
                elif step == "late":  # a deferred round, older than the model's newest, lands now
                    save_settlement(con, _settlement(model, T0 - timedelta(hours=len(seen) + 1), slow), landed_at=T0)
                elif step == "again" and model in saved:  # a spool landed twice
                    save_settlement(con, saved[model], landed_at=T0)
                else:
                    clock[model] += timedelta(minutes=30)
                    for row in unfinished_rounds(con, model, besides=""):  # what the next round's land_leftovers does
                        info = RoundInfo(str(row["round_id"]), model, row["round_ts"], Mode.ENFORCE)  # type: ignore[arg-type]
                        mark_crashed(con, info, step="probe", at=clock[model])
                    info = RoundInfo(f"{model}@{clock[model].isoformat()}", model, clock[model], Mode.ENFORCE)
                    mark_running(con, info, started_at=clock[model])
                    if step == "round":
                        saved[model] = _settlement(model, clock[model], slow)
                        save_settlement(con, saved[model], landed_at=clock[model])
            now = _counted(exposition(collector).decode())
            fell = {k: (seen[k], v) for k, v in now.items() if k in seen and v < seen[k]}
            assert not fell, f"after {step} {model}: {fell}"
            gone = set(seen) - set(now)
            assert not gone, f"after {step} {model}: counters vanished: {gone}"
            seen = now
        assert seen  # something was counted
