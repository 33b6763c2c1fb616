"""Errors for the operator. A transport failure of a provider is *data* (Outcome.TRANSPORT), never these.

* CanaryError            base; str() is the one line the CLI prints
  + ConfigError          bad TOML/key/URL, unknown model, missing env
  + StoreError           DuckDB lock held too long (`busy`) / file unreadable / migration failed
  + FleetError           bad simulator fleet file
  + RoutesError          bad router routes file
"""


class CanaryError(Exception):
    """Base class: its message is one line, fit to print to a user without a traceback."""


class ConfigError(CanaryError):
    """The configuration (file, key, environment) is unusable."""


class StoreError(CanaryError):
    """The DuckDB store could not be opened, migrated or written. `busy`: another process held it (wait and
    retry, or spool); otherwise the file itself is the problem (an admin must look)."""

    def __init__(self, message: str, *, busy: bool = False) -> None:
        super().__init__(message)
        self.busy = busy


class FleetError(CanaryError):
    """The simulator's fleet file is malformed."""


class RoutesError(CanaryError):
    """The router's routes file is malformed."""
