"""The import graph of the project's own modules (AST, every import: module level, inside functions, under
TYPE_CHECKING): no circle, no arrow back up a layer, the pure core pure transitively, and importing installs
nothing (the redaction hooks are installed by entry points: tasks.runtime.secrets.install_redaction)."""

from __future__ import annotations

import ast
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tasks", "flows", "provider_canary")

#: Layers, lowest first, folder by folder (docs/design.md "Architecture"): a module imports its own layer and the
#: ones below, never one above. The longest matching prefix places a module, so `tasks.config` (the record) is pure
#: while its loaders sit in the shell; a module of `tasks/` in no room listed here falls to the pure layer and is
#: held to it. router and simulator sit side by side and import neither each other nor anything that runs flows.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("tasks", "tasks.core", "tasks.config", "tasks.errors"),  # pure: the core, the config record, the errors
    ("tasks.runtime",),  # process plumbing: the clock, secrets and redaction, liveness, failpoints, servers
    ("tasks.config.schema_lines", "tasks.config.schema", "tasks.config.loading", "tasks.config.preflight",
     "tasks.store", "tasks.spool", "tasks.prefect_api"),  # the files, the database, the spool, the Prefect API
    ("tasks.probe", "tasks.alerts", "tasks.ignore_list", "tasks.at"),  # what a round and its reader use
    ("tasks.round", "tasks.orchestration"),  # one round, and what runs rounds (slots, locks, automations, events)
    ("tasks.watch",),  # the watcher: looks, and confirmation rounds
    ("tasks.metrics",),  # the exporter (it serves the ignore lists and the watcher's Prometheus health too)
    ("provider_canary.router", "provider_canary.simulator"),
    ("flows",),
    ("provider_canary.demo",),  # the demo and its simulated history: flows on the simulator
    ("provider_canary.cli", "provider_canary"),
)
SIDE_BY_SIDE = next(i for i, layer in enumerate(LAYERS) if "provider_canary.router" in layer)
IO_LIBRARIES = {"prefect", "httpx", "duckdb", "slack_sdk", "starlette", "uvicorn", "typer"}
#: The router's pure modules: its rules, kept apart from its Starlette shell (they reach the core only).
ROUTER_PURE = tuple(f"provider_canary.router.{m}" for m in (
    "tiers", "stream", "stream_events", "savings", "tokens", "reasons", "answer", "request", "routes", "payload",
    "records", "breaker", "masking"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[module_name(path)] = path
    return found


@cache
def imports(name: str) -> tuple[frozenset[str], frozenset[str]]:
    """(project modules, third-party top-level packages) that module `name` imports."""
    path = modules()[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            named.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            named.add(module)
            named.update(f"{module}.{a.name}" for a in node.names)
    own, other = set(), set()
    for n in named:
        if n.split(".")[0] in PACKAGES:
            while n and n not in modules():
                n = n.rpartition(".")[0]
            if n and n != name:
                own.add(n)
        elif n:
            other.add(n.split(".")[0])
    return frozenset(own), frozenset(other)


def layer_of(name: str) -> int:
    best, rank = -1, -1
    for i, layer in enumerate(LAYERS):
        for prefix in layer:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), i
    assert rank >= 0, f"{name} belongs to no layer"
    return rank


def circles() -> list[list[str]]:
    """Strongly connected components of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in imports(v)[0]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(modules()):
        if v not in index:
            visit(v)
    return found


def reach(name: str) -> set[str]:
    seen, todo = set(), [name]
    while todo:
        for w in imports(todo.pop())[0]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def test_no_import_circle() -> None:
    assert circles() == []


def test_no_arrow_back_up_a_layer() -> None:
    up = []
    for name in modules():
        for target in imports(name)[0]:
            a, b = layer_of(name), layer_of(target)
            side_by_side = a == b and name.split(".")[0] != target.split(".")[0] and a == SIDE_BY_SIDE
            if b > a or side_by_side:
                up.append(f"{name} -> {target}")
    assert up == []


@pytest.mark.parametrize("name", [*sorted(n for n in modules() if layer_of(n) == 0), *ROUTER_PURE])
def test_the_core_is_pure_through_everything_it_reaches(name: str) -> None:
    reached = reach(name)
    shell = sorted(m for m in reached if layer_of(m) > 0 and m not in ROUTER_PURE)
    assert shell == [], f"{name} reaches the shell"
    libraries = sorted({lib for m in reached | {name} for lib in imports(m)[1]} & IO_LIBRARIES)
    assert libraries == [], f"{name} reaches {libraries}"


def test_the_core_package_holds_the_pure_modules() -> None:
    """Every module the round settles with lives in the core package (a new pure module goes there too)."""
    for name in ("types", "settle", "policy", "verdicts", "judge", "exclusions", "replay", "classify", "http_rules"):
        assert f"tasks.core.{name}" in modules(), name
    assert "tasks.core.contracts" in modules()


def test_the_walk_sees_what_it_must() -> None:
    """The checks above can fail: the walk sees function-level imports and a real circle in a toy graph."""
    assert "prefect" in imports("flows.round")[1]
    assert any(layer_of(m) > 0 for m in reach("flows.round"))
    assert layer_of("provider_canary.cli.main") > layer_of("flows.round") > layer_of("tasks.store") \
        > layer_of("tasks.core.plan")


#: Modules that run SQL on a database that is not the canary's store, and why.
NOT_THE_STORE = {
    "tasks.prefect_api.db_template": "checks and copies the private Prefect server's own SQLite file",
}


def test_sql_is_run_only_by_the_store() -> None:
    """Every `.execute(...)` / `.sql(...)` call of the project is in tasks/store/ (one home for the SQL)."""
    outside = []
    for name, path in modules().items():
        if name.startswith("tasks.store") or name in NOT_THE_STORE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("execute", "executemany", "sql") and node.args
                    and isinstance(node.args[0], (ast.Constant, ast.JoinedStr, ast.BinOp, ast.Name))):
                outside.append(f"{name}:{node.lineno}")
    assert outside == []


def test_importing_every_module_installs_nothing() -> None:
    """Importing installs no log filter, record factory or redactor: each entry point does
    (tasks.runtime.secrets.install_redaction), so a library user or a test decides when."""
    names = [n for n in sorted(modules()) if not n.endswith("__main__")]
    code = (
        "import importlib, logging, sys\n"
        "factory = logging.getLogRecordFactory()\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "import tasks.core.redaction as r\n"
        "loggers = [logging.getLogger()] + [logging.getLogger(n) for n in ('canary', 'tasks', 'prefect', 'httpx')]\n"
        "filters = [type(f).__name__ for lg in loggers for f in lg.filters]\n"
        "assert logging.getLogRecordFactory() is factory, 'a record factory was installed'\n"
        "assert r._redactor is r.redact_shapes, 'a redactor was installed'\n"
        "assert 'RedactingFilter' not in filters, filters\n"
        "from tasks.runtime.secrets import install_redaction\n"
        "install_redaction()\n"
        "assert logging.getLogRecordFactory() is not factory and r._redactor is not r.redact_shapes\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
