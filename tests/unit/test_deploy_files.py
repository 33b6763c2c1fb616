"""deploy/ holds one deployment, written twice: systemd units and a compose file (issue 30.5). They must say the
same thing (services, commands, working directory, environment, secrets, restarts, logs), agree with the config
and routes files they name, and hold no secret. tests/e2e/test_deploy.py runs the compose file's services."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tasks.config import DEFAULT_EXCLUSIONS_FILE
from tasks.config.loading import load_config
from tasks.ignore_list.publish import publish_dir
from tests.support.deploy_files import (
    ETC,
    INSTALL,
    STATE,
    VENV,
    Service,
    Unit,
    compose_services,
    dockerfile_env,
    parse_unit,
    read_env_file,
)

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
UNITS = {p.stem: parse_unit(p) for p in sorted((DEPLOY / "systemd").glob("*.service"))}
#: compose service -> systemd unit
SAME = {"prefect-server": "canary-prefect-server", "canary-serve": "canary-serve",
        "canary-router": "canary-router", "canary-metrics": "canary-metrics"}
#: The compose service a systemd host has as Debian's `postgresql` package (its own unit, not one of ours).
DATABASE = "postgres"
#: The one difference allowed between the two: what a process binds (a container's port is published by Compose).
BIND_FLAGS = ("--host", "--addr")


def _bind_neutral(argv: tuple[str, ...]) -> list[str]:
    return [("<bind>" if i and argv[i - 1] in BIND_FLAGS else a) for i, a in enumerate(argv)]


def compose() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    return spec


def test_the_units_and_the_compose_file_run_the_same_services_the_same_way(tmp_path: Path) -> None:
    shutil.copy(DEPLOY / "canary.env.example", tmp_path / "canary.env")  # what an operator starts from
    services = compose_services(DEPLOY / "compose.yaml", env_dir=tmp_path)
    assert set(services) == {*SAME, DATABASE} and set(UNITS) == set(SAME.values())
    for name, unit_name in SAME.items():
        _same_command_and_environment(name, services[name], UNITS[unit_name])
        _same_supervision(unit_name, services[name], UNITS[unit_name])
    for path in (f for s in services.values() for f in s.argv if f.startswith(ETC)):
        assert (DEPLOY / Path(path).name).is_file(), path  # every file a command names is in deploy/
    published = [p for s in services.values() for p in s.ports]
    assert published and all(p.startswith("127.0.0.1:") for p in published)  # loopback only


def _same_command_and_environment(name: str, svc: Service, unit: Unit) -> None:
    """One service's command, directory, secrets and environment, the same in Compose and its systemd unit."""
    assert _bind_neutral(svc.argv) == _bind_neutral(unit.argv), name
    assert svc.argv[0].startswith(f"{VENV}/bin/")
    assert svc.cwd == unit.cwd == STATE, name
    assert bool(svc.env_files) == bool(unit.env_files), f"{name}: secrets in one and not the other"
    assert unit.env_files in ((), (f"{ETC}/canary.env",))
    ours = {k: v for k, v in svc.env.items() if k in unit.env}
    assert set(unit.env) <= set(svc.env) | set(dockerfile_env(DEPLOY / "Dockerfile")), name
    for key, value in ours.items():
        assert value == unit.env[key].replace("127.0.0.1", "prefect-server") or value == unit.env[key], key


def _same_supervision(unit_name: str, svc: Service, unit: Unit) -> None:
    """One service's user, restarts, logs and state directories, in Compose and its systemd unit."""
    assert unit.user == "canary" and compose()["x-service"]["user"] == "canary"
    assert unit.restart == "always" and svc.restart == "unless-stopped"
    assert unit.options["Service.StandardOutput"] == ["journal"]  # journald rotates the units' output
    assert svc.logging["driver"] == "json-file" and svc.logging["options"]["max-size"]
    homes = [v for k, v in unit.env.items() if k == "PREFECT_HOME" and unit_name == "canary-prefect-server"]
    made = [f"/var/lib/{d}" for v in unit.options["Service.StateDirectory"] for d in v.split()]
    assert all(h in made for h in homes), f"{unit_name}: systemd must create {homes} (sqlite will not)"


def test_the_prefect_server_uses_postgresql_through_its_socket_in_both(tmp_path: Path) -> None:
    """Compose's `postgres` service and a host's Debian PostgreSQL are reached the same way: the role `canary`,
    the database `prefect`, the socket in /var/run/postgresql (no TCP listener, no password); the server waits for
    a healthy database (Compose) or starts after it (systemd)."""
    shutil.copy(DEPLOY / "canary.env.example", tmp_path / "canary.env")
    services = compose_services(DEPLOY / "compose.yaml", env_dir=tmp_path)
    db, server = compose()["services"][DATABASE], services["prefect-server"]
    url = "postgresql+asyncpg://canary@/prefect?host=/var/run/postgresql"
    assert server.env["PREFECT_API_DATABASE_CONNECTION_URL"] == url
    assert UNITS["canary-prefect-server"].env["PREFECT_API_DATABASE_CONNECTION_URL"] == url
    assert (db["environment"]["POSTGRES_USER"], db["environment"]["POSTGRES_DB"]) == ("canary", "prefect")
    assert db["command"] == ["postgres", "-c", "listen_addresses="] and "ports" not in db
    assert compose()["services"]["prefect-server"]["depends_on"] == {DATABASE: {"condition": "service_healthy"}}
    assert db["healthcheck"]["test"][:2] == ["CMD", "pg_isready"] and "/var/run/postgresql" in db["healthcheck"]["test"]
    socket_volumes = {v.split(":")[0] for v in db["volumes"] if v.endswith(":/var/run/postgresql")}
    assert socket_volumes == {m for m, at in server.mounts if at == "/var/run/postgresql"} != set()
    who_mounts = [n for n, s in services.items() if any(at == "/var/run/postgresql" for _, at in s.mounts)]
    assert sorted(who_mounts) == [DATABASE, "prefect-server"]  # the socket trusts whoever reaches it
    unit = UNITS["canary-prefect-server"].options
    assert "postgresql.service" in unit["Unit.After"][0] and "postgresql.service" in unit["Unit.Wants"][0]
    assert set(compose()["volumes"]) >= set(socket_volumes) | {"postgres-data"}


def test_the_example_environment_file_holds_no_secret() -> None:
    from tasks.runtime.secrets import ENV_SECRETS

    env = read_env_file(DEPLOY / "canary.env.example")
    assert {"OPENROUTER_API_KEY", "SLACK_BOT_TOKEN", "SLACK_CHANNEL"} <= set(env)
    assert all(env.get(k, "") == "" for k in ENV_SECRETS), {k: env[k] for k in ENV_SECRETS if env.get(k)}
    assert env["SLACK_CHANNEL"] == ""  # no real-looking channel an operator could leave in by mistake (issue 44)
    assert "deploy/canary.env" in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_config_routes_and_state_directory_agree() -> None:
    from provider_canary.router.routes_loading import load_routes

    cfg = load_config(DEPLOY / "canary.toml")
    routes = load_routes(DEPLOY / "routes.toml")
    assert cfg.db_path == f"{STATE}/canary.duckdb" and cfg.exclusions_file == DEFAULT_EXCLUSIONS_FILE
    assert cfg.mode.value == "observe" and cfg.budget_usd_per_day > 0  # start observing, with a budget
    assert str(publish_dir(cfg)) == routes.settings.publish_dir == f"{STATE}/published"
    assert routes.settings.events_db == cfg.db_path
    for p in (routes.settings.events_path, routes.settings.savings_path):
        assert p.startswith(f"{STATE}/router/")
    logrotate = (DEPLOY / "logrotate" / "provider-canary").read_text(encoding="utf-8")
    assert f"{STATE}/router/*.jsonl {{" in logrotate
    assert all(t.api_key_env == "OPENROUTER_API_KEY" for r in routes.routes for t in r.tiers)


def test_the_shipped_router_starts_where_both_files_bind_it(tmp_path: Path) -> None:
    """Compose binds 0.0.0.0 inside its container: the shipped routes file names a client (a placeholder digest no
    key matches, until the operator replaces it), so the router starts there and asks every request for a key."""
    from provider_canary.router.clients import PLACEHOLDER_SHA256, anonymous_refusal
    from provider_canary.router.routes_loading import load_routes

    shutil.copy(DEPLOY / "canary.env.example", tmp_path / "canary.env")
    routes = load_routes(DEPLOY / "routes.toml")
    assert [(c.name, c.key_sha256) for c in routes.clients] == [("team-a", PLACEHOLDER_SHA256)]
    for argv in (compose_services(DEPLOY / "compose.yaml", env_dir=tmp_path)["canary-router"].argv,
                 UNITS["canary-router"].argv):
        assert anonymous_refusal(routes, argv[argv.index("--host") + 1]) is None, argv
    assert "canary router keys add" in (DEPLOY / "routes.toml").read_text(encoding="utf-8")


def test_the_image_installs_where_the_units_run_it() -> None:
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert f"WORKDIR {INSTALL}\n" in text and "USER canary\n" in text and f"WORKDIR {STATE}\n" in text
    assert "python -m venv .venv" in text and "-c constraints.txt" in text
    for d in (f"{STATE}/prefect-server", f"{STATE}/router"):  # the volumes' mount points, the canary's own
        assert d in text


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verify_finds_nothing(tmp_path: Path) -> None:
    """Each unit as systemd reads it, with the install directory pointing at this checkout (so that the
    executables it names exist); any warning is a failure."""
    venv = Path(sys.executable).parent.parent
    for path in (DEPLOY / "systemd").glob("*.service"):
        text = path.read_text(encoding="utf-8").replace(VENV, str(venv)).replace(INSTALL, str(REPO))
        (tmp_path / path.name).write_text(text, encoding="utf-8")
    done = subprocess.run(["systemd-analyze", "verify", *sorted(str(p) for p in tmp_path.glob("*.service"))],
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")
    (tmp_path / "broken.service").write_text("[Service]\nExecStart=/bin/true\nRestart=sometimes\n")
    broken = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "broken.service")],
                            capture_output=True, text=True, timeout=60)
    assert "restart specifier" in broken.stderr  # the check can fail


def test_the_admin_script_runs_canary_as_the_serve_unit_does() -> None:
    """deploy/canary-admin: an operator's `canary` with the serve unit's user, secrets, config, API and directory."""
    path = DEPLOY / "canary-admin"
    text = path.read_text(encoding="utf-8")
    serve = UNITS["canary-serve"]
    assert path.stat().st_mode & 0o111 and subprocess.run(["sh", "-n", str(path)]).returncode == 0
    assert f"\n. {serve.env_files[0]}\n" in text
    for key in ("PREFECT_API_URL", "PREFECT_HOME"):
        assert f"{key}={serve.env[key]} " in text
    assert f"CANARY_CONFIG={serve.argv[serve.argv.index('--config') + 1]} " in text
    assert f"\ncd {serve.cwd}\n" in text and f"exec runuser -u {serve.user} -- {VENV}/bin/canary \"$@\"\n" in text
