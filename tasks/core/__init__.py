"""The pure core of a round: no Prefect, httpx, DuckDB, Slack, file system or wall clock.

    prior = Prior(...)                                   # what the round needs from the past (the shell reads it)
    settlement = settle_round(prior, attempts, endpoints, cfg, now)   # everything the round produces

Live rounds, deferred rounds landed later, `canary replay`, what-if runs and the demo all go through
`settle_round` / `settle_policy`, so a replayed history gives the live decisions by construction.
"""

from tasks.core.settle import Prior, Settlement, resolve_mode, settle_judged, settle_policy, settle_round

__all__ = ["Prior", "Settlement", "resolve_mode", "settle_judged", "settle_policy", "settle_round"]
