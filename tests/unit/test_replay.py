"""Replay: input parsing (errors name the line), folding decide(), output lines and summaries (the CLI:
test_replay_cli.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from provider_canary.cli.replay_cmd import parse_set
from tasks.config import CanaryConfig
from tasks.config.loading import variant
from tasks.core.policy import PolicyConfig, RoundInput, decide
from tasks.core.replay import decision_line, replay
from tasks.core.replay_input import ReplayInputError, build_replay_lines, parse_replay
from tasks.core.replay_summary import format_summaries, summarize, what_if
from tasks.core.types import EndpointState, Layer, Mode, RoundStatus
from tasks.errors import ConfigError
from tests.support.replay_lines import DATA, line

pytestmark = pytest.mark.unit

ENFORCE = CanaryConfig(mode=Mode.ENFORCE)


def test_golden_replay_of_the_sample_history() -> None:
    expected = [json.loads(x) for x in (DATA / "replay_basic_expected.jsonl").read_text().splitlines()]
    with (DATA / "replay_basic.jsonl").open() as fh:
        got = [decision_line(d) for d in replay(fh, ENFORCE)]
    assert got == expected
    assert {x["action"] for x in expected} == {"suspend", "restore", "floor_blocked", "expire"}


def test_observe_mode_replays_would_actions() -> None:
    with (DATA / "replay_basic.jsonl").open() as fh:
        got = [decision_line(d)["action"] for d in replay(fh, CanaryConfig(mode=Mode.OBSERVE))]
    assert set(got) == {"would_suspend", "would_restore", "floor_blocked", "would_expire"}


def test_replay_is_the_fold_of_decide() -> None:
    lines = [
        line("10:00", "x", "fail"),
        line("10:00", "y", "clean"),
        line("10:00", "z", "clean"),
        line("10:30", "x", "fail"),
        line("10:30", "y", "clean"),
        line("10:30", "z", "transport"),
    ]
    cfg = PolicyConfig(mode=Mode.ENFORCE)
    states: dict[str, EndpointState] = {}
    direct = []
    for ts, statuses in [
        ("10:00", {"x": "fail", "y": "clean", "z": "clean"}),
        ("10:30", {"x": "fail", "y": "clean", "z": "transport"}),
    ]:
        at = datetime.fromisoformat(f"2026-11-01T{ts}:00+00:00")
        rnd = RoundInput(
            f"m/a@2026-11-01T{ts}:00Z",
            at,
            "m/a",
            {t: RoundStatus(s) for t, s in statuses.items()},
            tuple(statuses),
        )
        states, made = decide(states, rnd, cfg)
        direct += made
    assert replay(lines, cfg) == direct
    assert [d.action for d in direct] == ["suspend"]


def test_rounds_are_replayed_in_time_order_whatever_the_line_order() -> None:
    lines = [
        line("10:30", "x", "fail"),
        line("10:00", "x", "clean"),
        line("11:00", "x", "fail"),
        line("10:00", "y", "clean"),
        line("10:30", "y", "clean"),
        line("11:00", "y", "clean"),
        line("10:00", "z", "clean"),
        line("10:30", "z", "clean"),
        line("11:00", "z", "clean"),
    ]
    got = [decision_line(d) for d in replay(lines, ENFORCE)]
    assert [(x["at"], x["tag"], x["action"]) for x in got] == [("2026-11-01T11:00:00Z", "x", "suspend")]


def test_exclusion_lines_set_layers_from_their_time_on() -> None:
    lines = [
        json.dumps({"round_ts": "2026-11-01T10:30:00Z", "model": "m/a", "builtin": ["deepinfra"]}),
        json.dumps({"operational": [{"tag": "novita/fp8", "until": "2026-11-01T11:00:00Z"}]}),
        line("10:00", "deepinfra/fp8", "clean"),
        line("10:30", "deepinfra/fp8", "clean"),
        line("10:30", "novita/fp8", "clean"),
        line("11:00", "novita/fp8", "clean"),
        line("10:30", "novita/fp8", "clean", model="m/b"),
    ]
    history = parse_replay(lines)
    assert [(r.model, r.round_ts.hour, r.round_ts.minute, dict(r.excluded)) for r in history.rounds] == [
        ("m/a", 10, 0, {}),
        ("m/a", 10, 30, {"deepinfra/fp8": Layer.BUILTIN, "novita/fp8": Layer.OPERATIONAL}),
        ("m/b", 10, 30, {"novita/fp8": Layer.OPERATIONAL}),
        ("m/a", 11, 0, {}),  # the operational entry ran out at 11:00
    ]


def test_exclusions_make_the_floor_block() -> None:
    lines = [
        json.dumps({"model": "m/a", "operational": ["z"]}),
        *[line(ts, t, "fail" if t == "x" else "clean") for ts in ("10:00", "10:30") for t in "xyz"],
    ]
    assert [d.action for d in replay(lines, ENFORCE)] == ["floor_blocked"]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("not json", "line 2: not JSON"),
        ("[1, 2]", "line 2: expected a JSON object"),
        ('{"model": "m/a"}', "line 2: expected a status line"),
        (
            '{"round_ts": "2026-11-01T10:00:00Z", "tag": "x", "status": "fail"}',
            "line 2: status line without model",
        ),
        ('{"model": "m/a", "tag": "x", "status": "fail"}', "line 2: status line without round_ts"),
        (
            '{"round_ts": "yesterday", "model": "m/a", "tag": "x", "status": "fail"}',
            "line 2: round_ts is not",
        ),
        ('{"round_ts": 5, "model": "m/a", "tag": "x", "status": "fail"}', "line 2: round_ts must be"),
        (
            '{"round_ts": "2026-11-01T10:00:00Z", "model": "m/a", "tag": "", "status": "fail"}',
            "line 2: tag must",
        ),
        (
            '{"round_ts": "2026-11-01T10:00:00Z", "model": "m/a", "tag": "x", "status": "ok"}',
            "line 2: status must",
        ),
        (
            '{"round_ts": "2026-11-01T10:00:00Z", "model": "m/a", "tag": "y", "status": "fail"}',
            "line 2: second",
        ),
        ('{"model": "m/a", "builtin": 3}', "line 2: builtin must be a list"),
        ('{"model": "m/a", "operational": [{"until": "x"}]}', "line 2: operational items"),
        ('{"model": "", "builtin": []}', "line 2: model must be"),
    ],
)
def test_bad_lines_are_named(bad: str, message: str) -> None:
    first = line("10:00", "y", "clean")
    with pytest.raises(ReplayInputError, match=message) as info:
        parse_replay([first, bad])
    assert info.value.lineno == 2 and "\n" not in str(info.value)


def test_blank_lines_count_in_line_numbers() -> None:
    with pytest.raises(ReplayInputError, match="line 3: status must"):
        parse_replay((DATA / "replay_bad_status.jsonl").read_text().splitlines())


def test_build_replay_lines_from_a_status_frame() -> None:
    frame = pd.DataFrame(
        {
            "round_ts": [
                pd.Timestamp("2026-11-01 10:30"),
                pd.Timestamp("2026-11-01 10:00", tz="UTC"),
                pd.Timestamp("2026-11-01 10:30"),
            ],
            "model": ["m/a", "m/a", "m/a"],
            "tag": ["y", "x", "x"],
            "status": ["clean", "fail", "fail"],
        }
    )
    frame["round_ts"] = pd.to_datetime(frame["round_ts"], utc=True)
    lines = list(build_replay_lines(frame))
    assert lines == [
        {"round_ts": "2026-11-01T10:00:00Z", "model": "m/a", "tag": "x", "status": "fail"},
        {"round_ts": "2026-11-01T10:30:00Z", "model": "m/a", "tag": "x", "status": "fail"},
        {"round_ts": "2026-11-01T10:30:00Z", "model": "m/a", "tag": "y", "status": "clean"},
    ]
    assert len(parse_replay(lines).rounds) == 2
    assert list(build_replay_lines(frame.iloc[:0])) == []


def test_summary_counts_and_endpoint_hours() -> None:
    history = parse_replay((DATA / "replay_basic.jsonl").read_text().splitlines())
    decisions = replay(history, ENFORCE)
    s = summarize(decisions, history)
    # deepinfra 10:30 -> restore 11:30 (1 h); groq 10:30 -> end of history (day 2 11:30: 25 h);
    # chutes 1 d (24 h); novita 1 d (24 h); deepinfra again from the last round (0 h)
    assert (s.suspensions, s.endpoints_suspended, s.suspended_endpoint_hours) == (5, 4, 74.0)
    assert (s.floor_blocks, s.restores, s.expiries, s.lifts, s.rounds) == (1, 1, 2, 0, 11)
    variants = what_if(history, ENFORCE, [variant(ENFORCE, {"min_hosts": "0"}), variant(ENFORCE, {"fail_rounds": "3"})])
    assert [v.label for v in variants] == ["baseline", "min_hosts=0", "fail_rounds=3"]
    assert variants[0] == s
    assert variants[1].floor_blocks == 0 and variants[1].suspended_endpoint_hours > s.suspended_endpoint_hours
    assert variants[2].suspensions < s.suspensions
    table = format_summaries(variants)
    assert len(table) == 4 and table[0].startswith("setting") and "74.0" in table[1]


def test_parse_set() -> None:
    assert parse_set(["fail_rounds=3", " ladder = 1d,2d "]) == {"fail_rounds": "3", "ladder": "1d,2d"}
    with pytest.raises(ConfigError, match="key=value"):
        parse_set(["fail_rounds"])


def test_naive_timestamps_are_utc() -> None:
    history = parse_replay(
        [json.dumps({"round_ts": "2026-11-01T10:00:00", "model": "m", "tag": "x", "status": "clean"})]
    )
    assert history.rounds[0].round_ts == datetime(2026, 11, 1, 10, tzinfo=UTC)
    assert history.end == datetime(2026, 11, 1, 10, tzinfo=UTC) + timedelta(0)


def test_a_round_is_replayed_in_the_mode_its_lines_recorded() -> None:
    """`canary export-history` writes each round's mode: an enforce history replays as enforce under an
    observe config; lines without a mode keep the configured one; `--set mode=` replays all in one mode."""
    def moded(ts: str, tag: str, status: str, mode: str | None) -> str:
        obj = json.loads(line(ts, tag, status))
        return json.dumps({**obj, "mode": mode} if mode else obj)

    rounds = [("10:00", "fail"), ("10:30", "fail")]
    tags = {"x": None, "y": "clean", "z": "clean"}

    def lines(mode: str | None) -> list[str]:
        return [moded(ts, t, st or status, mode) for ts, status in rounds for t, st in tags.items()]

    observe = CanaryConfig(mode=Mode.OBSERVE)
    assert [str(d.action) for d in replay(lines("enforce"), observe)] == ["suspend"]
    assert [str(d.action) for d in replay(lines(None), observe)] == ["would_suspend"]
    assert [str(d.action) for d in replay(lines("observe"), ENFORCE)] == ["would_suspend"]
    history = parse_replay(lines("enforce"))
    assert [str(d.action) for d in replay(history.in_mode(Mode.OBSERVE), observe)] == ["would_suspend"]
    with pytest.raises(ReplayInputError, match="line 2: mode must be observe or enforce"):
        parse_replay([lines("enforce")[0], moded("10:00", "y", "clean", "shadow")])
    with pytest.raises(ReplayInputError, match="line 2: mode differs"):
        parse_replay([lines("enforce")[0], moded("10:00", "y", "clean", "observe")])


def test_build_replay_lines_records_the_rounds_mode() -> None:
    frame = pd.DataFrame({"round_ts": pd.to_datetime(["2026-11-01 10:00"], utc=True), "model": ["m/a"],
                          "tag": ["x"], "status": ["fail"], "mode": ["enforce"]})
    assert list(build_replay_lines(frame)) == [
        {"round_ts": "2026-11-01T10:00:00Z", "model": "m/a", "tag": "x", "status": "fail", "mode": "enforce"}
    ]
