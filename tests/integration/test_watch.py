"""The watcher's shell (tasks/watch/look.py) against the simulator's real endpoints listing and a real DuckDB file:
an uptime dip OpenRouter shows becomes a recorded suspicion and a confirmation request; it is not raised
again within the cooldown; over the budget it is recorded `skipped` and no round is asked for; nothing is
suspected before the model's first full round; the router's judged answers become a quality suspicion of one
class, against the peers, whose round probes that class's contracts."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tasks.config import CanaryConfig
from tasks.config.loading import apply_overrides
from tasks.core.contracts import probed
from tasks.core.live_records import LiveCount, LiveOutcome, LiveQuality
from tasks.core.suspicion import SuspicionStatus
from tasks.core.types import Attempt, Contract, Endpoint, Mode, RoundInfo, Usage
from tasks.store.live import append_live_counts, cleared_rates, set_suspicion_status
from tasks.watch.look import fetch_listing, watch_model
from tests.support import NO_EXCLUSIONS

pytestmark = pytest.mark.integration

MODEL = "acme/watch-model"
QMODEL = "acme/quality-model"
NOW = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
FLEET = {"models": [{"id": MODEL, "endpoints": [
    {"tag": "dipping", "provider_name": "Dipping", "faults": [{"kind": "uptime_dip", "uptime_5m": 50.0}]},
    {"tag": "steady", "provider_name": "Steady"},
    {"tag": "quiet", "provider_name": "Quiet", "uptime_last_5m": None},
]}, {"id": QMODEL, "endpoints": [{"tag": t, "provider_name": t.title()} for t in ("alpha", "beta", "gamma")]}]}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(parse_fleet(FLEET)) as handle:
        yield handle


def config(sim: SimulatorHandle, tmp: Path, **extra: object) -> CanaryConfig:
    return apply_overrides(CanaryConfig(), {"base_url": sim.base_url, "db_path": str(tmp / "canary.duckdb"),
                                          "publish_dir": str(tmp / "published"), "models": [MODEL],
                                          "exclusions_file": NO_EXCLUSIONS, **extra})


def full_round(cfg: CanaryConfig, model: str, tags: list[str], at: datetime, *, partial: bool = False) -> None:
    """A complete round of `model` in the database (a full one unless `partial`): what the watcher waits for."""
    info = RoundInfo(f"{model}@{at:%H%M%S}{'p' if partial else ''}", model, at, Mode.OBSERVE, partial=partial)
    with store.open_store(cfg.db_path) as con:
        store.land_round(con, info, [], endpoints=[Endpoint(model, t, t.title()) for t in tags], status="complete")
        con.execute("UPDATE rounds SET partial = ? WHERE round_id = ?", [partial, info.round_id])  # as the save does


def judged(tag: str, quality: LiveQuality, ok: int, failed: int, at: datetime, reason: str = "schema_violation"
           ) -> list[LiveCount]:
    """What the router writes for answers it judged: a row of passes and a row of failures of one class."""
    minute = at.replace(second=0, microsecond=0)
    return [LiveCount(minute, QMODEL, "model:chat", 1, tag, tag.title(), LiveOutcome.OK, ok, quality, "ok"),
            LiveCount(minute, QMODEL, "model:chat", 1, tag, tag.title(), LiveOutcome.QUALITY_FAIL, failed, quality,
                      reason)]


def test_the_listing_carries_the_dip_and_the_nulls(sim: SimulatorHandle, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    listing = {e.tag: e for e in fetch_listing(config(sim, tmp_path), MODEL)}
    assert (listing["dipping"].uptime_last_5m, listing["dipping"].status) == (50.0, -2)
    assert listing["quiet"].uptime_last_5m is None and listing["steady"].uptime_last_5m == 99.9
    assert listing["steady"].latency_p50_ms == 620  # authenticated: latency figures are given


def test_an_uptime_dip_is_a_recorded_suspicion_and_a_confirmation_request(
        sim: SimulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    cfg = config(sim, tmp_path, refusal_controls=["steady"])
    listing = fetch_listing(cfg, MODEL)
    full_round(cfg, MODEL, ["dipping", "quiet", "steady"], NOW - timedelta(minutes=10))
    result = watch_model(cfg, MODEL, NOW, listing)
    assert [(s.tag, str(s.signal)) for s in result.suspicions] == [("dipping", "uptime_drop")]
    assert result.request is not None and result.request.due == NOW
    assert dict(result.request.contracts) == {"dipping": probed(), "steady": (Contract.REFUSAL,)}
    again = watch_model(cfg, MODEL, NOW + timedelta(minutes=5), listing)  # within suspect_cooldown_s
    assert again.suspicions == () and again.request is None
    with store.open_store(cfg.db_path, read_only=True) as con:
        rows = con.execute("SELECT tag, signal, status, uptime_recent, uptime_baseline, evidence FROM suspicions"
                           ).fetchall()
    assert rows == [("dipping", "uptime_drop", "scheduled", 50.0, 99.7,
                     "OpenRouter uptime_last_5m (50.0 %) <= uptime_last_1d (99.7 %) - suspect_uptime_drop (20); "
                     "status -2")]


def test_over_the_budget_a_suspicion_is_recorded_skipped(sim: SimulatorHandle, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    cfg = config(sim, tmp_path, budget_usd_per_day=0.01)
    info = RoundInfo(f"{MODEL}@r1", MODEL, NOW - timedelta(minutes=20), Mode.OBSERVE)
    spent = [Attempt(round_id=info.round_id, model=MODEL, tag="steady", provider_name="Steady",
                     contract=Contract.TTFT, attempt_no=1, started_at=info.round_ts, usage=Usage(10, 10, 20, 0.5))]
    with store.open_store(cfg.db_path, snapshot=True) as con:  # the budget reads the analysts' snapshot
        store.land_round(con, info, spent, endpoints=[Endpoint(MODEL, "steady", "Steady")], status="complete")
    result = watch_model(cfg, MODEL, NOW, fetch_listing(cfg, MODEL))
    assert [s.tag for s in result.suspicions] == ["dipping"] and result.request is None
    assert result.skipped is not None and result.skipped.startswith("over budget")
    with store.open_store(cfg.db_path, read_only=True) as con:
        assert con.execute("SELECT status, note FROM suspicions").fetchall() == [("skipped", result.skipped)]


def test_no_suspicion_drives_a_round_before_the_first_full_round(sim: SimulatorHandle, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30: 36 s after `canary serve` started, an uptime dip made a confirmation round before any full round
    existed. A round of the whole model comes first (it probes the dipping endpoint anyway): until then the
    watcher records nothing and asks for nothing, whatever the signals say; a confirmation round is no full
    round."""
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    cfg = config(sim, tmp_path)
    listing = fetch_listing(cfg, MODEL)
    early = watch_model(cfg, MODEL, NOW, listing)
    assert early.suspicions == () and early.request is None
    assert early.waiting == f"no complete full round of {MODEL} yet: no suspicion-driven round before the first " \
                            "full round"
    full_round(cfg, MODEL, ["dipping"], NOW - timedelta(minutes=2), partial=True)
    assert watch_model(cfg, MODEL, NOW + timedelta(seconds=30), listing).request is None
    full_round(cfg, MODEL, ["dipping", "quiet", "steady"], NOW + timedelta(minutes=1))
    after = watch_model(cfg, MODEL, NOW + timedelta(minutes=2), listing)
    assert [s.tag for s in after.suspicions] == ["dipping"] and after.request is not None and after.waiting is None
    with store.open_store(cfg.db_path, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM suspicions").fetchone() == (1,)


def test_a_tool_fault_in_live_traffic_is_a_quality_suspicion_that_probes_tools(
        sim: SimulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The router judged tool calls on every endpoint: alpha's fail far more than its peers' -> one suspicion of
    class `tools` (stored with its class and the peers' rate), its round probes alpha's tools contract only."""
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    cfg = config(sim, tmp_path, models=[QMODEL], refusal_controls=["gamma"])
    full_round(cfg, QMODEL, ["alpha", "beta", "gamma"], NOW - timedelta(minutes=10))
    at = NOW - timedelta(minutes=2)
    append_live_counts(cfg.db_path, [*judged("alpha", LiveQuality.TOOLS, 4, 26, at),
                                     *judged("beta", LiveQuality.TOOLS, 28, 2, at),
                                     *judged("gamma", LiveQuality.TOOLS, 30, 0, at),
                                     *judged("alpha", LiveQuality.EMPTY, 30, 0, at)])
    result = watch_model(cfg, QMODEL, NOW, fetch_listing(cfg, QMODEL))
    assert [(s.tag, s.signal, s.quality) for s in result.suspicions] == [("alpha", "live_quality", "tools")]
    assert result.request is not None and dict(result.request.contracts) == {"alpha": ("tools",)}
    with store.open_store(cfg.db_path, read_only=True) as con:
        rows = con.execute("SELECT tag, signal, quality, requests, failures, failure_rate, status, evidence "
                           "FROM suspicions").fetchall()
    assert rows == [("alpha", "live_quality", "tools", 30, 26, 0.8667, "scheduled",
                     "live tools answers failed 26/30 (87%) >= suspect_failure_rate 50% and >= 3% + "
                     "suspect_peer_margin 0.3 (the peers' 3% (2/60 on 2 endpoints)) in 300 s (schema_violation 26)")]


def test_a_schema_every_endpoint_fails_suspects_no_one(sim: SimulatorHandle, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A client whose response_format no model can meet: every endpoint's structured answers fail. The peer rule
    sees the client's bug, not a provider's: no suspicion, no round, no row."""
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    cfg = config(sim, tmp_path, models=[QMODEL])
    full_round(cfg, QMODEL, ["alpha", "beta", "gamma"], NOW - timedelta(minutes=10))
    at = NOW - timedelta(minutes=2)
    append_live_counts(cfg.db_path, [c for t in ("alpha", "beta", "gamma")
                                     for c in judged(t, LiveQuality.STRUCTURED, 0, 40, at)])
    result = watch_model(cfg, QMODEL, NOW, fetch_listing(cfg, QMODEL))
    assert result.suspicions == () and result.request is None
    with store.open_store(cfg.db_path, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM suspicions").fetchone() == (0,)


def test_a_rate_the_probes_cleared_is_not_suspected_again_without_peers(
        sim: SimulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tier 1 (alpha) takes all the traffic, and its client's schema fails 60 %: no peer has evidence, so alpha
    is suspected on its own rate, once. The pinned probes clear it; past the cooldown the same 60 % suspects
    nothing (the spend stays bounded), a clearly higher rate does."""
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    cfg = config(sim, tmp_path, models=[QMODEL])
    full_round(cfg, QMODEL, ["alpha", "beta", "gamma"], NOW - timedelta(minutes=10))
    listing = fetch_listing(cfg, QMODEL)
    append_live_counts(cfg.db_path, judged("alpha", LiveQuality.STRUCTURED, 12, 18, NOW - timedelta(minutes=1)))
    [first] = watch_model(cfg, QMODEL, NOW, listing).suspicions
    assert "no peer evidence (0 judged structured answers elsewhere < 20)" in first.evidence
    with store.open_store(cfg.db_path) as con:  # what resolve_suspicions writes when the probes found it clean
        set_suspicion_status(con, [first.suspicion_id], SuspicionStatus.CLEARED, "clean")
        assert cleared_rates(con, QMODEL)[("alpha", LiveQuality.STRUCTURED)].failure_rate == 0.6
    later = NOW + timedelta(seconds=cfg.suspect_cooldown_s + 60)
    append_live_counts(cfg.db_path, judged("alpha", LiveQuality.STRUCTURED, 12, 18, later - timedelta(minutes=1)))
    assert watch_model(cfg, QMODEL, later, listing).suspicions == ()
    append_live_counts(cfg.db_path, judged("alpha", LiveQuality.STRUCTURED, 0, 120, later))
    [again] = watch_model(cfg, QMODEL, later + timedelta(minutes=1), listing).suspicions
    assert again.quality == "structured" and "the 60% the probes cleared at" in again.evidence
