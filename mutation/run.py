"""`scripts/mutation`: mutmut over the decision code, caught / survived / equivalent per module, and the gate.

    scripts/mutation [PATH...]            run the modules given (default: every module of mutation/modules.toml)
    scripts/mutation --gate [PATH...]     only the modules whose record is stale (CI); nothing to run is a pass
    scripts/mutation --record [PATH...]   run, and write each module that passed into mutation/record.json
    scripts/mutation --record --owe ...   the same, the run's survivors written into mutation/survivors.toml
    scripts/mutation --table              the record's figures as the Markdown table of docs/mutation.md

mutmut works in a scratch copy of the repository (a temporary folder: the work tree is never touched), with
the test files that import the modules run (mutation/modules.toml `test_dirs`). Exit 0: every mutant caught
or listed as equivalent; 1: a survivor or a stale equivalents entry (each is printed, with what to do); 2: the
run could not be made (bad path, the clean tests failed: mutmut's log is printed).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

from mutation.gate import (
    CAUGHT,
    Equivalent,
    GateResult,
    Mutant,
    assess,
    failure_message,
    function_name,
    load_equivalents,
    load_known,
    parse_diff,
    record_table,
    table,
)
from mutation.record_files import (
    EQUIVALENTS,
    HERE,
    KNOWN,
    RECORD,
    ROOT,
    owe,
    stale_files,
    tool,
    write_record,
)

#: Left out of the scratch copy: the mutation gate itself and the notebooks (no test of the decision code reads
#: them); everything else git knows of is copied (tests read the README, docs/, examples/, ...).
NOT_COPIED = ("mutation", "notebooks")


class Refused(Exception):
    """A one-line reason the run cannot be made."""


def settings() -> dict[str, object]:
    return tomllib.loads((HERE / "modules.toml").read_text(encoding="utf-8"))


def select(paths: Iterable[str], modules: list[str]) -> list[str]:
    """The modules named (a file of the list, or a folder holding some), in the list's order."""
    chosen: set[str] = set()
    for raw in paths:
        p = Path(raw).resolve()
        rel = p.relative_to(ROOT).as_posix() if p.is_relative_to(ROOT) else raw
        found = [m for m in modules if m == rel or m.startswith(rel.rstrip("/") + "/")]
        if not found:
            raise Refused(f"{raw}: not a decision module of mutation/modules.toml")
        chosen.update(found)
    return [m for m in modules if m in chosen]


def dotted(file: str) -> str:
    return file.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def imported(path: Path) -> set[str]:
    """Every module a file names in an import (`from a import b` names a and a.b)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_files(files: list[str], test_dirs: list[str], record: Mapping[str, object]) -> list[str]:
    """The test files that import one of `files`, and those that ran their code at the last recorded pass."""
    wanted = {dotted(f) for f in files}
    found = {p.relative_to(ROOT).as_posix() for d in test_dirs for p in (ROOT / d).rglob("test_*.py")
             if imported(p) & wanted}
    for f in files:
        entry = record.get(f)
        if isinstance(entry, Mapping):
            found.update(t for t in entry.get("tests", {}) if (ROOT / t).exists())
    return sorted(found)


def tracked() -> list[str]:
    """The repository's files (committed or not, never what .gitignore ignores), minus `NOT_COPIED`."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, check=True).stdout.decode("utf-8").split("\0")
    return [f for f in out if f and f.split("/", 1)[0] not in NOT_COPIED and (ROOT / f).is_file()]


def scratch(files: list[str], tests: list[str], patterns: list[str]) -> Path:
    """A copy of the repository for mutmut, with its settings in the copy's pyproject.toml."""
    work = Path(tempfile.mkdtemp(prefix="canary-mutation-"))
    copied = tracked()
    for f in copied:
        (work / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, work / f)
    top = sorted({f.split("/", 1)[0] for f in copied} - {"tasks", "provider_canary", "tests", "pyproject.toml"})
    pytest_ini = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]
    config = {"source_paths": ["tasks", "provider_canary"], "only_mutate": files,
              "also_copy": top,
              "pytest_add_cli_args_test_selection": tests,
              "pytest_add_cli_args": ["-p", "no:cacheprovider", "--hypothesis-seed=0", "-q"],
              "do_not_mutate_patterns": patterns, "use_git_change_detection": False}
    ini = {k: v for k, v in pytest_ini["ini_options"].items() if k != "timeout"}
    text = "[tool.pytest.ini_options]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in ini.items())
    text += "\n[tool.mutmut]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in config.items())
    (work / "pyproject.toml").write_text(text, encoding="utf-8")
    return work


def run_mutmut(work: Path, jobs: int) -> float:
    """mutmut's run in `work` (its output in mutmut.log there, its progress every 30 s here); seconds taken."""
    env = {**os.environ, "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    mutmut = Path(sys.executable).with_name("mutmut")
    started = time.monotonic()
    with (work / "mutmut.log").open("wb") as log:
        proc = subprocess.Popen([str(mutmut), "run", "--max-children", str(jobs)], cwd=work, stdout=log,
                                stderr=subprocess.STDOUT, env=env)
        while proc.poll() is None:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                tail = (work / "mutmut.log").read_bytes()[-400:].decode("utf-8", "replace")
                last = tail.replace("\r", "\n").strip().rsplit("\n", 1)[-1].strip()
                print(f"mutation: {time.monotonic() - started:.0f} s: {last[:100]}", flush=True)
    if proc.returncode != 0:
        tail = (work / "mutmut.log").read_bytes()[-4000:].decode("utf-8", "replace").replace("\r", "\n")
        raise Refused(f"mutmut failed (exit {proc.returncode}); the end of its log ({work}/mutmut.log):\n{tail}")
    return time.monotonic() - started


def def_lines(source: str) -> dict[str, int]:
    """Function (`Class.method` / `function`) -> the line of its `def` in the original file."""
    out: dict[str, int] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out[node.name] = node.lineno
        elif isinstance(node, ast.ClassDef):
            out.update({f"{node.name}.{f.name}": f.lineno for f in node.body
                        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)})
    return out


def mutants(work: Path, files: list[str]) -> tuple[list[Mutant], dict[str, float]]:
    """Every mutant of `files` with its status (and, when not caught, its line and change); seconds per file."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code

    found: list[Mutant] = []
    seconds: dict[str, float] = {}
    here = Path.cwd()
    os.chdir(work)
    try:
        for f in files:
            meta = json.loads((work / "mutants" / f"{f}.meta").read_text(encoding="utf-8"))
            lines = def_lines((work / f).read_text(encoding="utf-8"))
            seconds[f] = sum(meta["durations_by_key"].values())
            for key, code in meta["exit_code_by_key"].items():
                status, fn = status_by_exit_code[code], function_name(key)
                if status in CAUGHT:
                    found.append(Mutant(f, key, fn, 0, "", "", status))
                    continue
                diff = get_diff_for_mutant(key, path=f)
                offset, before, after = parse_diff(diff)
                body = [ln for ln in diff.splitlines() if ln[:1] in (" ", "-")]
                def_at = next((i for i, ln in enumerate(body) if ln[1:].lstrip().startswith(("def ", "async def "))),
                              0)
                found.append(Mutant(f, key, fn, lines.get(fn, 0) + offset - 1 - def_at, before, after, status))
    finally:
        os.chdir(here)
    return found, seconds


def covering_tests(work: Path, files: list[str]) -> dict[str, set[str]]:
    """file -> the test files that ran its code (mutmut's stats: test -> the functions it reached)."""
    stats = json.loads((work / "mutants" / "mutmut-stats.json").read_text(encoding="utf-8"))
    by_module = {dotted(f): f for f in files}
    out: dict[str, set[str]] = {f: set() for f in files}
    for name, tests in stats["tests_by_mangled_function_name"].items():
        module = name.rpartition(".")[0]
        if module in by_module:
            out[by_module[module]].update(t.split("::", 1)[0] for t in tests)
    return out


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        cfg = settings()
        modules = list(cfg["modules"])  # type: ignore[call-overload]
        files = select(args.paths, modules) if args.paths else modules
        equivalents = load_equivalents(EQUIVALENTS.read_text(encoding="utf-8"))
        known = load_known(KNOWN.read_text(encoding="utf-8")) if KNOWN.exists() else []
        record = json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.exists() else {}
        if args.table:
            print(record_table(record.get("modules") or {}))
            return 0
        if args.gate:
            files = _stale(files, record, [*equivalents, *known])
            if not files:
                print("mutation gate: every recorded decision module is as recorded; nothing to run")
                return 0
        tests = test_files(files, list(cfg["test_dirs"]), record.get("modules") or {})  # type: ignore[call-overload]
        print(f"mutation: {len(files)} module(s), {len(tests)} test file(s), {args.jobs} at once ({tool()})",
              flush=True)
        work = scratch(files, tests, list(cfg["do_not_mutate_patterns"]))  # type: ignore[call-overload]
        took = run_mutmut(work, args.jobs)
        found, seconds = mutants(work, files)
        result = assess(found, equivalents, files, known)
    except (Refused, ValueError, OSError) as e:
        print(f"mutation: {e}", file=sys.stderr)
        return 2
    print(table(result))
    print(f"mutation: {len(found)} mutants in {took:.0f} s (load {os.getloadavg()[0]:.1f})")
    if args.record:
        result = _record(args.owe, found, result, equivalents, known, files, work, seconds)
    elif args.gate and result.passed:
        print("mutation gate: passed; the record is stale for these modules: `scripts/mutation --record "
              + " ".join(files) + "` and commit mutation/record.json to spare CI the run")
    if not result.passed:
        print(failure_message(result), file=sys.stderr)
        print(f"mutation: the scratch copy is kept in {work} (`cd` there and `mutmut show NAME`)", file=sys.stderr)
        return 1
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="scripts/mutation", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="decision modules (files or folders); default: all of them")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--gate", action="store_true", help="run only the modules whose record is stale (CI)")
    mode.add_argument("--record", action="store_true", help="write the modules that pass into the record")
    mode.add_argument("--table", action="store_true", help="print the record's figures as docs/mutation.md's table")
    parser.add_argument("--owe", action="store_true", help="with --record: list the run's survivors as owed a "
                        "test in mutation/survivors.toml (adopting a module with survivors; the diff shows it)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="mutants tested at once")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy (to `mutmut show` there)")
    return parser


def _stale(files: list[str], record: Mapping[str, object], entries: list[Equivalent]) -> list[str]:
    """The gate's modules: those whose record is stale (each named with why); one never recorded (or recorded
    with another mutmut) is named and left out until its first record (docs/mutation.md)."""
    why = stale_files(files, record, entries)
    unrecorded = [f for f, reason in why.items() if reason == "never recorded" or reason.startswith("recorded with")]
    if unrecorded:
        print(f"mutation gate: not gated until recorded (`scripts/mutation --record PATH`): {', '.join(unrecorded)}")
    for f, reason in why.items():
        if f not in unrecorded:
            print(f"mutation: {f}: {reason}")
    return [f for f in files if f in why and f not in unrecorded]


def _record(owe_them: bool, found: list[Mutant], result: GateResult, equivalents: list[Equivalent],
            known: list[Equivalent], files: list[str], work: Path, seconds: dict[str, float]) -> GateResult:
    """--record: (with --owe, the survivors listed as owed first) the modules that passed written into the
    record; the result, assessed again when survivors were owed."""
    if owe_them:  # read again: another run may have written since this one started
        known = owe(load_known(KNOWN.read_text(encoding="utf-8")) if KNOWN.exists() else [], result, files)
        result = assess(found, equivalents, files, known)
    record = json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.exists() else {}
    written = write_record(record, result, covering_tests(work, files), seconds, [*equivalents, *known])
    print(f"mutation: recorded {len(written)} module(s) in {RECORD.relative_to(ROOT)}")
    return result


if __name__ == "__main__":
    sys.exit(main())
