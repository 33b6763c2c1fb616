"""mutation/carry.py: a record entry is carried over a move only when its files are the same program once the move's
new names are spelled (docs/mutation.md "After a move")."""

from __future__ import annotations

import pytest

from mutation.carry import Move, dotted, program, same_program

pytestmark = pytest.mark.unit

MOVE = Move({"tasks/probe.py": "tasks/probe/attempt.py", "tasks/probe_worker.py": "tasks/probe/worker.py",
             "tasks/config.py": "tasks/config/__init__.py"})

BEFORE = '''"""Tests of tasks/probe.py."""
import sys
from tasks.probe import run_probe
from tasks import probe_worker
import tasks.probe

from tasks.config import Config


def test_it(monkeypatch):
    monkeypatch.setattr("tasks.probe_worker.HEARTBEAT", 1)
    assert run_probe(Config()) == tasks.probe.run_probe(Config())
    assert probe_worker.CLIENT_STREAMS == 8
'''

AFTER = '''"""Tests of tasks/probe/attempt.py."""
import sys

import tasks.probe.attempt
from tasks.config import Config
from tasks.probe import worker as probe_worker
from tasks.probe.attempt import (
    run_probe,
)


def test_it(monkeypatch):
    monkeypatch.setattr("tasks.probe.worker.HEARTBEAT", 1)
    assert run_probe(Config()) == tasks.probe.attempt.run_probe(Config())
    assert probe_worker.CLIENT_STREAMS == 8
'''


def test_module_paths_give_dotted_names() -> None:
    assert dotted("tasks/probe/worker.py") == "tasks.probe.worker"
    assert dotted("tasks/config/__init__.py") == "tasks.config"
    assert dotted("README.md") is None
    assert MOVE.names == {"tasks.probe": "tasks.probe.attempt", "tasks.probe_worker": "tasks.probe.worker"}


def test_a_name_takes_its_longest_moved_prefix() -> None:
    assert MOVE.name("tasks.probe.run_probe") == "tasks.probe.attempt.run_probe"
    assert MOVE.name("tasks.probe_worker.main") == "tasks.probe.worker.main"
    assert MOVE.name("tasks.probes") == "tasks.probes"
    assert MOVE.text("see tasks/probe.py and tasks.probe_worker, not tasks.probes") == \
        "see tasks/probe/attempt.py and tasks.probe.worker, not tasks.probes"
    package = Move({"router/__init__.py": "provider_canary/router/__init__.py",
                    "router/a.py": "provider_canary/router/a.py"})
    assert package.name("router.a.f") == "provider_canary.router.a.f"
    assert package.text("[router] in router/a.py, router.a") == \
        "[router] in provider_canary/router/a.py, provider_canary.router.a"


def test_imports_rewritten_reordered_and_rewrapped_are_the_same_program() -> None:
    assert same_program(BEFORE, AFTER, MOVE)
    assert program(AFTER) != program(BEFORE)  # without the move they differ


@pytest.mark.parametrize("change", [
    ("== 8", "== 9"),  # an assertion changed
    ("    assert probe_worker.CLIENT_STREAMS == 8\n", ""),  # an assertion gone
    ("tasks.probe.worker.HEARTBEAT", "tasks.probe.loop.HEARTBEAT"),  # a string naming another module
    ("from tasks.probe import worker as probe_worker", "from tasks.probe import loop as probe_worker"),  # bound anew
])
def test_anything_beyond_the_move_is_a_different_program(change: tuple[str, str]) -> None:
    assert change[0] in AFTER
    assert not same_program(BEFORE, AFTER.replace(*change), MOVE)


def test_a_docstring_rewrapped_around_the_longer_names_is_the_same_but_a_string_in_code_is_not() -> None:
    before = 'def f():\n    """Reads tasks/probe.py and the\n    rest."""\n    return "a b"\n'
    after = 'def f():\n    """Reads tasks/probe/attempt.py\n    and the rest."""\n    return "a b"\n'
    assert same_program(before, after, MOVE)
    assert not same_program(before, after.replace('"a b"', '"a  b"'), MOVE)


def test_a_local_variable_named_like_a_moved_package_is_not_a_module() -> None:
    package = Move({"router/__init__.py": "provider_canary/router/__init__.py",
                    "router/a.py": "provider_canary/router/a.py"})
    before = "from router import a\nrouter = a.Reader()\nx = router.count\n"
    after = "from provider_canary.router import a\nrouter = a.Reader()\nx = router.count\n"
    assert same_program(before, after, package)  # `router.count` is the local variable's, not a module's
    assert not same_program(before, after.replace("x = router.count", "x = provider_canary.router.count"), package)
    chained = "import router.a\nx = router.a.f\n", "import provider_canary.router.a\nx = provider_canary.router.a.f\n"
    assert same_program(*chained, package)  # a chain from an imported package is the module's


def test_a_file_that_does_not_parse_is_never_the_same() -> None:
    assert not same_program(BEFORE, AFTER + "\ndef (", MOVE)
