"""The render tests' common cases (tests/unit/test_render*.py): a round time, a model, an ignore list, a digest, a
decision, and the Slack blocks of an alert."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from tasks.core.types import (
    Action,
    Decision,
    IgnoreEntry,
    IgnoreList,
    Layer,
    Mode,
)
from tests.support.secrets_registry import fresh_secret_registry  # noqa: F401 (autouse)

T = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
M = "meta-llama/llama-3.3-70b-instruct"
IGNORE = IgnoreList(
    model=M,
    ignore=("deepinfra/fp8", "novita"),
    entries=(
        IgnoreEntry("deepinfra/fp8", Layer.CANARY, "failed 2 rounds", T + timedelta(days=1)),
        IgnoreEntry("novita", Layer.BUILTIN, "mixes pt/es"),
    ),
)
DIGEST = (
    "Ignore list for `meta-llama/llama-3.3-70b-instruct` (2): `deepinfra/fp8` (canary until "
    "2026-11-02 10:00 UTC), `novita` (builtin)"
)


def decision(action: Action, tag: str = "deepinfra/fp8", **kw: object) -> Decision:
    mode = Mode.OBSERVE if action.value.startswith("would_") else Mode.ENFORCE
    fields: dict = dict(at=T, model=M, tag=tag, action=action, mode=mode, ladder_step=1,
                        until=T + timedelta(days=1), reason="failed 2 consecutive rounds",
                        evidence_round_ids=("r1", "r2"), round_id="r2")
    fields.update(kw)
    return Decision(**fields)


def blocks(alert) -> list[dict]:  # type: ignore[no-untyped-def]
    return json.loads(alert.blocks_json)


def section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def header(text: str) -> dict:
    return {"type": "header", "text": {"type": "plain_text", "text": text}}


def context(text: str) -> dict:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}
