"""tests/MAP.md: for every production module, the test files that test it (issue 42 item 6).

    .venv/bin/python tests/derive_map.py            # print the map derived from the tests' imports
    .venv/bin/python tests/derive_map.py --write    # write it to tests/MAP.md (then review the diff)

A test file tests a module when it imports it (at any level: module, function, TYPE_CHECKING; through the
helpers of tests/support/ it imports too) or names it (its dotted name in a patch string or a subprocess's `-m`,
its path in its docstring). A module no test reaches that way is mapped to the tests of the modules that
import it (marked `via`), so its home in the suite is still one line away. tests/unit/test_test_map.py checks
that the map names every production module and only test files that exist.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "tests" / "MAP.md"
PACKAGES = ("tasks", "flows", "provider_canary")
VIA_AT_MOST = 4
HEADER = """# Where each module's tests are

One line per production module: the test files that test it (derived by `tests/derive_map.py` from the tests'
imports and the modules they name, then reviewed; `via` marks a module reached only through the modules that
import it). tests/unit/test_test_map.py fails when a module is missing here or a listed test file does not exist.

"""


def tracked(*patterns: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True, check=True)
    return [p for p in out.stdout.split() if (ROOT / p).is_file()]


def production_modules() -> list[str]:
    """Every .py file of the six production packages, as a path."""
    return sorted(p for p in tracked(*(f"{pkg}/*.py" for pkg in PACKAGES)))


def dotted(path: str) -> str:
    parts = list(Path(path).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def by_name() -> dict[str, str]:
    return {dotted(p): p for p in production_modules()}


def resolve(name: str) -> str | None:
    """The production module a dotted name points into (a module, or an attribute of one)."""
    while name:
        if name in by_name():
            return by_name()[name]
        name = name.rpartition(".")[0]
    return None


def imported_names(path: str) -> set[str]:
    package = dotted(path) if path.endswith("__init__.py") else dotted(path).rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse((ROOT / path).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    return names


NAMED = re.compile(r"(?<![\w./-])((?:" + "|".join(PACKAGES) + r")(?:[./]\w+)+)")


def named_modules(path: str) -> set[str]:
    """Production modules a file imports or names (dotted or as a path)."""
    found = {resolve(n) for n in imported_names(path)}
    for m in NAMED.finditer((ROOT / path).read_text(encoding="utf-8")):
        text = m.group(1)
        found.add(text if text.endswith(".py") and text in by_name().values() else resolve(text.replace("/", ".")))
    return {f for f in found if f}


@cache
def support_reach(path: str) -> frozenset[str]:
    """Production modules a tests/support helper reaches, through the other helpers it imports."""
    reached = set(named_modules(path))
    for name in imported_names(path):
        helper = f"{name.replace('.', '/')}.py"
        if name.startswith("tests.support.") and helper != path and (ROOT / helper).is_file():
            reached |= support_reach(helper)
    return frozenset(reached)


#: Tests of the whole tree's shape (imports, layout, docs, sizes): they name every module without testing one.
TREE_TESTS = {"tests/unit/test_import_graph.py", "tests/unit/test_layout.py", "tests/unit/test_test_map.py",
              "tests/unit/test_docs_references.py", "tests/unit/test_suite_honesty.py",
              "tests/unit/test_mutation_gate.py", "tests/unit/test_mutation_carry.py"}


def tests_of() -> dict[str, set[str]]:
    """test file -> the production modules it tests."""
    out = {}
    for test in tracked("tests/*test_*.py"):
        if not Path(test).name.startswith("test_") or test in TREE_TESTS:
            continue
        reached = named_modules(test)
        for name in imported_names(test):
            helper = f"{name.replace('.', '/')}.py"
            if name.startswith("tests.support.") and (ROOT / helper).is_file():
                reached |= support_reach(helper)
        out[test] = reached
    return out


def importers() -> dict[str, set[str]]:
    """production module -> the production modules that import it."""
    out: dict[str, set[str]] = {}
    for path in production_modules():
        for name in imported_names(path):
            target = resolve(name)
            if target and target != path:
                out.setdefault(target, set()).add(path)
    return out


TIERS = ("unit", "integration", "e2e")


def ranked(tests: Iterable[str], module: str) -> list[str]:
    """Tests named after the module first, then unit, integration, e2e."""
    stem = Path(module).stem if not module.endswith("__init__.py") else Path(module).parent.name

    def key(test: str) -> tuple[bool, int, str]:
        tier = test.split("/")[1]
        return (stem not in Path(test).stem, TIERS.index(tier) if tier in TIERS else len(TIERS), test)

    return sorted(tests, key=key)


def derive() -> dict[str, tuple[list[str], str | None]]:
    """module -> (its test files, or those of one of its importers; the importer when `via`)."""
    covered: dict[str, set[str]] = {}
    for test, modules in tests_of().items():
        for module in modules:
            covered.setdefault(module, set()).add(test)
    ups = importers()
    out: dict[str, tuple[list[str], str | None]] = {}
    for module in production_modules():
        if covered.get(module):
            out[module] = (ranked(covered[module], module), None)
            continue
        out[module] = ([], None)
        seen, ring = {module}, sorted(ups.get(module, ()))
        while ring:  # the nearest importers (then theirs) that some test reaches
            hit = sorted((u for u in ring if covered.get(u)), key=lambda u: (len(covered[u]), u))
            if hit:
                out[module] = (ranked(covered[hit[0]], module)[:VIA_AT_MOST], hit[0])
                break
            seen.update(ring)
            ring = sorted({u for r in ring for u in ups.get(r, ()) if u not in seen})
    return out


def is_map_only(path: str) -> bool:
    """A package's __init__.py that holds its map and nothing to test: a docstring, `__all__`, `__future__`."""
    body = ast.parse((ROOT / path).read_text(encoding="utf-8")).body
    return path.endswith("__init__.py") and all(
        (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
        or (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"])
        or (isinstance(node, ast.ImportFrom) and node.module == "__future__")
        for node in body)


NO_TESTS = "none (a map: no code)"


def render(mapped: dict[str, tuple[list[str], str | None]]) -> str:
    lines = []
    for module, (tests, via) in mapped.items():
        said = ", ".join(tests) if tests else NO_TESTS if is_map_only(module) else "none"
        lines.append(f"- `{module}`: {said}" + (f" (via `{via}`)" if via else ""))
    return HEADER + "\n".join(lines) + "\n"


def read_map(text: str) -> dict[str, list[str]]:
    """tests/MAP.md -> module -> its test files (what tests/unit/test_test_map.py checks)."""
    out = {}
    for m in re.finditer(r"^- `([^`]+)`: (.*)$", text, re.MULTILINE):
        out[m.group(1)] = re.findall(r"tests/[\w/]+\.py", m.group(2))
    return out


def main(argv: Iterable[str]) -> None:
    text = render(derive())
    if "--write" in argv:
        MAP.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
