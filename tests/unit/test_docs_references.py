"""The repository stands alone: no tracked file points outside it, and every docs/ file or Markdown link
it names exists (a fresh clone has no sibling `shared/` directory)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = re.compile(r"\.\./" + "shared")  # split so that this file does not name it
GONE = re.compile(r"(?<![\w/.-])(" + "|".join(["MISSION", "DESIGN", "STYLE", "stack-notes"]) + r")\.md\b")
DOCS_PATH = re.compile(r"(?<![\w.-])docs/([\w.-]+\.md)")
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
#: A path to one of the project's Python modules, as docs, docstrings and comments name them.
MODULE_PATH = re.compile(r"(?<![\w./-])((?:tasks|flows|provider_canary|router|cli|simulator|demo)/[\w/]+\.py)\b")
#: A module run as a program (`python -m tasks.probe.worker`), in a unit, a compose file, a doc or the code.
RUN_MODULE = re.compile(r"""(?:-m\s+|"-m",\s*")((?:tasks|flows|provider_canary|router|cli|simulator|demo)(?:\.\w+)+)""")
#: Paths named on purpose that do not exist: a test's toy record (tests/unit/test_mutation_gate.py).
NOT_FILES = {"router/a.py", "router/b.py"}
#: Files whose old module paths are data: the mutation carry's test moves a toy test file from the old names.
OLD_NAMES_ON_PURPOSE = {"tests/unit/test_mutation_carry.py", "tests/unit/test_mutation_gate.py"}


def tracked_texts() -> list[tuple[str, str]]:
    names = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode().split("\0")
    out = []
    for name in filter(None, names):
        path = ROOT / name
        if not path.is_file():
            continue
        try:
            out.append((name, path.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            continue  # binary (images, databases)
    return out


def test_no_tracked_file_points_outside_the_repository() -> None:
    bad = [
        f"{n}:{i}" for n, t in tracked_texts() for i, ln in enumerate(t.splitlines(), 1) if OUTSIDE.search(ln)
    ]
    assert bad == []


def test_no_tracked_file_names_the_old_requirement_files() -> None:
    bad = [
        f"{n}:{i}: {m.group(0)}"
        for n, t in tracked_texts()
        for i, ln in enumerate(t.splitlines(), 1)
        for m in GONE.finditer(ln)
    ]
    assert bad == [], "use docs/requirements.md or docs/design.md"


def test_every_docs_file_named_exists() -> None:
    missing = sorted(
        {f"{n}: docs/{m.group(1)}" for n, t in tracked_texts() for m in DOCS_PATH.finditer(t)
         if not (ROOT / "docs" / m.group(1)).is_file()}
    )
    assert missing == []


def test_every_project_module_path_named_exists() -> None:
    """A module moved or renamed leaves no path to its old file behind (docs, docstrings, comments, units)."""
    missing = sorted(
        {f"{n}: {m.group(1)}" for n, t in tracked_texts() if n not in OLD_NAMES_ON_PURPOSE
         for m in MODULE_PATH.finditer(t) if m.group(1) not in NOT_FILES and not (ROOT / m.group(1)).is_file()}
    )
    assert missing == []


def test_every_module_run_with_dash_m_exists() -> None:
    missing = sorted(
        {f"{n}: {m.group(1)}" for n, t in tracked_texts() for m in RUN_MODULE.finditer(t)
         if not (ROOT / (m.group(1).replace(".", "/") + ".py")).is_file()}
    )
    assert missing == []


def test_every_relative_markdown_link_resolves() -> None:
    missing = []
    for name, text in tracked_texts():
        if not name.endswith(".md"):
            continue
        for m in MD_LINK.finditer(text):
            target = m.group(1).split("#")[0]
            if not target or re.match(r"^[a-z]+:", target):
                continue  # an anchor, http(s):, mailto:
            if not ((ROOT / name).parent / target).exists():
                missing.append(f"{name}: {m.group(1)}")
    assert missing == []


def test_the_checks_can_fail() -> None:
    assert OUTSIDE.search("see ../" + "shared/docs/x")
    assert GONE.search("read " + "DESIGN" + ".md first") and not GONE.search("docs/design.md")
    found = DOCS_PATH.search("see " + "docs" + "/nothing-here.md")
    assert found is not None and found.group(1) == "nothing-here.md"
    assert not (ROOT / "docs" / "nothing-here.md").exists()
    text = 'run `python -m tasks.probe.worker 3`, ["-m", "provider_canary.cli.main"]'
    assert [m.group(1) for m in RUN_MODULE.finditer(text)] == [
        "tasks.probe.worker", "provider_canary.cli.main"]
    old = "tasks/" + "probe_worker.py"  # split so that this file does not name it
    assert [m.group(1) for m in MODULE_PATH.finditer(f"({old}, tasks/probe/worker.py)")] == [
        old, "tasks/probe/worker.py"]


def test_operations_md_names_no_xfail_that_is_not_one() -> None:
    """docs/operations.md section 8 says which tests cover what; a test it calls xfail must be marked so."""
    ops = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    for row in re.findall(r"^\|.*xfail.*$", ops, flags=re.M):
        for path, name in re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", row):
            source = (ROOT / path).read_text(encoding="utf-8")
            head = source.split(f"def {name}(", 1)[0].rsplit("\n\n\n", 1)[-1]
            assert "xfail" in head, f"{path}::{name} is not xfail, but docs/operations.md says so"


def test_the_router_examples_sinks_are_ignored_by_git() -> None:
    """Trying the README's router example leaves its event and savings files; `git status` stays clean."""
    import tomllib

    routes = tomllib.loads((ROOT / "examples" / "routes-simulator.toml").read_text(encoding="utf-8"))
    examples = ROOT / "examples"  # the file's paths are read against its own directory
    sinks = [str((examples / routes["router"][k]).resolve().relative_to(ROOT)) for k in ("events_path", "savings_path")]
    ignored = subprocess.run(["git", "check-ignore", *sinks], cwd=ROOT, capture_output=True, text=True)
    assert sorted(ignored.stdout.split()) == sorted(sinks), ignored


def test_the_notebooks_extra_is_installed_with_the_constraints() -> None:
    for doc in ("README.md", "notebooks/README.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        installs = re.findall(r"pip install[^\n`]*\[notebooks\]", text)
        assert installs and all("-c constraints.txt" in i for i in installs), (doc, installs)
