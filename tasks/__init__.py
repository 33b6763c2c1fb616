"""The canary's core (pure modules) and its Prefect tasks (I/O modules)."""
