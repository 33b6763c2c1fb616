"""The wheel stands alone (issue 42 item 7): built from a copy of the tree that also holds a demo's output
(`demo-published/`, `published/`), it carries the packages and the data files the code reads and nothing
generated; installed into a directory of its own (`pip install --no-deps --target`), it finds the reviewed
built-in exclusions, the simulator's fleets and corpus from a directory that is no checkout.

The build is offline: `--no-build-isolation` with the dev environment's setuptools (pyproject.toml `dev`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tasks", "flows", "provider_canary")
#: The data files the code reads at run time (besides the modules): each must be in the wheel.
DATA = ("tasks/exclusions.toml", "provider_canary/simulator/fleets/default.toml",
        "provider_canary/simulator/fleets/history.toml",
        "provider_canary/simulator/fleets/tools.toml", "provider_canary/simulator/corpus/roleplay.json")
#: Read from the installed copy, in a directory that is no checkout.
PROBE = """
import json
import tasks
from provider_canary.simulator.fleet_file import load_fleet
from provider_canary.simulator.fleet_records import DEFAULT_FLEET_PATH
from provider_canary.simulator.text import CORPUS_PATH
from tasks.config.loading import load_config
from tasks.core.exclusions import load_builtin
cfg = load_config(env={})
print(json.dumps({"tasks": tasks.__file__, "exclusions": cfg.exclusions_file,
                  "builtin": len(load_builtin(cfg.exclusions_file)),
                  "fleet": len(load_fleet(DEFAULT_FLEET_PATH).models), "corpus": CORPUS_PATH.is_file()}))
"""


def _pip(*args: str, cwd: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for generated in ("demo-published", "published"):  # what `canary demo` leaves beside the packages
        (src / generated).mkdir()
        (src / generated / "meta-llama-llama-3.3-70b-instruct.json").write_text("{}", encoding="utf-8")
    out = tmp_path_factory.mktemp("dist")
    _pip("wheel", str(src), "--no-deps", "--no-build-isolation", "--no-index", "-w", str(out), cwd=src)
    (built,) = out.glob("provider_canary-*.whl")
    return built


def test_the_wheel_holds_the_packages_and_their_data_and_nothing_generated(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == set(PACKAGES), tops
    assert not [n for n in names if "published" in n.split("/")[0]]
    assert set(DATA) <= set(names), set(DATA) - set(names)
    source = {str(p.relative_to(ROOT)) for package in PACKAGES for p in (ROOT / package).rglob("*.py")}
    assert source <= set(names), sorted(source - set(names))[:5]
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in meta
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_installed_elsewhere_it_finds_its_built_in_exclusions(wheel: Path, tmp_path: Path) -> None:
    target, elsewhere = tmp_path / "site", tmp_path / "elsewhere"
    elsewhere.mkdir()
    _pip("install", "--no-deps", "--no-index", "--target", str(target), str(wheel), cwd=elsewhere)
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=elsewhere, env={"PYTHONPATH": str(target),
                          "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["tasks"].startswith(str(target)), seen  # the installed copy, not the checkout
    assert seen["exclusions"] == str(target / "tasks" / "exclusions.toml")
    shipped = (ROOT / "tasks" / "exclusions.toml").read_text(encoding="utf-8")
    assert (target / "tasks" / "exclusions.toml").read_text(encoding="utf-8") == shipped
    assert seen["fleet"] > 0 and seen["corpus"] is True
