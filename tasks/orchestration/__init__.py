"""Running cycles (shell): what the canary asks of Prefect and of the machine to run them.

* prefect_events      the canary events emitted to Prefect (the shell of tasks/core/canary_events.py)
* deployments         the deployments' settings: the crashed-cycle trigger, the concurrency limits
* round_slots         two rounds of one model never overlap: a Prefect global concurrency limit per model
* cycle_lock          one cycle per database at a time on this machine: a file lock beside the database
* cycle_turn          a cycle's turn at its database (lock, slot, how late it started)
* admission           which of a cycle's rounds run now: a round at its tail steps aside for the next
* deadman_automation  the dead-man as a Prefect Proactive automation
* zombie_runs         Prefect's zombie-run automation: a run whose heartbeats stop is marked Crashed
"""

__all__ = [
    "prefect_events",
    "deployments",
    "round_slots",
    "cycle_lock",
    "cycle_turn",
    "admission",
    "deadman_automation",
    "zombie_runs",
]
