"""What one real default-fleet round costs: `canary status` shows the spend, its sums are the attempts
table's, and the round's Markdown artifact has its "Cost of this round" line (issue 13, item 3)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from provider_canary.cli.main import app
from provider_canary.demo.simulator_process import SimulatorChild
from tasks import store
from tasks.core.plan import model_slug
from tests.support import NO_EXCLUSIONS
from tests.support.rounds import child_simulator, default_fleet_slow_start

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
MODEL = "meta-llama/llama-3.3-70b-instruct"
#: Default-fleet endpoints whose usage carries no cost (simulator/fleets/default.toml `reports_cost = false`).
ESTIMATED = {"together", "parasail/fp8"}


sim = child_simulator(default_fleet_slow_start())  # lambda/fp8: 6 s against a 3 s ttft_s


@pytest.fixture(scope="module")
def one_round(prefect_harness: None, sim: SimulatorChild, tmp_path_factory: pytest.TempPathFactory
              ) -> dict[str, Any]:
    import os

    from flows.round import canary_round

    tmp = tmp_path_factory.mktemp("cost")
    cfg = tmp / "canary.toml"
    cfg.write_text(
        f'models = ["{MODEL}"]\nmode = "enforce"\nbase_url = "{sim.base_url}"\ndb_path = "{tmp}/c.duckdb"\n'
        f'publish_dir = "{tmp}/published"\nexclusions_file = "{NO_EXCLUSIONS}"\n'
        'refusal_controls = ["amazon-bedrock"]\nttft_s = 3\nread_timeout_s = 5\nprobe_budget_s = 9\n'
        "budget_usd_per_day = 0.05\n"
    )
    os.environ["OPENROUTER_API_KEY"] = sim.api_key
    round_ts = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
    sim.reset_counters()
    summary = canary_round(model=MODEL, round_ts=round_ts, config_path=str(cfg))
    return {"cfg": cfg, "db": tmp / "c.duckdb", "round_ts": round_ts, "summary": summary}


def status(cfg: Path, *more: str) -> str:
    result = CliRunner().invoke(app, ["status", "--config", str(cfg), *more])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def test_status_shows_the_spend_and_its_sums_are_the_attempts_tables(one_round: dict[str, Any]) -> None:
    with store.open_store(one_round["db"], read_only=True) as con:
        raw = con.execute(
            "SELECT count(*), sum(coalesce(total_tokens, 0)), sum(coalesce(cost, 0)), count(cost),"
            " count(*) FILTER (WHERE cost IS NULL AND prompt_tokens IS NOT NULL) FROM attempts"
        ).fetchone()
        by_tag = dict(con.execute(
            "SELECT tag, bool_and(cost IS NULL) FROM attempts WHERE prompt_tokens IS NOT NULL GROUP BY tag"
        ).fetchall())
        estimate = con.execute(
            "SELECT sum(a.prompt_tokens * e.prompt_price_usd + a.completion_tokens * e.completion_price_usd)"
            " FROM attempts a JOIN round_endpoints e USING (round_id, tag) WHERE a.cost IS NULL"
        ).fetchone()
    assert raw is not None and estimate is not None
    requests, tokens, reported, n_reported, n_estimated = raw
    assert requests == one_round["summary"]["attempts"] and n_estimated > 0 and n_reported > 0
    assert {t for t, no_cost in by_tag.items() if no_cost} == ESTIMATED  # the simulator's two endpoints

    spend = json.loads(status(one_round["cfg"], "--json"))["spend"]
    day = next(d for d in spend["days"] if d["day"] == one_round["round_ts"].date().isoformat())
    assert (day["requests"], day["tokens"], day["estimated_requests"]) == (requests, tokens, n_estimated)
    assert day["reported_usd"] == pytest.approx(reported, rel=1e-9)
    assert day["estimated_usd"] == pytest.approx(estimate[0], rel=1e-9)
    assert day["usd"] == pytest.approx(reported + estimate[0], rel=1e-9)
    (model,) = spend["models"]
    assert model["model"] == MODEL and model["last_7_days"]["usd"] == pytest.approx(day["usd"])
    assert spend["budget_usd_per_day"] == 0.05
    assert spend["projected_usd_per_day"] == pytest.approx(max(day["usd"], day["usd"] * 48))

    text = status(one_round["cfg"])
    share = f"{day['estimated_usd'] / day['usd']:.0%} estimated"
    assert "canary spend: today " in text and share in text and "budget $0.0500/day" in text
    assert f"{requests} requests, {tokens:,} tokens" in text
    assert [ln for ln in text.splitlines() if "spend" in ln.split(":")[0]] == [
        next(ln for ln in text.splitlines() if ln.startswith("canary spend: today "))]  # one line
    print(f"\none default-fleet round: {requests} requests, {tokens:,} tokens, ${day['usd']:.6f} "
          f"({share}); projected ${spend['projected_usd_per_day']:.4f}/day at 48 rounds/day")


def test_the_round_artifact_has_the_cost_line(one_round: dict[str, Any]) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        arts = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[f"round-{model_slug(MODEL)}"]))
        )
    latest = max(arts, key=lambda a: a.created)
    (line,) = [ln for ln in str(latest.data).splitlines() if ln.startswith("- Cost of this round: $")]
    assert f"({one_round['summary']['attempts']} requests, " in line and "% estimated" in line


def test_status_spend_per_model_on_an_admin_database(tmp_path: Path) -> None:
    from tasks.core.types import Attempt, Contract, Endpoint, Mode, RoundInfo, Usage
    from tests.support.admin_db import build_db, write_config

    db = tmp_path / "c.duckdb"
    round_ts = build_db(db)
    other = "qwen/qwen3-235b"
    priced = Endpoint(MODEL, "fireworks", "Fireworks", prompt_price_usd=1e-6, completion_price_usd=2e-6)

    def attempt(info: RoundInfo, tag: str, usage: Usage, n: int = 1) -> Attempt:
        return Attempt(round_id=info.round_id, model=info.model, tag=tag, provider_name=tag,
                       contract=Contract.TTFT, attempt_no=n, started_at=round_ts, usage=usage)

    mine = RoundInfo("spend-1", MODEL, round_ts, Mode.ENFORCE)
    theirs = RoundInfo("spend-2", other, round_ts - timedelta(days=2), Mode.ENFORCE)
    with store.open_store(db) as con:
        store.land_round(con, mine, [attempt(mine, "fireworks", Usage(100, 50, 150, None)),
                                     attempt(mine, "groq", Usage(10, 5, 15, 0.25)),
                                     attempt(mine, "groq", Usage(), 2)],
                         endpoints=[priced, "groq"], status="complete")
        store.land_round(con, theirs, [attempt(theirs, "x", Usage(1, 1, 2, 1.0))], endpoints=["x"],
                         status="complete")
    cfg = write_config(tmp_path, db=db)
    spend = json.loads(status(cfg, "--json"))["spend"]
    assert spend["today"]["usd"] == pytest.approx(0.25 + 100e-6 + 100e-6)
    assert (spend["today"]["requests"], spend["today"]["estimated_requests"], spend["today"]["unpriced_requests"]) \
        == (3, 1, 1)
    assert [m["model"] for m in spend["models"]] == [MODEL, other]
    assert sum(d["usd"] for d in spend["days"]) == pytest.approx(1.25 + 200e-6)
    only = json.loads(status(cfg, "--json", "--model", MODEL))["spend"]
    assert [m["model"] for m in only["models"]] == [MODEL] and only["today"] == spend["today"]
    assert sum(d["usd"] for d in only["days"]) == pytest.approx(0.25 + 200e-6)
    text = status(cfg)
    assert "canary spend: today $0.2502 (3 requests, 165 tokens; <1% estimated; 1 without usage)" in text
    assert "; last 7 days $1.2502; " in text  # both models' (per model: --json, above)
