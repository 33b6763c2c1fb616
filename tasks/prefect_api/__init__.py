"""The Prefect API a command's flow runs talk to (Prefect plumbing, used by the CLI and the demo).

* server      `prefect_api()`: the configured API, or one private server that dies with its owner
* configured  PREFECT_API_URL from the environment or the active profile, its /health checked
* private_server / server_child  the private server's process, and how it dies with its owner
"""
