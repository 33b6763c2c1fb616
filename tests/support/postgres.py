"""A throwaway PostgreSQL cluster for tests and benchmarks: `initdb` + `pg_ctl` in a temporary directory, listening
on an ephemeral port of 127.0.0.1 and on a unix socket in that directory; never the system's cluster.

    with postgres_cluster() as pg:                 # ~3 s
        pg.create_database("prefect")
        url = pg.socket_url("prefect")             # postgresql+asyncpg://prefect@/prefect?host=<dir>
        pg.query("prefect", "SELECT count(*) FROM flow_run")

The binaries: on PATH, else Debian's /usr/lib/postgresql/<version>/bin (the `postgresql` package; .ci/run installs
it). initdb and postgres refuse to run as root: as root they run as `nobody` (runuser), in a directory it owns
under the system's temporary directory. The cluster trusts every local connection (`-A trust`: it lives as long as
the test, on loopback and a socket only nobody else knows), and skips fsync: durability is not what is tested.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: The role initdb makes the superuser; Prefect connects as it.
ROLE = "prefect"
#: Who runs the cluster when this process is root (initdb refuses root).
UNPRIVILEGED = "nobody"
#: The port of a socket-only cluster: it only names the socket file (`.s.PGSQL.5432`), as on a Debian host.
SOCKET_ONLY_PORT = 5432
#: Settings for a cluster whose data does not outlive the test.
FAST = ("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")


def find_bindir() -> Path | None:
    """Where initdb, pg_ctl and postgres are (PATH first, then the newest Debian install), or None."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(debian[-1]).parent if debian else None


def require_bindir() -> Path:
    """The binaries' directory; skip the test without them, fail it on CI (`CI=true`)."""
    from tests.support.tools import tool_missing

    found = find_bindir()
    if found is not None:
        return found
    tool_missing("PostgreSQL's initdb is not installed (apt-get install postgresql; .ci/run installs it)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresCluster:
    def __init__(self, root: Path, bindir: Path, *, tcp: bool = True) -> None:
        self.root = root  # holds data/, the socket and postgres.log
        self.bindir = bindir
        self.tcp = tcp  # False: the socket only, named for port 5432 (no port taken on this machine)
        self.port = 0
        self._as = ["runuser", "-u", UNPRIVILEGED, "--"] if os.geteuid() == 0 else []

    @property
    def socket_dir(self) -> Path:
        return self.root

    def url(self, database: str) -> str:
        """SQLAlchemy's asyncpg URL over TCP (what Prefect's PREFECT_API_DATABASE_CONNECTION_URL takes)."""
        return f"postgresql+asyncpg://{ROLE}@127.0.0.1:{self.port}/{database}"

    def socket_url(self, database: str, socket_dir: Path | None = None) -> str:
        """The same over the unix socket (deploy/: no password, no listener), optionally through another path to
        the socket's directory."""
        return f"postgresql+asyncpg://{ROLE}@/{database}?host={socket_dir or self.socket_dir}&port={self.port}"

    def _run(self, *argv: str) -> None:
        out = subprocess.run([*self._as, *argv], capture_output=True, text=True, timeout=120, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed ({out.returncode}): {out.stderr[-2000:]}{self.log_tail()}")

    def start(self) -> None:
        if self._as:
            user = pwd.getpwnam(UNPRIVILEGED)
            os.chown(self.root, user.pw_uid, user.pw_gid)
        self._run(str(self.bindir / "initdb"), "-D", str(self.root / "data"), "-U", ROLE, "-A", "trust",
                  "-E", "UTF8", "--locale=C", "--no-sync")
        for attempt in range(3):  # the port was free a moment ago; another process may have taken it since
            self.port = _free_port() if self.tcp else SOCKET_ONLY_PORT
            listen = "127.0.0.1" if self.tcp else "''"
            options = " ".join(["-p", str(self.port), "-k", str(self.socket_dir),
                                "-c", f"listen_addresses={listen}", *FAST])
            try:
                self._run(str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-l",
                          str(self.root / "postgres.log"), "-w", "-t", "60", "-o", options, "start")
                return
            except RuntimeError:
                if attempt == 2:
                    raise

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")

    def log_tail(self, chars: int = 2000) -> str:
        log = self.root / "postgres.log"
        return "\n--- postgres.log\n" + log.read_text(errors="replace")[-chars:] if log.exists() else ""

    def query(self, database: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        """Rows of one statement, through asyncpg (Prefect's own driver) on the socket."""
        import asyncpg  # type: ignore[import-untyped]

        async def run() -> list[tuple[Any, ...]]:
            con = await asyncpg.connect(host=str(self.socket_dir), port=self.port, user=ROLE, database=database)
            try:
                return [tuple(r) for r in await con.fetch(sql, *args)]
            finally:
                await con.close()

        return asyncio.run(run())

    def create_database(self, name: str) -> None:
        self.query("postgres", f'CREATE DATABASE "{name}"')


@contextlib.contextmanager
def postgres_cluster(bindir: Path | None = None, prefix: str = "canary-pg-", *,
                     tcp: bool = True) -> Iterator[PostgresCluster]:
    """A started cluster, stopped and removed at the end (`tcp=False`: on its socket only). The directory's path
    stays short: a unix socket's path has a limit of ~107 bytes."""
    found = bindir or find_bindir()
    if found is None:
        raise RuntimeError("PostgreSQL's initdb is not installed (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp" if os.path.isdir("/tmp") else None))
    cluster = PostgresCluster(root, found, tcp=tcp)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
