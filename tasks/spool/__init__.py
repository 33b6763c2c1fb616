"""Files beside the database that keep a round's work when the database cannot take it (no DuckDB).

* journal  the spool's directories (and their fallback), the round's journal, deferred rounds kept
* probes   a round's probes kept as they end, beside its journal, so a dead process loses none
"""

__all__ = ["journal", "probes"]
