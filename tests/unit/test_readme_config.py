"""The README's configuration table says what tasks/config/__init__.py does: every key, with its default."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

from tasks.config import FILE_KEYS, CanaryConfig
from tasks.config.loading import format_duration
from tasks.core.contracts import default_hard

pytestmark = pytest.mark.unit
README = Path(__file__).resolve().parents[2] / "README.md"


def readme_rows() -> dict[str, str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \| (.+?) \|", section, re.M)}


def shown(value: object) -> str:
    if isinstance(value, tuple) and value and hasattr(value[0], "total_seconds"):
        return "[" + ", ".join(f'"{format_duration(v)}"' for v in value) + "]"
    if hasattr(value, "total_seconds"):
        return format_duration(value)  # type: ignore[arg-type]
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, tuple):
        return "[" + ", ".join(f'"{v}"' for v in value) + "]"
    if value == "":
        return '""'  # an unset URL (`runbook_base_url`, `grafana_url`), as the TOML file writes it
    return str(value)


def test_every_config_key_is_documented_with_its_default() -> None:
    rows = readme_rows()
    defaults = CanaryConfig()
    assert set(rows) == FILE_KEYS  # a per-run field (`run_mode`) is no file key
    for f in (f for f in fields(CanaryConfig) if f.name in FILE_KEYS):
        if f.name == "languages":
            assert rows[f.name].startswith("all 17")
            continue
        if f.name == "exclusions_file":  # the package's own file, wherever it is installed
            assert defaults.exclusions_file.endswith("/tasks/exclusions.toml")
            assert rows[f.name].startswith("the package's `tasks/exclusions.toml`"), rows[f.name]
            continue
        if f.name == "hard_contracts":  # None: each contract's SPEC says (tasks/core/contracts/)
            assert defaults.hard_contracts is None
            assert rows[f.name].endswith(f"`{shown(default_hard())}`"), rows[f.name]
            continue
        assert rows[f.name].strip("`") == shown(getattr(defaults, f.name)), f.name


def test_design_md_lists_every_config_key() -> None:
    text = (README.parent / "docs" / "design.md").read_text(encoding="utf-8")
    keys = text.split("Every key, its default", 1)[1].split("A malformed file", 1)[0]
    listed = set(re.findall(r"`(\w+)`", keys))
    assert FILE_KEYS <= listed


def test_design_md_command_table_names_every_command() -> None:
    from typer.main import get_command

    from provider_canary.cli.main import app

    text = (README.parent / "docs" / "design.md").read_text(encoding="utf-8")
    table = text.split("### Command line", 1)[1].split("**Exit codes**", 1)[0]
    named = set(re.findall(r"^\| `canary ([a-z-]+)", table, flags=re.M))
    assert set(get_command(app).commands) <= named  # type: ignore[attr-defined]
