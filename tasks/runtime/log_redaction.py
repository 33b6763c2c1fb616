"""Log redaction: every log record's message, arguments and traceback pass through the process's redactor.

The redactor is `tasks.core.redaction.redact_process_secrets`, which `tasks.runtime.secrets.install_redaction` points at
`tasks.runtime.secrets.redact_known_secrets` (every secret the process knows). `install_log_redaction()` (called by
that, and again after logging is reconfigured) puts
`RedactingFilter` on the canary/prefect/httpx loggers and their handlers and the root's, and wraps the log
record factory, so a record of any logger is redacted when it is created, before any handler (the console,
Prefect's API handler, pytest's caplog) sees it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from tasks.core.redaction import redact_process_secrets

#: Loggers whose records are redacted at creation (their children's records go through the handlers' filter
#: and the record factory installed by `install_log_redaction`).
REDACTED_LOGGERS = (
    "canary", "tasks", "flows", "router", "prefect", "prefect.flow_runs", "prefect.task_runs",
    "httpx", "httpcore",
)


class RedactingFilter(logging.Filter):
    """Rewrites a record's message and traceback text through `redact_process_secrets`. A message that held a
    secret is replaced by its redacted text with the arguments merged in; other records keep `msg` and `args` as they
    were (formatters such as uvicorn's access log read `args`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "_canary_redacted", False):
            return True
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: keep what we can show
            message = f"{record.msg} {record.args!r}"
        redacted = redact_process_secrets(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_process_secrets(record.exc_text)
        if record.stack_info:
            record.stack_info = redact_process_secrets(record.stack_info)
        record._canary_redacted = True
        return True


_FILTER = RedactingFilter()
_factory_installed = False


def install_log_redaction(extra_loggers: Iterable[str] = ()) -> None:
    """Install `RedactingFilter` on the canary/prefect/httpx loggers, on their handlers and the root's, and in
    the log record factory (so a record of any logger is redacted before any handler sees it). Idempotent;
    call it again after logging is reconfigured (Prefect's dictConfig replaces handlers)."""
    global _factory_installed
    names = (*REDACTED_LOGGERS, *extra_loggers)
    loggers = [logging.getLogger(), *(logging.getLogger(n) for n in names)]
    for logger in loggers:
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
        for handler in logger.handlers:
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)
    if not _factory_installed:
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            _FILTER.filter(record)
            return record

        logging.setLogRecordFactory(factory)
        _factory_installed = True

