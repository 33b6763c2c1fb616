"""A per-run mode (`canary run --mode`, a deployment run's `mode`) holds for that run only (docs/operations.md
2b): it is not a mode switch, so neither that run nor the next ordinary one makes `mode-switch` lifts, and
the states stay in the stored mode. Through the real store and the round's own settle-and-save."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tasks import store
from tasks.config import CanaryConfig
from tasks.core.judge import RoundFindings, RoundJudgement
from tasks.core.plan import make_round_id
from tasks.core.settle import Settlement
from tasks.core.types import Contract, ContractResult, Endpoint, Mode, Outcome, RoundInfo
from tasks.round.write_window import settle_and_save
from tests.support import NO_EXCLUSIONS

pytestmark = pytest.mark.integration
MODEL = "acme/model"
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
TAGS = ("a", "b", "c", "d")


def run(con: store.Connection, cfg: CanaryConfig, n: int, failing: set[str], mode: str | None) -> Settlement:
    ts = T0 + timedelta(minutes=30 * n)
    rid = make_round_id(MODEL, ts)
    outcomes = [ContractResult(rid, MODEL, t, Contract.STRUCTURED, Outcome.FAIL if t in failing else Outcome.PASS,
                               "x") for t in TAGS]
    info = RoundInfo(rid, MODEL, ts, Mode(mode) if mode else cfg.mode)
    eps = [Endpoint(MODEL, t, t.upper()) for t in TAGS]
    run_cfg = replace(cfg, run_mode=Mode(mode)) if mode else cfg  # what `resolve_config(..., mode=mode)` gives
    return settle_and_save(con, run_cfg, info, RoundJudgement(outcomes, RoundFindings()), [], eps, landed_at=ts)


@pytest.mark.parametrize(("stored", "once"), [(Mode.OBSERVE, "enforce"), (Mode.ENFORCE, "observe")])
def test_a_per_run_mode_is_not_a_mode_switch(tmp_path: Path, stored: Mode, once: str) -> None:
    cfg = CanaryConfig(models=(MODEL,), mode=stored, db_path=str(tmp_path / "c.duckdb"),
                       exclusions_file=NO_EXCLUSIONS)
    with store.open_store(cfg.db_path) as con:
        first = run(con, cfg, 0, {"b"}, None)
        second = run(con, cfg, 1, {"b"}, None)  # b: suspended (enforce) or shadow-suspended (observe)
        overridden = run(con, cfg, 2, {"c"}, once)  # c fails once; the run is in the other mode
        third = run(con, cfg, 3, {"c"}, None)  # c fails again: suspended in the stored mode
        decisions = store.decisions_between(con, model=MODEL)
        modes = {r[0] for r in con.execute("SELECT DISTINCT mode FROM endpoint_state").fetchall()}
    assert [d.actor for d in decisions if d.actor == "mode-switch"] == []
    assert not [a for a in [*overridden.alerts, *third.alerts] if a.kind == "lift"]
    assert modes == {str(stored)}  # the per-run mode never became the stored states' mode
    assert first.decisions == ()
    suspend = "suspend" if stored is Mode.ENFORCE else "would_suspend"
    assert [(str(d.action), d.tag) for d in second.decisions] == [(suspend, "b")]
    assert overridden.decisions == () and overridden.info.mode is Mode(once)
    # the overriding run publishes its own mode's view of the same states
    assert ("b" in overridden.ignore.ignore) is (once == "enforce")
    # the streaks carried on through the overriding run: b's second clean round restores it, c's second
    # failing round suspends it
    restore = "restore" if stored is Mode.ENFORCE else "would_restore"
    assert [(str(d.action), d.tag) for d in third.decisions] == [(restore, "b"), (suspend, "c")]
    assert ("c" in third.ignore.ignore) is (stored is Mode.ENFORCE)


@pytest.mark.parametrize(("stored", "once"), [(Mode.OBSERVE, "enforce"), (Mode.ENFORCE, "observe")])
def test_the_flows_per_run_mode_is_not_the_stored_mode_without_an_admin_setting(
    tmp_path: Path, stored: Mode, once: str
) -> None:
    """`canary run --mode` / the flow's `mode` parameter, as the round's config carries it (`resolve_config`):
    with no `canary mode` setting the stored mode is the file's, so the run's states stay in it."""
    from tasks.config.loading import resolve_config
    from tasks.round.write_window import read_prior

    path = tmp_path / "canary.toml"
    path.write_text(f'mode = "{stored}"\nmodels = ["{MODEL}"]\n', encoding="utf-8")
    cfg = resolve_config(path, {"db_path": str(tmp_path / "c.duckdb"),
                                "exclusions_file": NO_EXCLUSIONS}, mode=once)
    assert (cfg.mode, cfg.run_mode) == (stored, Mode(once))
    with store.open_store(cfg.db_path) as con:
        prior = read_prior(con, cfg, MODEL, T0)
    assert prior.mode is Mode(once) and prior.state_mode is stored


def test_a_bad_per_run_mode_is_one_clear_line(tmp_path: Path) -> None:
    from tasks.config.loading import resolve_config
    from tasks.errors import ConfigError

    with pytest.raises(ConfigError, match="^config: mode must be 'observe' or 'enforce' \\(got 'shadow'\\)$"):
        resolve_config(None, {"db_path": str(tmp_path / "c.duckdb")}, mode="shadow")
