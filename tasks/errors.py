"""Errors for the operator. A transport failure of a provider is *data* (Outcome.TRANSPORT), never these.

* CanaryError            base; str() is the one line the CLI prints
  + ConfigError          bad TOML/key/URL, unknown model, missing env
  + StoreError           DuckDB lock held too long / migration failed
  + AlertDeliveryError   Slack refused after retries (the outbox row stays)
  + FleetError           bad simulator fleet file
  + RoutesError          bad router routes file
"""


class CanaryError(Exception):
    """Base class: its message is one line, fit to print to a user without a traceback."""


class ConfigError(CanaryError):
    """The configuration (file, key, environment) is unusable."""


class StoreError(CanaryError):
    """The DuckDB store could not be opened, migrated or written."""


class AlertDeliveryError(CanaryError):
    """Slack refused or could not be reached after retries; the outbox keeps the alert."""


class FleetError(CanaryError):
    """The simulator's fleet file is malformed."""


class RoutesError(CanaryError):
    """The router's routes file is malformed."""
