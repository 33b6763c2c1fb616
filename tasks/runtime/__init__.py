"""Process plumbing (shell): the clock, secrets and redaction, liveness, failpoints, servers.

* clock           the only place that reads the wall clock
* secrets         secrets read inside I/O, known to one redactor, never printed
* log_redaction   every log record passes through the process's redactor
* liveness        is the process that wrote a journal or holds a lock still running? (/proc)
* failpoints      named crash points at the round's step boundaries (tests only)
* arenas          the allocators' arenas, capped for the processes the canary runs
* uvicorn_thread  an ASGI app served by uvicorn in a daemon thread: started, waited for, stopped
* quiet_log       one log line per condition, not one per look
"""

__all__ = ["clock", "secrets", "log_redaction", "liveness", "failpoints", "arenas", "uvicorn_thread", "quiet_log"]
