"""benchmarks/round_starts.py and fault_fleet.py (issue 45's figures and fleet): when a cycle's pool could start
each round, how many rounds overlap, and the quarters fleet the simulator reads back with the faults it was given."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from fault_fleet import QUARTER_FAULTS, fleet_toml, quarter_models  # noqa: E402
from round_starts import admissions, budget_figures, counted_s, overlap  # noqa: E402

from provider_canary.simulator.catalog import CatalogSpec, endpoint_role, planned_first_token_s  # noqa: E402
from provider_canary.simulator.fleet_file import load_fleet  # noqa: E402

pytestmark = pytest.mark.unit


def test_the_first_rounds_start_with_the_cycle_and_each_end_admits_the_next_in_order() -> None:
    order = ["a", "b", "c", "d", "e"]
    ends = {"a": 30.0, "b": 12.0, "c": 50.0, "d": 70.0, "e": 90.0}
    got = admissions(order, ends, start=10.0, in_flight=2)
    # a and b start with the cycle; b's end (12) frees a thread for c, a's (30) for d, c's (50) for e
    assert got == {"a": 10.0, "b": 10.0, "c": 12.0, "d": 30.0, "e": 50.0}


def test_all_rounds_in_flight_all_start_with_the_cycle() -> None:
    assert set(admissions(["a", "b"], {"a": 5.0, "b": 6.0}, start=1.0, in_flight=32).values()) == {1.0}


def test_overlap_counts_the_spans_covering_each_moment() -> None:
    mean, peak = overlap([(0.0, 4.0), (1.0, 2.0), (1.0, 3.0)], step_s=1.0)
    # moments 0, 1, 2, 3: 1, 3, 2, 1 spans
    assert (mean, peak) == (7 / 4, 3)
    assert overlap([]) == (0.0, 0)


def test_a_request_counts_toward_concurrency_until_it_is_parked() -> None:
    assert counted_s(0.5, 0.1) == 0.5  # quick: all of it
    assert counted_s(9.0, 1.5) == 9.0  # its first text within the 2 s: all of it
    assert counted_s(14.0, 12.0) == 2.0  # a slow start: parked after 2 s
    assert counted_s(14.0, None) == 2.0  # no text at all
    assert counted_s(1.8, None) == 1.8  # ended before it could be parked


def test_the_probe_floor_is_the_counted_seconds_over_concurrency(tmp_path: Path) -> None:
    import duckdb

    db = str(tmp_path / "c.duckdb")
    con = duckdb.connect(db)
    con.execute("CREATE TABLE attempts (started_at TIMESTAMPTZ, total_ms DOUBLE, ttft_ms DOUBLE)")
    con.executemany("INSERT INTO attempts VALUES (to_timestamp(?), ?, ?)",
                    [(100.0, 1000.0, 200.0), (100.0, 1000.0, 300.0), (101.0, 14000.0, 12000.0)])
    con.close()
    got = budget_figures(db, concurrency=2, step_s=0.5)
    assert got["counted_call_s"] == pytest.approx(4.0)  # 1 + 1 + the slow one's 2 parked seconds
    assert got["probe_floor_s"] == pytest.approx(2.0)
    # 100-101: 2 counted, 101-103: 1, 103-115: 0 (parked), sampled every 0.5 s over 30 samples
    assert got["concurrency_used_mean"] == pytest.approx((2 * 2 + 4 * 1) / 30)
    assert got["under_half_share"] == pytest.approx(24 / 30)
    assert budget_figures(db, concurrency=0) == {}


def test_a_quarter_of_the_models_carry_each_fault_on_their_first_endpoints(tmp_path: Path) -> None:
    spec = CatalogSpec(models=8, endpoints=6, slow_start_s=12.0, seed=3)
    path = tmp_path / "fleet.toml"
    path.write_text(fleet_toml(quarter_models(spec, per_model=2)))
    fleet = load_fleet(path)
    assert [m.id for m in fleet.models][:2] == ["meta-llama/catalog-000", "mistralai/catalog-001"]
    for m, model in enumerate(fleet.models):
        kinds = [endpoint_role(e) for e in model.endpoints]
        want = QUARTER_FAULTS[m % 4]["kind"]
        assert kinds == ["slow_start" if want == "slow_first_token" else want] * 2 + ["healthy"] * 4, (m, kinds)
    slow = fleet.models[0].endpoints[0]
    assert planned_first_token_s(slow) == 12.0
    limited = fleet.models[3].endpoints[0].faults[0]
    assert (limited.params["status"], limited.params["retry_after_s"]) == (429, 5)


def test_a_rounds_beginning_is_read_from_prefects_line_in_the_cycles_output() -> None:
    from datetime import datetime

    from round_starts import begun_from_log

    after = datetime(2026, 12, 6, 23, 59, 50).timestamp()
    lines = [
        "23:59:58.250 | INFO    | Flow run 'canary-round-qwen/m-1-2026-12-06T2359' - Beginning subflow run "
        "'canary-round-qwen/m-1-2026-12-06T2359' for flow 'canary-round'",
        "23:59:59.000 | INFO    | Flow run 'x' - Finished in state Completed()",
        "00:00:01.500 | INFO    | Flow run 'canary-round-a/b-2026-12-06T2359' - Beginning subflow run "
        "'canary-round-a/b-2026-12-06T2359' for flow 'canary-round'",
        "00:00:02.000 | INFO    | Beginning subflow run 'canary-round-qwen/m-1-2026-12-06T2359' again",
    ]
    got = begun_from_log(lines, after)
    assert got == {"qwen/m-1": pytest.approx(after + 8.25), "a/b": pytest.approx(after + 11.5)}  # past midnight
