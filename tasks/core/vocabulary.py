"""The canary's enums (docs/design.md "Vocabulary"): contracts, outcomes, round statuses and round states, error
classes, modes, actions, layers.

Enum values are exactly docs/design.md's strings; they are what lands in DuckDB, JSON and Slack.
"""

from __future__ import annotations

from enum import StrEnum


class Contract(StrEnum):
    """The project's contracts. Which ones a round probes and how is the registry's (tasks/core/contracts/);
    records carry a contract as `str`, so a contract registered from outside works the same."""

    TTFT = "ttft"
    REFUSAL = "refusal"
    STRUCTURED = "structured"
    LANGUAGE = "language"
    OPENING = "opening"  # judged over the round's text replies; never probed on its own
    TOOLS = "tools"  # function calling; probed only where `supported_parameters` include "tools"


def as_contract(name: str) -> str:
    """A stored contract name -> its `Contract` member, or the plain name of a contract registered from outside
    the project (tasks/core/contracts/__init__.py `register`)."""
    try:
        return Contract(name)
    except ValueError:
        return str(name)


class Outcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    TRANSPORT = "transport"

    def is_quality(self) -> bool:
        """pass and fail say something about the endpoint's output; the others do not."""
        return self in (Outcome.PASS, Outcome.FAIL)


class RoundStatus(StrEnum):
    """An endpoint's status in one round (docs/design.md "round status"; `endpoint_rounds.status`)."""

    CLEAN = "clean"
    FAIL = "fail"
    TRANSPORT = "transport"
    INCONCLUSIVE = "inconclusive"


class RoundState(StrEnum):
    """Where a round is in its lifecycle (docs/design.md "round": `rounds.status`, `v_endpoint_rounds.round_state`,
    a round's summary and `canary run`'s lines). Not an endpoint's round status (`RoundStatus`)."""

    RUNNING = "running"  # started, not yet written (stored)
    COMPLETE = "complete"  # probed, settled and saved (stored)
    DEFERRED = "deferred"  # probed and settled, the write waits in the spool (a summary's; never stored)
    FAILED = "failed"  # it raised in its own process (stored)
    CRASHED = "crashed"  # its process died (stored; marked by the next round of the model)
    SKIPPED = "skipped"  # not run: the previous round of the model still held its slot (a summary's; never stored)


#: The states a `rounds` row can hold (its CHECK constraint, tasks/store/schema.py).
STORED_ROUND_STATES = (RoundState.RUNNING, RoundState.COMPLETE, RoundState.FAILED, RoundState.CRASHED)


class ErrorClass(StrEnum):
    """What went wrong on the wire during one attempt (None on the attempt when nothing did)."""

    CONNECT = "connect"  # no TCP/TLS connection
    TIMEOUT = "timeout"  # no response (or no further bytes) within the budget
    HTTP_STATUS = "http_status"  # a non-200 HTTP response before any stream
    STREAM_CUT = "stream_cut"  # the stream ended before a finish_reason / [DONE]
    MIDSTREAM_ERROR = "midstream_error"  # an SSE chunk with a top-level "error"
    BAD_FRAME = "bad_frame"  # a broken exchange we cannot attribute (older rows: a bad SSE frame)
    PROTOCOL = "protocol_violation"  # HTTP 200, then a body that is not what was asked (tasks/core/classify.py)


class Mode(StrEnum):
    OBSERVE = "observe"
    ENFORCE = "enforce"


class Action(StrEnum):
    SUSPEND = "suspend"
    FLOOR_BLOCKED = "floor_blocked"
    RESTORE = "restore"
    EXPIRE = "expire"
    LIFT = "lift"
    WOULD_SUSPEND = "would_suspend"
    WOULD_RESTORE = "would_restore"
    WOULD_EXPIRE = "would_expire"
    WOULD_LIFT = "would_lift"


class Layer(StrEnum):
    BUILTIN = "builtin"
    OPERATIONAL = "operational"
    CANARY = "canary"
