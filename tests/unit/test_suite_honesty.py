"""The suite cannot go green by not running: no test skips because the project's own code or a dependency it
requires does not import (`pytest.importorskip`). A broken import must fail the run, not become a skip.

Read from the test files' syntax (every call named `importorskip`, however it is reached), so a new one is
caught wherever it is written; a module name that is not a literal is refused too (nobody could check it).
"""

from __future__ import annotations

import ast
import re
import tomllib
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
#: The project's own top-level packages (pyproject's setuptools `include`), and the tests' helpers.
OWN = frozenset({"tasks", "flows", "provider_canary", "tests"})


def _distribution(requirement: str) -> str:
    name = re.split(r"[\s<>=!~;\[(]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def required_distributions() -> frozenset[str]:
    """Every distribution pyproject.toml requires to run or to test (`dependencies` and the `dev` extra)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return frozenset(_distribution(r) for r in [*project["dependencies"], *project["optional-dependencies"]["dev"]])


@cache
def distributions_of() -> dict[str, list[str]]:
    """Top-level module -> the installed distributions that provide it (slow to build: built once)."""
    return dict(packages_distributions())


def is_required(module: str) -> bool:
    """Whether `module` is the project's own or comes with a distribution the project requires."""
    top = module.partition(".")[0]
    if top in OWN:
        return True
    provided_by = {_distribution(d) for d in distributions_of().get(top, [])}
    return bool(provided_by & required_distributions()) or _distribution(top) in required_distributions()


def importorskips(source: str) -> list[tuple[int, str | None]]:
    """(line, the module named, or None when it is not a string literal) of each `importorskip(...)` call."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name != "importorskip":
            continue
        arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "modname"), None)
        found.append((node.lineno, arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                      else None))
    return found


def refused_importorskips(source: str) -> list[str]:
    return [f"line {line}: importorskip({module!r})" for line, module in importorskips(source)
            if module is None or is_required(module)]


def test_no_test_skips_when_the_projects_code_or_a_required_dependency_does_not_import() -> None:
    texts = {path: path.read_text(encoding="utf-8") for path in sorted((ROOT / "tests").rglob("*.py"))}
    refused = {str(path.relative_to(ROOT)): found for path, text in texts.items()
               if "importorskip" in text and (found := refused_importorskips(text))}
    assert refused == {}, "import these normally: a broken import must fail the run, not skip it"


@pytest.mark.parametrize(("source", "refused"), [
    ('store = pytest.importorskip("tasks.store")', True),
    ('sim = pytest.importorskip("provider_canary.simulator.server")', True),
    ('duckdb = pytest.importorskip("duckdb")', True),  # a dependency
    ('from pytest import importorskip\nlingua = importorskip("lingua")', True),  # lingua-language-detector
    ('openai = pytest.importorskip("openai")', True),  # the dev extra
    ('pytest.importorskip(name)', True),  # nobody can tell which
    ('pytest.importorskip(modname="httpx")', True),
    ('torch = pytest.importorskip("torch")', False),  # not something the project requires
    ('x = importlib.import_module("tasks.store")', False),
])
def test_the_rule_tells_a_required_module_from_an_optional_one(source: str, refused: bool) -> None:
    assert bool(refused_importorskips(source)) is refused
