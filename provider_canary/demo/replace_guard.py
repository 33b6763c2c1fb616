"""`canary demo` starts its database afresh: it refuses to replace one that holds an operator's own state.

A demo's file is the demo's to replace. A file in which someone excluded an endpoint, lifted a suspension or
switched the mode (tasks/store/operator_state.py) is not: the demo stops with one line naming what it would
lose, unless it is asked to replace it (`canary demo --replace`). A file that is not a canary database at all
is refused the same way.
"""

from __future__ import annotations

from pathlib import Path

from provider_canary.demo.scenario import ONCALL
from provider_canary.demo.settings import DEMO_WHO
from tasks.errors import CanaryError, StoreError

#: The actors of the demo's own changes (its mode setting, the simulated history's admin story).
DEMO_ACTORS = (DEMO_WHO, ONCALL)


def refuse_to_replace(db_path: str | Path, *, replace: bool) -> None:
    """Raise a one-line CanaryError when `db_path` holds what the demo must not throw away (unless `replace`)."""
    from tasks import store
    from tasks.store.operator_state import operator_state

    path = Path(db_path)
    if replace or not path.is_file():
        return
    advice = "pass --replace to start it afresh anyway, or --db another file"
    try:
        with store.open_store(path, read_only=True) as con:
            state = operator_state(con, except_who=DEMO_ACTORS)
    except StoreError as exc:
        raise CanaryError(f"demo: {path} is not a canary database the demo can read ({exc}); {advice}") from None
    if not state.is_empty:
        raise CanaryError(f"demo: {path} holds changes made by hand ({state.describe()}) that the demo would "
                          f"throw away; {advice}")
