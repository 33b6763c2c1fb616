"""Replay: input parsing (errors name the line), folding decide(), output lines, summaries and the CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from cli.replay_cmd import parse_set, replay_command
from tasks.config import CanaryConfig
from tasks.config_loading import variant
from tasks.core.policy import PolicyConfig, RoundInput, decide
from tasks.core.replay import decision_line, replay
from tasks.core.replay_input import ReplayInputError, build_replay_lines, parse_replay
from tasks.core.replay_summary import format_summaries, summarize, what_if
from tasks.core.types import EndpointState, Layer, Mode, RoundStatus
from tasks.errors import ConfigError

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[1] / "data"
ENFORCE = CanaryConfig(mode=Mode.ENFORCE)


def line(ts: str, tag: str, status: str, model: str = "m/a") -> str:
    return json.dumps({"round_ts": f"2026-11-01T{ts}:00Z", "model": model, "tag": tag, "status": status})


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


# -- the CLI command -----------------------------------------------------------------------------------------
app = typer.Typer()
app.command("replay")(replay_command)


@app.command("other")
def _other() -> None:  # a second command keeps Typer in multi-command mode, as in cli/main.py
    """Unused."""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "canary.toml"
    path.write_text('mode = "enforce"\n')
    return path


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["replay", *args])
    return result.exit_code, result.stdout, result.stderr


def test_cli_json_lines(config: Path) -> None:
    code, out, err = invoke(str(DATA / "replay_basic.jsonl"), "--config", str(config), "--json")
    assert code == 0
    assert out == (DATA / "replay_basic_expected.jsonl").read_text()
    assert err.splitlines()[0].startswith("setting") and err.splitlines()[1].startswith("baseline")


def test_cli_text_and_set_override(config: Path) -> None:
    code, out, _ = invoke(
        str(DATA / "replay_basic.jsonl"),
        "--config",
        str(config),
        "--set",
        "min_hosts=0",
        "--set",
        "mode=observe",
    )
    assert code == 0
    rows = out.splitlines()
    assert rows[0] == (
        "2026-11-01T10:30:00Z  m/a  deepinfra/fp8  would_suspend  until=2026-11-02T10:30:00Z  step=1"
    )
    assert not any("floor_blocked" in r for r in rows)


def test_cli_summary_with_variants(config: Path) -> None:
    code, out, _ = invoke(
        str(DATA / "replay_basic.jsonl"),
        "--config",
        str(config),
        "--summary",
        "--json",
        "--compare",
        "fail_rounds=3",
        "--compare",
        "min_hosts=0 restore_rounds=1",
    )
    assert code == 0
    rows = [json.loads(r) for r in out.splitlines()]
    assert [r["label"] for r in rows] == ["baseline", "fail_rounds=3", "min_hosts=0 restore_rounds=1"]
    assert rows[0]["suspensions"] == 5 and rows[0]["suspended_endpoint_hours"] == 74.0


def test_cli_summary_labels_the_set_row_with_its_overrides_not_baseline(config: Path) -> None:
    """`--set k=v --summary` replays the changed setting: its row says so (issue 30: it said "baseline"), and each
    --compare row names every override it ran with."""
    plain = [json.loads(r) for r in invoke(str(DATA / "replay_basic.jsonl"), "--config", str(config),
                                           "--summary", "--json")[1].splitlines()]
    code, out, _ = invoke(str(DATA / "replay_basic.jsonl"), "--config", str(config), "--set", "fail_rounds=3",
                          "--summary", "--json", "--compare", "min_hosts=0")
    assert code == 0
    rows = [json.loads(r) for r in out.splitlines()]
    assert [r["label"] for r in plain] == ["baseline"]
    assert [r["label"] for r in rows] == ["fail_rounds=3", "fail_rounds=3 min_hosts=0"]
    assert rows[0]["suspensions"] != plain[0]["suspensions"]  # it is another setting, not the baseline
    _, _, err = invoke(str(DATA / "replay_basic.jsonl"), "--config", str(config), "--set", "fail_rounds=3")
    assert err.splitlines()[1].startswith("fail_rounds=3 ")  # the table after the decisions, on stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([str(DATA / "replay_bad_status.jsonl")], "replay: line 3: status must be one of"),
        (["/nonexistent/rounds.jsonl"], "replay: file /nonexistent/rounds.jsonl not found"),
        ([str(DATA / "replay_basic.jsonl"), "--set", "fail_rounds=zero"], "config: fail_rounds must be"),
        ([str(DATA / "replay_basic.jsonl"), "--set", "nope"], "--set expects key=value"),
        ([str(DATA / "replay_basic.jsonl"), "--compare", "bogus=1"], "config: unknown key 'bogus'"),
        (
            [str(DATA / "replay_basic.jsonl"), "--config", "/nonexistent.toml"],
            "config: file /nonexistent.toml",
        ),
    ],
)
def test_cli_errors_are_one_line_exit_2(args: list[str], message: str, config: Path) -> None:
    if "--config" not in args:
        args = [*args, "--config", str(config)]
    code, out, err = invoke(*args)
    assert code == 2 and out == ""
    assert err.startswith(f"canary: {message}") and err.count("\n") == 1 and "Traceback" not in err


def test_cli_reads_stdin(config: Path) -> None:
    text = "\n".join(line(ts, t, "fail" if t == "x" else "clean") for ts in ("10:00", "10:30") for t in "xyz")
    result = CliRunner().invoke(app, ["replay", "-", "--config", str(config), "--json"], input=text)
    assert result.exit_code == 0
    assert [json.loads(r)["action"] for r in result.stdout.splitlines()] == ["suspend"]


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
