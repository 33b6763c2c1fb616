"""The ignore list (shell): published per model, served over HTTP, edited from the Prefect UI.

* publish        the JSON file per model, the keyed Prefect artifact, the CLI's view
* endpoint       `GET /lists/<model-slug>.json` on the exporter, for routers on other hosts
* variable_sync  the operational layer as the Prefect Variable `canary-operational-exclusions`
"""

__all__ = ["publish", "endpoint", "variable_sync"]
