"""The pure core: no Prefect, httpx, DuckDB, Slack SDK, and no module of the shell (the rest of `tasks/`).

Vocabulary (types), contracts and their judge, round status (verdicts, pandas), the policy, the exclusion
layers, replay, the renderers of alerts and artifacts, the probe plan and prompts, and the round's settle step:

    settle_round(prior, attempts, endpoints, cfg, now) -> Settlement      (tasks/core/settle.py)

Live rounds, deferred rounds landed later, `canary replay`, what-if runs and the demo all go through
`settle_round` / `settle_policy`, so a replayed history gives the live decisions by construction. Besides
each other, core modules may import only `tasks.config` (the config record) and `tasks.errors`, and nothing they
import may reach further: tests/unit/test_import_graph.py walks the imports transitively.
"""
