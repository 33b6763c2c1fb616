"""The ignore list says why a canary suspension is there (issue 24): the failing contracts with their reasons
and the evidence rounds, both in the round that suspends and when read back later (admin commands, the next
rounds' artifacts). Through the real store and the round's own settle-and-save."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tasks import store
from tasks.config import CanaryConfig
from tasks.core.judge import RoundFindings, RoundJudgement
from tasks.core.plan import make_round_id
from tasks.core.render.markdown import render_ignore_markdown
from tasks.core.types import Contract, ContractResult, Endpoint, Layer, Mode, Outcome, RoundInfo
from tasks.ignore_list.publish import current_ignore_list
from tasks.round.write_window import settle_and_save
from tests.support import NO_EXCLUSIONS

pytestmark = pytest.mark.integration
MODEL = "acme/model"
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
TAGS = ("a", "b", "c", "d")


def test_a_canary_entry_names_the_failing_contracts_and_the_evidence_rounds(tmp_path: Path) -> None:
    cfg = CanaryConfig(models=(MODEL,), mode=Mode.ENFORCE, db_path=str(tmp_path / "c.duckdb"),
                       exclusions_file=NO_EXCLUSIONS)
    eps = [Endpoint(MODEL, t, t.upper()) for t in TAGS]
    saved = []
    with store.open_store(cfg.db_path) as con:
        for n in range(3):
            ts = T0 + timedelta(minutes=30 * n)
            rid = make_round_id(MODEL, ts)
            results = [ContractResult(rid, MODEL, t, c, Outcome.FAIL if (t, c) == ("b", Contract.STRUCTURED)
                                      else Outcome.PASS, "fenced_json" if t == "b" else "ok")
                       for t in TAGS for c in (Contract.STRUCTURED, Contract.TTFT)]
            saved.append(settle_and_save(con, cfg, RoundInfo(rid, MODEL, ts, Mode.ENFORCE),
                                         RoundJudgement(results, RoundFindings()), [], eps, landed_at=ts))
        later = current_ignore_list(con, cfg, MODEL, None, T0 + timedelta(hours=2))
    ids = [make_round_id(MODEL, T0 + timedelta(minutes=30 * n)) for n in (0, 1)]
    why = f"failed structured (fenced_json) in rounds {ids[0].rsplit('@')[1]}, {ids[1].rsplit('@')[1]}"
    [suspending] = [e for e in saved[1].ignore.entries if e.layer is Layer.CANARY]
    assert suspending.tag == "b" and suspending.reason == f"canary suspension (ladder step 1): {why}"
    # the next round (b still failing, already suspended) and an admin command read it back from the store
    assert [e.reason for e in saved[2].ignore.entries] == [suspending.reason]
    assert [e.reason for e in later.entries] == [suspending.reason]
    assert why in render_ignore_markdown(later)
