"""The Prefect API a command's flow runs talk to (Prefect plumbing, used by the CLI and the demo).

* server      `prefect_api()`: the configured API, or one private server that dies with its owner
* configured  PREFECT_API_URL from the environment or the active profile, its /health checked
* private_server / server_child  the private server's process, and how it dies with its owner
* db_template  the private server's database, migrated once per Prefect version and copied at each start
* subflow_runs a flow run started as a subflow of the current one, with half the API calls
"""

__all__ = ["configured", "db_template", "private_server", "server", "server_child", "subflow_runs"]
