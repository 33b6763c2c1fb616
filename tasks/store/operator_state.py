"""What people did to a database by hand: operational exclusions, lifts and mode switches, and who did them.

`canary demo` reads it before it replaces a file (provider_canary/demo/replace_guard.py): the operator's state is not
the demo's to throw away. Rows written by the demo itself are left out by naming its actors (`except_who`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from tasks.store.rows import Connection
from tasks.store.state import MODE_KEY


@dataclass(frozen=True, slots=True)
class OperatorState:
    """Counts of the changes people made (in force or not: the history is the operator's too)."""

    exclusions: int = 0  # operational exclusions ever added (`canary exclude add`, the Prefect Variable)
    lifts: int = 0  # suspensions ended by a person (`canary lift`; a mode switch's releases are its own)
    mode_switches: int = 0  # `canary mode`
    who: tuple[str, ...] = ()  # who made them, sorted

    @property
    def is_empty(self) -> bool:
        return not (self.exclusions or self.lifts or self.mode_switches)

    def describe(self) -> str:
        """`2 operational exclusions, 1 lift by alice, bob`: what a refusal names."""
        parts = [f"{n} {one if n == 1 else many}" for n, one, many in (
            (self.exclusions, "operational exclusion", "operational exclusions"), (self.lifts, "lift", "lifts"),
            (self.mode_switches, "mode switch", "mode switches")) if n]
        by = f" by {', '.join(self.who)}" if self.who else ""
        return ", ".join(parts) + by


def operator_state(con: Connection, *, except_who: Collection[str] = ()) -> OperatorState:
    """The operator's changes in `con`, leaving out those whose actor is one of `except_who`."""
    skip = sorted(except_who)
    exclusions = [r[0] for r in con.execute(
        "SELECT who FROM exclusions WHERE NOT list_contains(?, who)", [skip]).fetchall()]
    lifts = [r[0] for r in con.execute(
        "SELECT actor FROM decisions WHERE action IN ('lift', 'would_lift') AND actor NOT IN ('canary', 'mode-switch')"
        " AND NOT list_contains(?, actor)", [skip]).fetchall()]
    switches = [r[0] for r in con.execute(
        "SELECT coalesce(changed_by, '?') FROM settings_history WHERE key = ?"
        " AND NOT list_contains(?, coalesce(changed_by, '?'))",
        [MODE_KEY, skip]).fetchall()]
    who = tuple(sorted({str(w) for w in (*exclusions, *lifts, *switches)}))
    return OperatorState(len(exclusions), len(lifts), len(switches), who)
