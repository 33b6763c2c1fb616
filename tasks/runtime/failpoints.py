"""Named crash points at the round's step boundaries, in the spirit of TiKV's fail-rs (tests only).

    failpoint("after-save")     # kills this process with SIGKILL when CANARY_TEST_FAILPOINTS names it

`CANARY_TEST_FAILPOINTS` is a comma-separated list of names; it is read on every call (cheap) so a test can
set it for one subprocess. Unset (always, outside the failpoint tests) a failpoint does nothing. SIGKILL, not
an exception: no `finally`, no atexit, no flush, exactly what a power cut or the OOM killer does.
"""

from __future__ import annotations

import os
import signal

ENV = "CANARY_TEST_FAILPOINTS"

#: Every failpoint the code has, in the order a round reaches them (the failpoint suite covers each).
FAILPOINTS: tuple[str, ...] = (
    "mid-probe",  # the first endpoint's probes ended and are kept beside the journal; the others still run
    "after-probe",
    "inside-save",
    "after-save",
    "after-publish",
    "during-delivery",
)


def failpoint(name: str) -> None:
    if name not in FAILPOINTS:
        raise ValueError(f"unknown failpoint {name!r}")
    armed = os.environ.get(ENV)
    if armed and name in {n.strip() for n in armed.split(",")}:
        os.kill(os.getpid(), signal.SIGKILL)


class FailpointError(RuntimeError):
    """Raised by an armed `raise_point`: a bug of ours, simulated (tests only)."""


def raise_point(name: str, key: str, armed: str | None, secret_hint: str = "") -> None:
    """Raise `FailpointError` when `armed` (a CANARY_TEST_FAILPOINTS value, passed along to a worker process)
    names `name:key`. `secret_hint` goes into the message, so a test can prove the message is redacted."""
    if armed and f"{name}:{key}" in {n.strip() for n in armed.split(",")}:
        raise FailpointError(f"failpoint {name}:{key} (a bug of ours, with a secret in its message: {secret_hint})")
