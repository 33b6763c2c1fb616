"""`canary replay` and partial (confirmation) rounds: absent endpoints freeze, the floor counts the latest full
round's endpoints, and export lines mark partial rounds (tasks/core/replay.py)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tasks.core.policy import PolicyConfig
from tasks.core.replay import replay
from tasks.core.replay_input import ReplayInputError, build_replay_lines, parse_replay
from tasks.core.types import Mode

pytestmark = pytest.mark.unit
M = "acme/model"
CFG = PolicyConfig(mode=Mode.ENFORCE, min_hosts=2)


def line(ts: str, tag: str, status: str, partial: bool | None = None) -> str:
    obj: dict[str, object] = {"round_ts": ts, "model": M, "tag": tag, "status": status}
    if partial is not None:
        obj["partial"] = partial
    return json.dumps(obj)


FULL = [line("2026-11-02T10:00:00Z", t, "fail" if t == "b" else "clean") for t in ("a", "b", "c", "d")]


def test_a_partial_round_suspends_with_the_full_rounds_endpoints_counted_for_the_floor() -> None:
    history = parse_replay([*FULL, line("2026-11-02T10:05:00Z", "b", "fail", partial=True)])
    confirm = history.rounds[1]
    assert confirm.partial and dict(confirm.statuses) == {"b": "fail"}
    assert confirm.discovered == ("a", "b", "c", "d")
    decisions = replay(history, CFG)
    assert [(d.tag, str(d.action), d.at.minute) for d in decisions] == [("b", "suspend", 5)]


def test_without_the_flag_the_same_round_is_a_full_round_of_one_endpoint() -> None:
    decisions = replay([*FULL, line("2026-11-02T10:05:00Z", "b", "fail")], CFG)
    assert [str(d.action) for d in decisions] == ["floor_blocked"]


def test_absent_endpoints_freeze_in_a_partial_round() -> None:
    lines = [*FULL, line("2026-11-02T10:05:00Z", "b", "clean", partial=True),
             *[line("2026-11-02T10:30:00Z", t, "fail" if t in ("a", "b") else "clean") for t in "abcd"],
             line("2026-11-02T10:35:00Z", "a", "fail", partial=True)]
    history = parse_replay(lines)
    decisions = replay(history, CFG)
    # a: fail at 10:30 then its confirmation at 10:35 -> suspended; b: fail, clean, fail: streak 1 only
    assert [(d.tag, str(d.action), d.at.strftime("%H:%M")) for d in decisions] == [("a", "suspend", "10:35")]


def test_the_partial_flag_must_agree_within_a_round_and_be_a_boolean() -> None:
    with pytest.raises(ReplayInputError, match="line 2: partial differs"):
        parse_replay([line("2026-11-02T10:05:00Z", "a", "fail", partial=True),
                      line("2026-11-02T10:05:00Z", "b", "fail", partial=False)])
    with pytest.raises(ReplayInputError, match="partial must be true or false"):
        parse_replay([json.dumps({"round_ts": "2026-11-02T10:05:00Z", "model": M, "tag": "a",
                                  "status": "fail", "partial": "yes"})])


def test_export_lines_mark_partial_rounds_only() -> None:
    frame = pd.DataFrame({
        "round_ts": pd.to_datetime(["2026-11-02T10:00:00Z", "2026-11-02T10:05:00Z"], utc=True),
        "model": [M, M], "tag": ["a", "a"], "status": ["fail", "fail"], "partial": [False, True],
    })
    lines = list(build_replay_lines(frame))
    assert "partial" not in lines[0] and lines[1]["partial"] is True
    assert list(build_replay_lines(frame.drop(columns=["partial"])))[1].get("partial") is None
