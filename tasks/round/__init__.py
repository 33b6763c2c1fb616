"""One round of one model, in the shell: its steps, wired once for both engines (their order: flows/round.py).

* engine         what an engine gives the steps (`Engine`: the flow's, the pipelined history's), what probing gives
                 the rest of the round (`RoundProbes`), what a round did (`RoundSummary`), the planned probes
* steps          the round's steps: load the prior, discover, settle, save, publish, deliver; and
                 `record_failure`, which marks a round that raised `failed` with its step and error
* probe_task     the probe task (one per endpoint, its contracts inside), and the probe worker's warm-up
* footprint      the day's budget: which endpoints this round probes (`plan_footprint`)
* write_window   the write window's reads and writes: the prior, settle-and-save in one transaction, landing
                 deferred rounds and marking failed and crashed ones
* confirmations  confirmation rounds: the plan of a partial round, and the follow-up round after hard failures
"""

__all__ = ["confirmations", "engine", "footprint", "probe_task", "steps", "write_window"]
