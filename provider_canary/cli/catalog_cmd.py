"""`canary catalog DB...`: every shard's snapshot as one catalog (tasks/store/catalog.py).

Without `--sql`: one line per shard (its models, complete rounds, last round, when its snapshot was
published). With `--sql`: the query's result over the catalog (`shard` is a column of every table and view).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from tasks.errors import StoreError

SUMMARY = """
SELECT c.shard, c.db_path, strftime(c.snapshot_at, '%Y-%m-%d %H:%M:%S UTC') AS snapshot_at,
       len(c.models) AS models, array_to_string(c.shared_models, ', ') AS shared_models,
       count(r.round_id) FILTER (WHERE r.status = 'complete') AS complete_rounds,
       coalesce(strftime(max(r.round_ts), '%Y-%m-%d %H:%M UTC'), 'none') AS last_round
FROM catalog_shards c LEFT JOIN rounds r USING (shard)
GROUP BY ALL ORDER BY c.shard
"""


def catalog_command(*, dbs: list[Path], sql: str | None, json_out: bool) -> None:
    import duckdb

    from tasks.store.catalog import open_catalog

    con = open_catalog(dbs)
    try:
        try:
            frame = con.sql(sql or SUMMARY).df()
        except duckdb.Error as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise StoreError(f"catalog: the query failed: {first}") from None
    finally:
        con.close()
    if json_out:
        typer.echo(json.dumps(json.loads(frame.to_json(orient="records", date_format="iso")), indent=2))
    elif sql:
        typer.echo(frame.to_string(index=False))
    else:
        for row in frame.itertuples(index=False):
            shared = f"; also in another shard: {row.shared_models}" if row.shared_models else ""
            typer.echo(f"{row.shard}: {row.models} models, {row.complete_rounds} complete rounds, last round "
                       f"{row.last_round}, snapshot {row.snapshot_at} ({row.db_path}){shared}")
