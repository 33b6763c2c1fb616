"""The endpoints x contracts table of a round (pure): rows for Prefect's table artifact.

One row per endpoint (tag order): its round status, then one column per contract holding the outcome, with the
reason when it is not `ok` (`fail: ttft_exceeded`). A contract the endpoint was not judged on is `-`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tasks.core.contracts import in_order
from tasks.core.round_records import ContractResult
from tasks.core.vocabulary import RoundStatus


def endpoint_contract_rows(results: Sequence[ContractResult], statuses: Mapping[str, RoundStatus]
                           ) -> list[dict[str, str]]:
    cells: dict[str, dict[str, str]] = {}
    for r in results:
        text = str(r.outcome) if r.reason == "ok" else f"{r.outcome}: {r.reason}"
        cells.setdefault(r.tag, {})[str(r.contract)] = text
    contracts = in_order(c for row in cells.values() for c in row)
    rows = []
    for tag in sorted(set(cells) | set(statuses)):
        status = statuses.get(tag)
        row = {"endpoint": tag, "status": str(status) if status is not None else "-"}
        row.update({c: cells.get(tag, {}).get(c, "-") for c in contracts})
        rows.append(row)
    return rows
