"""tests/MAP.md names, for every production module, the test files that test it (tests/derive_map.py writes it
from the tests' imports): a module added or moved without its line fails here, and so does a line that names a
test file that is gone, a module that is gone, or no test for a module that has code."""

from __future__ import annotations

import pytest

from tests.derive_map import MAP, NO_TESTS, ROOT, is_map_only, production_modules, read_map

pytestmark = pytest.mark.unit


def mapped() -> dict[str, list[str]]:
    return read_map(MAP.read_text(encoding="utf-8"))


def test_every_production_module_has_its_line() -> None:
    assert sorted(set(production_modules()) - set(mapped())) == []


def test_no_line_for_a_module_that_is_gone() -> None:
    assert sorted(m for m in mapped() if not (ROOT / m).is_file()) == []


def test_every_mapped_test_file_exists() -> None:
    missing = sorted({f"{module}: {test}" for module, tests in mapped().items() for test in tests
                      if not (ROOT / test).is_file()})
    assert missing == []


def test_a_module_without_tests_is_only_a_map() -> None:
    """A line with no test file is a package's __init__ that holds its map and nothing else."""
    untested = sorted(m for m, tests in mapped().items() if not tests and (ROOT / m).is_file() and not is_map_only(m))
    assert untested == []


def test_the_reader_sees_what_it_must() -> None:
    text = (f"- `toy/x.py`: tests/unit/test_x.py, tests/e2e/test_y.py (via `toy/y.py`)\n"
            f"- `toy/z/__init__.py`: {NO_TESTS}\n")
    assert read_map(text) == {"toy/x.py": ["tests/unit/test_x.py", "tests/e2e/test_y.py"], "toy/z/__init__.py": []}
    assert is_map_only("tasks/probe/__init__.py") and not is_map_only("tasks/config/__init__.py")
