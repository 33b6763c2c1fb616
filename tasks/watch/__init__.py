"""The watcher (shell): every model looked at every `watch_interval`, suspicions confirmed by a round.

* look             `watch_model`: one look at one model: read the signals, record suspicions, pick a round
* loop             the watcher's loop: every model every `watch_interval`, no flow run per look
* live_prometheus  the live evidence from Prometheus (`live_source = "prometheus"`)
"""

__all__ = ["look", "loop", "live_prometheus"]
