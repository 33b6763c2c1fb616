"""The canary's Prefect flows: they only wire the steps of tasks/ (each module's docstring says its flow's steps).

* round    `canary-round`: one round of one model; its steps in order (`run_round`)
* cycle    `canary-cycle`: every configured model's round at one schedule tick, in one process
* deadman  `canary-deadman`: tell admins when no round of a model has completed for two intervals
* publish  `publish-ignore-list`: refresh the keyed ignore-list artifacts after an admin change
* watch    the watcher wired to Prefect: live traffic as suspicions, confirmed by pinned probes
"""

__all__ = ["cycle", "deadman", "publish", "round", "watch"]
