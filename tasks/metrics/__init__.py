"""The Prometheus exporter (shell): the canary's state from the analysts' snapshot, served.

* exporter  `CanaryCollector`: the snapshot as exposition text
* server    `GET /metrics` over HTTP from daemon threads (gzip when asked), and its routes
"""

__all__ = ["exporter", "server"]
