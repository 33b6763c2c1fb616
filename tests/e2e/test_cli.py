"""The `canary` command line: --help everywhere, one clear line on bad input, admin commands end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from provider_canary.cli.main import app
from provider_canary.demo.simulator_process import SimulatorChild
from tasks import store
from tasks.runtime.clock import StepClock
from tests.support import NO_EXCLUSIONS
from tests.support.rounds import child_simulator, default_fleet_slow_start

pytestmark = pytest.mark.e2e
runner = CliRunner()
MODEL = "meta-llama/llama-3.3-70b-instruct"
COMMANDS = [
    [],
    ["demo"],
    ["run"],
    ["serve"],
    ["simulator"],
    ["status"],
    ["ignore-list"],
    ["exclude"],
    ["exclude", "add"],
    ["exclude", "remove"],
    ["exclude", "list"],
    ["lift"],
    ["mode"],
    ["check-language"],
    ["replay"],
    ["export-history"],
    ["at"],
    ["router"],
    ["metrics"],
]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c) or "canary")
def test_help_everywhere(cmd: list[str]) -> None:
    result = runner.invoke(app, [*cmd, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output


def canary(
    *args: str, env: dict[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it."""
    full_env = {k: v for k, v in os.environ.items() if k != "OPENROUTER_API_KEY"}
    full_env.update(env or {})
    exe = Path(sys.executable).with_name("canary")
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, env=full_env, input=stdin, timeout=120
    )


def assert_one_clear_line(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_malformed_config_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('models = ["x/y"]\nmin_hosts = "two"\n')
    assert_one_clear_line(canary("run", "--config", str(bad)), "min_hosts")
    bad.write_text("models = [unclosed\n")
    assert_one_clear_line(canary("run", "--config", str(bad)), "not valid TOML")


def test_missing_key_is_one_line(tmp_path: Path) -> None:
    assert_one_clear_line(canary("run", "--db", str(tmp_path / "x.duckdb")), "OPENROUTER_API_KEY")


def test_unreachable_base_url_is_one_line(tmp_path: Path) -> None:
    proc = canary(
        "run",
        "--base-url",
        "http://127.0.0.1:9/api/v1",
        "--db",
        str(tmp_path / "x.duckdb"),
        env={"OPENROUTER_API_KEY": "sk-or-v1-" + "s3cr3t" * 6},
    )
    assert_one_clear_line(proc, "127.0.0.1:9")
    assert "s3cr3t" not in proc.stderr + proc.stdout


def test_bad_url_and_unknown_mode_are_one_line() -> None:
    assert_one_clear_line(canary("run", "--base-url", "ftp://nowhere"), "base_url")
    assert_one_clear_line(canary("run", "--mode", "maybe"), "mode")


sim = child_simulator(default_fleet_slow_start())  # lambda/fp8: 6 s against a 3 s ttft_s


def test_unknown_model_is_one_line(sim: SimulatorChild, tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        f'models = ["acme/nothing"]\nbase_url = "{sim.base_url}"\ndb_path = "{tmp_path}/x.duckdb"\n'
    )
    proc = canary("run", "--config", str(cfg), env={"OPENROUTER_API_KEY": sim.api_key})
    assert_one_clear_line(proc, "unknown model")


@pytest.fixture
def config_file(sim: SimulatorChild, tmp_path: Path) -> Path:
    cfg = tmp_path / "canary.toml"
    cfg.write_text(
        f'models = ["{MODEL}"]\nmode = "enforce"\nbase_url = "{sim.base_url}"\n'
        f'db_path = "{tmp_path}/c.duckdb"\n'
        f'publish_dir = "{tmp_path}/published"\nexclusions_file = "{NO_EXCLUSIONS}"\n'
        'refusal_controls = ["amazon-bedrock"]\nttft_s = 3\nread_timeout_s = 5\nprobe_budget_s = 9\n'
    )
    return cfg


def invoke(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def two_rounds(sim: SimulatorChild, config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flows.round import canary_round

    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    clock = StepClock(datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1))
    for _ in range(2):
        sim.reset_counters()
        canary_round(model=MODEL, round_ts=clock.now(), config_path=str(config))
        clock.advance(timedelta(minutes=30))


def test_admin_commands_change_the_ignore_list_at_once(
    prefect_harness: None, sim: SimulatorChild, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    two_rounds(sim, config_file, monkeypatch)
    cfg = ["--config", str(config_file)]
    listed = json.loads(invoke("ignore-list", *cfg, "--json").output)
    assert "lambda/fp8" in listed["ignore"] and "groq" not in listed["ignore"]

    invoke("exclude", "add", "groq", "--reason", "429 storm", "--model", MODEL, "--until", "2h", *cfg)
    listed = json.loads(invoke("ignore-list", *cfg, "--json").output)
    assert {"tag": "groq", "layer": "operational"}.items() <= next(
        e for e in listed["entries"] if e["tag"] == "groq"
    ).items()
    published = json.loads(
        (config_file.parent / "published" / "meta-llama-llama-3-3-70b-instruct.json").read_text()
    )
    assert "groq" in published["ignore"]  # effective for the next request built, not the next round

    invoke("lift", "lambda/fp8", "--reason", "provider fixed it", "--model", MODEL, *cfg)
    status = json.loads(invoke("status", *cfg, "--json").output)
    lam = next(r for r in status["endpoints"] if r["tag"] == "lambda/fp8")
    assert lam["state"] == "ok" and lam["excluded_by"] == []

    invoke("exclude", "remove", "groq", "--model", MODEL, *cfg)
    history = json.loads(invoke("exclude", "list", "--history", "--json", *cfg).output)
    assert any(r["tag"] == "groq" and r["removed_at"] for r in history)
    listed = json.loads(invoke("ignore-list", *cfg, "--json").output)
    assert "groq" not in listed["ignore"] and "lambda/fp8" not in listed["ignore"]

    invoke("mode", "observe", *cfg)
    listed = json.loads(invoke("ignore-list", *cfg, "--json").output)
    assert [e for e in listed["entries"] if e["layer"] == "canary"] == []
    with store.open_store(config_file.parent / "c.duckdb") as con:
        actions = [r[0] for r in con.execute("SELECT action FROM decisions ORDER BY decided_at").fetchall()]
    assert actions.count("lift") >= 2  # the admin's lift and the mode switch's releases


def test_export_history_feeds_replay(
    prefect_harness: None, sim: SimulatorChild, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    two_rounds(sim, config_file, monkeypatch)
    out = config_file.parent / "rounds.jsonl"
    invoke("export-history", str(out), "--config", str(config_file))
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    statuses = [ln for ln in lines if "status" in ln]
    layers = [ln for ln in lines if "builtin" in ln]  # the exclusion layers in force, one line per round
    assert len(statuses) == 30 and {ln["status"] for ln in statuses} >= {"clean", "fail", "transport"}
    assert len(layers) == 2 and all(set(ln) == {"round_ts", "model", "builtin", "operational"} for ln in layers)
    replayed = [
        json.loads(x)
        for x in invoke("replay", str(out), "--json", "--config", str(config_file)).stdout.splitlines()
        if x.startswith("{")
    ]
    assert sorted(d["tag"] for d in replayed if d["action"] == "suspend") == [
        "friendli",
        "gmicloud/fp8",
        "google-vertex",
        "hyperbolic/fp8",
        "lambda/fp8",
    ]


def test_check_language_reads_stdin() -> None:
    proc = canary(
        "check-language",
        "--expected",
        "pt",
        "--json",
        stdin="Ela abriu a porta devagar e olhou para o corredor escuro. Não havia ninguém ali, "
        "mas o cheiro de chuva ainda pairava no ar. Respirou fundo e seguiu em frente.",
    )
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["outcome"] == "pass" and verdict["detected"] == "pt"
