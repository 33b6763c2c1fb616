"""`GET /metrics` over HTTP (`canary metrics`, `canary serve --metrics-port`): the exporter of tasks/metrics/exporter.py
served from daemon threads, the scrape gzip-compressed when the scraper takes it, the published ignore lists beside
it (`GET /lists/<model-slug>.json`, tasks/ignore_list/endpoint.py), and the snapshot read again every `REFRESH_EVERY_S`
so a scrape finds it read already."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tasks.config import CanaryConfig
from tasks.core.exposition import CONTENT_TYPE
from tasks.ignore_list.endpoint import PREFIX, publish_dirs, serve_list
from tasks.metrics.exporter import CanaryCollector

log = logging.getLogger("tasks.metrics.exporter")


def accepts_gzip(accept_encoding: str | None) -> bool:
    """Whether an `Accept-Encoding` header takes gzip (`gzip;q=0` refuses it)."""
    for part in (accept_encoding or "").split(","):
        coding, _, params = part.strip().partition(";")
        if coding.strip().lower() in ("gzip", "*"):
            q = params.strip().removeprefix("q=")
            try:
                return not params.strip().startswith("q=") or float(q) > 0
            except ValueError:
                return False
    return False


class _Handler(BaseHTTPRequestHandler):
    collector: CanaryCollector
    list_dirs: list[Path]

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.startswith(PREFIX):  # the ignore lists, for routers on other hosts (tasks/ignore_list/endpoint.py)
            return serve_list(self, self.list_dirs)
        if self.path.split("?", 1)[0] not in ("/metrics", "/"):
            self.send_error(404)
            return
        gzip = accepts_gzip(self.headers.get("Accept-Encoding"))
        chunks = self.collector.scrape(gzip=gzip)
        try:
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Vary", "Accept-Encoding")
            if gzip:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(sum(len(c) for c in chunks)))
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError) as exc:  # the scraper went away (a timeout): its loss
            log.debug("metrics: scraper %s closed early: %s", self.client_address[0], type(exc).__name__)
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
        log.debug("metrics: " + format, *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line, never socketserver's traceback on stderr (a reset before the request was read)."""
        import sys

        exc = sys.exc_info()[1]
        log.warning("metrics: request from %s failed: %s", client_address[0], type(exc).__name__)


def serve_metrics(dbs: Sequence[str | os.PathLike[str]], cfg: CanaryConfig, port: int,
                  addr: str = "127.0.0.1") -> ThreadingHTTPServer:
    """Serve `GET /metrics` from a daemon thread; returns the server (`.shutdown()` stops it)."""
    collector = CanaryCollector(dbs, cfg)
    collector.refresh(gzip=True)  # read (and compress) the snapshot(s) once before the first scrape
    handler = type("CanaryMetricsHandler", (_Handler,), {"collector": collector, "list_dirs": publish_dirs(dbs, cfg)})
    server = _Server((addr, port), handler)
    threading.Thread(target=server.serve_forever, name="canary-metrics", daemon=True).start()
    threading.Thread(target=_keep_fresh, args=(collector,), name="canary-metrics-refresh", daemon=True).start()
    return server


#: How often the served exporter looks for a new snapshot (a stat per shard) and reads it when there is one, so
#: that a scrape finds it read (and compressed) already instead of paying for it (~40 ms and ~9 MB to read,
#: ~60 ms to compress at 100 models x 15 endpoints: benchmarks/bench_metrics.py).
REFRESH_EVERY_S = 5.0


def _keep_fresh(collector: CanaryCollector) -> None:
    """For the life of the process (a daemon thread, like the server's)."""
    while True:
        time.sleep(REFRESH_EVERY_S)
        try:
            collector.refresh(gzip=True)
            if collector.live is not None:
                collector.live.refresh()
        except Exception as exc:  # the next scrape reads it itself and says so (canary_snapshot_up)
            log.warning("metrics: refresh failed: %s", type(exc).__name__)
