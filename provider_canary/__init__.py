"""provider-canary's own import package: everything that is not the Prefect flows (`flows/`) or the canary's
tasks and pure core (`tasks/`): the `canary` command line (`cli/`), the failover router (`router/`), the
OpenRouter-compatible simulator (`simulator/`) and the demo (`demo/`). docs/design.md "Architecture" says why
they share one name (a wheel installs its top-level names into a shared site-packages)."""
