"""The deployment files of deploy/ as data: the compose file's services and the systemd units, parsed, and the
map that turns a container's paths, host names and ports into this machine's (what Compose's volumes, network
and published ports do), so that a test runs the services FROM those files, not from a second copy.

    services = compose_services(DEPLOY / "compose.yaml")
    host = Host(root=tmp_path, compose_dir=..., venv=..., ports={4200: free_port(), ...})
    argv, env, cwd = host.process(services["canary-serve"], base_env)
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

#: Where the image (deploy/Dockerfile) and the units put the checkout, its venv, the config and the state.
INSTALL = "/opt/provider-canary"
VENV = f"{INSTALL}/.venv"
ETC = "/etc/provider-canary"
STATE = "/var/lib/provider-canary"


@dataclass(frozen=True)
class Service:
    """One compose service: what runs, where, with which environment and files."""

    name: str
    argv: tuple[str, ...]
    env: dict[str, str]  # env_file entries first, then `environment` (which wins, as in Compose)
    env_files: tuple[str, ...]
    cwd: str
    mounts: tuple[tuple[str, str], ...]  # (source: a volume name or ./path, path in the container)
    ports: tuple[str, ...] = ()
    healthcheck: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    restart: str = ""
    logging: dict[str, Any] = field(default_factory=dict)


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=value lines (comments and blank lines skipped), as Compose's env_file and systemd's EnvironmentFile."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def compose_services(path: Path, env_dir: Path | None = None) -> dict[str, Service]:
    """The services of a compose file; env_file names are read from `env_dir` (default: the file's directory)."""
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    out = {}
    for name, s in spec["services"].items():
        env_files = tuple(s.get("env_file") or ())
        env: dict[str, str] = {}
        for f in env_files:
            env.update(read_env_file((env_dir or path.parent) / f))
        env.update({k: str(v) for k, v in (s.get("environment") or {}).items()})
        health = s.get("healthcheck", {}).get("test") or []
        out[name] = Service(
            name=name,
            argv=tuple(str(a) for a in s["command"]),
            env=env,
            env_files=env_files,
            cwd=s.get("working_dir", "/"),  # an image of someone else's (postgres) keeps its own
            mounts=tuple(tuple(v.split(":")[:2]) for v in s.get("volumes") or ()),  # type: ignore[misc]
            ports=tuple(s.get("ports") or ()),
            healthcheck=tuple(str(a) for a in health[1:]) if health[:1] == ["CMD"] else (),
            depends_on=tuple(s.get("depends_on") or ()),
            restart=s.get("restart", ""),
            logging=s.get("logging") or {},
        )
    return out


@dataclass(frozen=True)
class Unit:
    """One systemd unit's [Service] section (the keys a deployment relies on)."""

    name: str
    argv: tuple[str, ...]
    env: dict[str, str]
    env_files: tuple[str, ...]
    cwd: str
    user: str
    restart: str
    options: dict[str, list[str]]  # every key of every section, in order


def parse_unit(path: Path) -> Unit:
    options: dict[str, list[str]] = {}
    section = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        options.setdefault(f"{section}.{key.strip()}", []).append(value.strip())
    env = dict(item.split("=", 1) for v in options.get("Service.Environment", []) for item in shlex.split(v))
    return Unit(
        name=path.stem,
        argv=tuple(shlex.split(options["Service.ExecStart"][0])),
        env=env,
        env_files=tuple(options.get("Service.EnvironmentFile", [])),
        cwd=options["Service.WorkingDirectory"][0],
        user=options["Service.User"][0],
        restart=options["Service.Restart"][0],
        options=options,
    )


def dockerfile_env(path: Path) -> dict[str, str]:
    """The image's `ENV k=v ...` lines."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("ENV "):  # `$VAR` as the image's base has it: this machine's
            out.update((k, os.path.expandvars(v)) for k, v in (i.split("=", 1) for i in shlex.split(line[4:])))
    return out


@dataclass
class Host:
    """This machine standing in for Compose: named volumes are directories under `root/volumes`, bind mounts
    (`./x`) are files of `compose_dir`, the image's install is this checkout and its venv, a path nothing mounts is
    under `root/rootfs/<service>`, every service name is 127.0.0.1 and each container port is a free port here."""

    root: Path
    compose_dir: Path
    checkout: Path
    venv: Path
    ports: dict[int, int]
    services: tuple[str, ...] = ()

    def path(self, p: str, service: Service) -> str:
        if p == VENV or p.startswith(VENV + "/"):
            return str(self.venv) + p[len(VENV):]
        if p == INSTALL or p.startswith(INSTALL + "/"):
            return str(self.checkout) + p[len(INSTALL):]
        for source, target in sorted(service.mounts, key=lambda m: -len(m[1])):
            if p == target or p.startswith(target.rstrip("/") + "/"):
                base = self.compose_dir / source if source.startswith((".", "/")) else self.root / "volumes" / source
                return str(base) + p[len(target):]
        return str(self.root / "rootfs" / service.name) + p

    def text(self, s: str, service: Service) -> str:
        """Host names, bind addresses and ports inside a string (a URL, a healthcheck's code)."""
        for name in self.services:
            s = s.replace(f"//{name}:", "//127.0.0.1:")
        s = s.replace("0.0.0.0", "127.0.0.1")
        for inside, outside in self.ports.items():
            s = re.sub(rf":{inside}\b", f":{outside}", s)
        return re.sub(r"(?<![\w.])/(?:opt|etc|var)/[^\s'\"]*", lambda m: self.path(m.group(0), service), s)

    def token(self, t: str, service: Service) -> str:
        if t.isdigit() and int(t) in self.ports:
            return str(self.ports[int(t)])
        return self.text(t, service)

    def process(self, service: Service, base_env: Mapping[str, str]) -> tuple[list[str], dict[str, str], Path]:
        """argv, environment and working directory of `service` on this machine (the directories made)."""
        for source, _ in service.mounts:  # Compose creates a named volume before the container starts
            if not source.startswith((".", "/")):
                (self.root / "volumes" / source).mkdir(parents=True, exist_ok=True)
        cwd = Path(self.path(service.cwd, service))
        cwd.mkdir(parents=True, exist_ok=True)
        env = {**base_env, **{k: self.text(v, service) for k, v in service.env.items()}}
        return [self.token(a, service) for a in service.argv], env, cwd

    def healthcheck(self, service: Service) -> list[str]:
        return [self.token(a, service) for a in service.healthcheck]
