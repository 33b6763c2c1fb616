"""Two rounds of the same model never overlap: one Prefect global concurrency limit per model.

The limit `canary-round-<model slug>` (1 slot) is created on first use. A second round that cannot get the
slot within `WAIT_S` is skipped with a clear log line instead of piling up behind a stuck one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from tasks.plan import model_slug

#: How long a round waits for the previous round of the same model before it is skipped.
WAIT_S = 60.0


class RoundSkipped(Exception):
    """Another round of the same model still holds the slot."""


def limit_name(model: str) -> str:
    return f"canary-round-{model_slug(model)}"


def ensure_limit(model: str) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate

    name = limit_name(model)
    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(name)
        except Exception:
            with contextlib.suppress(Exception):  # a concurrent creator won the race: fine
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))


@contextlib.contextmanager
def round_slot(model: str, logger: Any, wait_s: float = WAIT_S) -> Iterator[None]:
    from prefect.concurrency.sync import concurrency

    ensure_limit(model)
    try:
        cm = concurrency(limit_name(model), occupy=1, timeout_seconds=wait_s, strict=True)
        cm.__enter__()
    except TimeoutError:
        logger.warning("Round skipped: another round of %s is still running after %.0f s", model, wait_s)
        raise RoundSkipped(model) from None
    try:
        yield
    finally:
        cm.__exit__(None, None, None)
