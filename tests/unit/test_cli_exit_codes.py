"""Exit codes and debugging as documented (README "Command line"): `check-language` exits 1 on `fail`,
CANARY_DEBUG=1 shows the traceback behind a one-line error, and the admin republish keeps `until`."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from flows.publish import ignore_list_from_json
from tasks.core.render.markdown import render_ignore_markdown
from tasks.core.types import IgnoreEntry, IgnoreList, Layer

ROOT = Path(__file__).resolve().parents[2]
PT = (
    "Ela abriu a porta devagar e olhou para o corredor escuro. Não havia ninguém ali, "
    "mas o cheiro de chuva ainda pairava no ar. Respirou fundo e seguiu em frente."
)
ES = (
    "Ella abrió la puerta despacio y miró hacia el pasillo oscuro. No había nadie allí, "
    "pero el olor a lluvia todavía flotaba en el aire. Respiró hondo y siguió adelante."
)


def cli(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "CANARY_DEBUG"}
    return subprocess.run(
        [sys.executable, "-c", "from provider_canary.cli.main import main; main()", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**base, **(env or {})},
        timeout=60,
    )


@pytest.mark.parametrize(("text", "code"), [(PT, 0), (ES, 1)], ids=["pass", "fail"])
def test_check_language_exits_1_on_fail(text: str, code: int) -> None:
    proc = cli("check-language", "--expected", "pt", "--json", stdin=text)
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    assert ('"outcome": "fail"' in proc.stdout) is (code == 1)


def test_canary_debug_shows_the_traceback_behind_the_one_line(tmp_path: Path) -> None:
    missing = str(tmp_path / "none" / "x.duckdb")
    quiet = cli("status", "--db", missing)
    assert quiet.returncode == 2 and "Traceback" not in quiet.stderr
    assert len(quiet.stderr.strip().splitlines()) == 1
    loud = cli("status", "--db", missing, env={"CANARY_DEBUG": "1"})
    assert loud.returncode == 2 and "Traceback" in loud.stderr and "require_database" in loud.stderr
    assert loud.stderr.strip().splitlines()[-1] == quiet.stderr.strip()
    off = cli("status", "--db", missing, env={"CANARY_DEBUG": "0"})
    assert "Traceback" not in off.stderr


def test_the_admin_republish_keeps_until() -> None:
    until = datetime(2026, 12, 3, 9, 30, tzinfo=UTC)
    il = IgnoreList(
        "m/x",
        ("groq", "novita"),
        (
            IgnoreEntry(tag="groq", layer=Layer.OPERATIONAL, reason="429 storm", until=until),
            IgnoreEntry(tag="novita", layer=Layer.CANARY, reason="suspended", until=None),
        ),
    )
    back = ignore_list_from_json(il.as_json())
    assert back == il
    assert "2026-12-03 09:30 UTC" in render_ignore_markdown(back)


@pytest.mark.parametrize(
    ("cycle", "problems"),
    [
        ({"status": "complete", "rounds": [{"model": "m", "status": "complete"}]}, []),
        ({"status": "complete", "rounds": [{"model": "m", "status": "deferred"}]}, []),  # busy: spooled, lands later
        ({"status": "complete", "rounds": [{"model": "m", "status": "complete"},
                                           {"model": "n", "status": "failed", "error": "StoreError: store: x"}]},
         ["n: round failed: StoreError: store: x"]),
        ({"status": "complete", "rounds": [{"model": "m", "status": "skipped", "reason": "slot held"}]},
         ["m: round skipped: slot held"]),
        ({"status": "late", "reason": "the previous cycle still held c.duckdb.cycle.lock after 600 s", "rounds": []},
         ["cycle not run: the previous cycle still held c.duckdb.cycle.lock after 600 s"]),
    ],
    ids=["complete", "deferred", "failed", "skipped", "late"],
)
def test_canary_run_exits_1_for_every_round_that_did_not_complete(
    cycle: dict[str, object], problems: list[str]
) -> None:
    """`canary run`'s exit code (README "Exit codes"): one line per round that did not do its job, exit 1."""
    from provider_canary.cli.runs import CYCLE_INCOMPLETE_EXIT, cycle_problems

    assert cycle_problems(cycle) == problems
    assert CYCLE_INCOMPLETE_EXIT == 1


def test_a_model_id_with_a_newline_is_refused_in_one_line() -> None:
    proc = cli("run", "--model", "meta-llama/llama-3.3\nx", env={"OPENROUTER_API_KEY": "sk-or-v1-test"})
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.splitlines() == [
        "canary: --model must look like 'author/slug', without spaces or control characters "
        "(got 'meta-llama/llama-3.3\\nx')"]


def _imported(stderr: str) -> set[str]:
    """The modules a `python -X importtime` run imported (its stderr lines `import time: ... | name`)."""
    return {ln.rsplit("|", 1)[-1].strip() for ln in stderr.splitlines() if ln.startswith("import time:")}


@pytest.mark.parametrize(
    ("argv", "env", "refusal", "slow"),
    [
        (["metrics", "--db", "{tmp}/none.duckdb"], {}, "canary: no database at ",
         {"tasks.metrics.exporter", "prometheus_client"}),
        (["serve", "--config", "canary.toml"], {"PREFECT_API_URL": "http://127.0.0.1:9/api"},
         "canary: serve: the Prefect API at http://127.0.0.1:9/api does not answer", {"prefect", "flows.watch"}),
    ],
    ids=["metrics-without-database", "serve-without-api"],
)
def test_a_refusal_comes_before_the_slow_imports(argv: list[str], env: dict[str, str], refusal: str, slow: set[str],
                                                 tmp_path: Path) -> None:
    """systemd restarts these services in a loop until the API (or the first round's database) is there: each
    refusal is one line, printed before Prefect (seconds to import) or the exporter's stack is loaded."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CANARY_", "PREFECT_"))}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "from provider_canary.cli.main import main; main()",
         *[a.format(tmp=tmp_path) for a in argv]],
        capture_output=True, text=True, cwd=ROOT, env={**base, **env}, timeout=120,
    )
    said = [ln for ln in proc.stderr.splitlines() if not ln.startswith("import time:")]
    assert proc.returncode == 2 and len(said) == 1 and said[0].startswith(refusal), proc.stderr[-2000:]
    assert not slow & _imported(proc.stderr)
