"""The round's Markdown artifact (pure): endpoints × contracts, evidence, decisions, changes, ignore list.

No indentation inside the Markdown (Prefect renders indented lines as code blocks).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from tasks.core.contracts import in_order
from tasks.core.cost import RoundCost, describe_totals
from tasks.core.render.text import cell, fmt_ts, name
from tasks.core.types import ContractResult, Decision, Endpoint, IgnoreList, Outcome, RoundInfo


def round_status(results: Sequence[ContractResult]) -> str:
    from tasks.core.verdicts import status_of

    return status_of(r.outcome for r in results).value


def describe_changes(previous: Sequence[ContractResult], current: Sequence[ContractResult]) -> list[str]:
    """What changed per endpoint and contract between two rounds of one model."""
    before = {(r.tag, str(r.contract)): r for r in previous}
    after = {(r.tag, str(r.contract)): r for r in current}
    old_tags, new_tags = {t for t, _ in before}, {t for t, _ in after}
    lines = [f"{name(t, 'markdown')}: new endpoint" for t in sorted(new_tags - old_tags)]
    lines += [f"{name(t, 'markdown')}: not in this round" for t in sorted(old_tags - new_tags)]
    for key in sorted(after.keys() & before.keys()):
        b, a = before[key], after[key]
        if b.outcome != a.outcome:
            lines.append(f"{name(key[0], 'markdown')} {key[1]}: {b.outcome} → {a.outcome} ({cell(a.reason, 60)})")
    return lines


#: Short table cells, so the endpoints × contracts table fits the Prefect UI (every contract column visible
#: at 1,280 px); the reasons go to the numbered evidence lines under the table.
#: The same codes as `canary demo`'s table.
OUTCOME_CODES = {Outcome.PASS: "ok", Outcome.FAIL: "FAIL", Outcome.TRANSPORT: "tx", Outcome.INCONCLUSIVE: "?"}
LEGEND = ("ok = pass, FAIL = fail, tx = transport (never quality), ? = inconclusive;"
          " [n] = evidence line n below")


def _outcome_cell(res: ContractResult | None, note: int | None) -> str:
    if res is None:
        return ""
    code = OUTCOME_CODES[res.outcome]
    return code if note is None else f"{code} [{note}]"


def _num(value: float | None, fmt: str = ".1f") -> str:
    return "-" if value is None else format(value, fmt)


def render_listing_signals(endpoints: Sequence[Endpoint]) -> list[str]:
    """OpenRouter's per-endpoint figures from this round's listing, beside the canary's verdicts (none: no
    section). Evidence for suspicions only; never a verdict."""
    shown = [e for e in endpoints if e.status or any(v is not None for v in (
        e.uptime_last_5m, e.uptime_last_30m, e.uptime_last_1d, e.latency_p50_ms, e.throughput_p50))]
    if not shown:
        return []
    out = ["", "## OpenRouter's own figures (the listing; a suspicion at most, never a verdict)", "",
           "| endpoint | status | uptime 5m % | 30m % | 1d % | TTFT p50 / p90 ms | throughput p50 tok/s |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for e in sorted(shown, key=lambda e: e.tag):
        out.append(f"| `{cell(e.tag)}` | {e.status if e.status is not None else '-'} | {_num(e.uptime_last_5m)} | "
                   f"{_num(e.uptime_last_30m)} | {_num(e.uptime_last_1d)} | {_num(e.latency_p50_ms, '.0f')} / "
                   f"{_num(e.latency_p90_ms, '.0f')} | {_num(e.throughput_p50, '.0f')} |")
    return out


def render_round_markdown(
    round_info: RoundInfo,
    results: Sequence[ContractResult],
    decisions: Sequence[Decision],
    ignore_list: IgnoreList | None,
    changes_since_last_round: Sequence[str],
    cost: RoundCost | None = None,
    endpoints: Sequence[Endpoint] = (),
) -> str:
    """The round's artifact; `changes_since_last_round` are lines, e.g. from `describe_changes()`;
    `cost` (tasks.core.cost.round_cost) adds the "Cost of this round" line; `endpoints` (as discovered) add
    OpenRouter's own figures beside the verdicts."""
    r = round_info
    by_tag: dict[str, dict[str, ContractResult]] = {}
    for res in results:
        by_tag.setdefault(res.tag, {})[str(res.contract)] = res
    out = [
        f"# Canary round {name(r.round_id, 'markdown')}",
        "",
        f"- model: {name(r.model, 'markdown')}",
        f"- round_ts: {fmt_ts(r.round_ts)}",
        f"- mode: {r.mode}",
        f"- endpoints: {len(by_tag)}",
    ]
    if cost is not None:
        out.append(f"- Cost of this round: {describe_totals(cost.total)}")
    table, notes = _results_table(by_tag)
    out += table
    out += ["", "## Evidence", ""]
    out += [f"{n}. {name(f.tag, 'markdown')} {f.contract} {f.outcome} {name(f.reason, 'markdown', 60)}"
            + (f": {cell(f.evidence, 200)}" if f.evidence else "")
            for n, f in enumerate(notes, start=1)] or ["None."]
    out += ["", "## Decisions", ""]
    out += [f"- {d.action} {name(d.tag, 'markdown')}" + (f" until {fmt_ts(d.until)}" if d.until else "")
            + (f": {cell(d.reason)}" if d.reason else "") for d in decisions] or ["None."]
    out += ["", "## Changes since last round", ""]
    out += [f"- {line}" for line in changes_since_last_round] or ["None."]
    out += render_listing_signals(endpoints)
    out += _ignore_list_section(ignore_list)
    return "\n".join(out) + "\n"


def _results_table(by_tag: dict[str, dict[str, ContractResult]]) -> tuple[list[str], list[ContractResult]]:
    """The endpoints × contracts table (and its legend when a cell has a note), and every result that is not a
    pass, numbered in table order (the notes)."""
    contracts = in_order(c for row in by_tag.values() for c in row)
    out = [
        "",
        "## Endpoints × contracts",
        "",
        "| endpoint | status | " + " | ".join(contracts) + " |",
        "| --- | --- | " + " | ".join("---" for _ in contracts) + " |",
    ]
    notes: list[ContractResult] = []
    for tag in sorted(by_tag):
        row = by_tag[tag]
        cells = []
        for c in contracts:
            found, note = row.get(c), None
            if found is not None and found.outcome is not Outcome.PASS:
                notes.append(found)
                note = len(notes)
            cells.append(_outcome_cell(found, note))
        out.append(f"| {name(tag, 'cell')} | {round_status(list(row.values()))} | " + " | ".join(cells) + " |")
    if notes:
        out += ["", LEGEND]
    return out, notes


def _ignore_list_section(ignore_list: IgnoreList | None) -> list[str]:
    out = ["", "## Ignore list", ""]
    if ignore_list is None or not ignore_list.entries:
        return [*out, "Empty."]
    return out + [f"- {name(e.tag, 'markdown')} ({e.layer}" + (f" until {fmt_ts(e.until)}" if e.until else "")
                  + f"): {cell(e.reason, 300)}" for e in ignore_list.entries]  # the evidence is in the reason


#: Characters of the ignore list's JSON shown in the artifact (the JSON file holds all of it).
IGNORE_JSON_CAP = 2000


def render_ignore_markdown(ignore: IgnoreList) -> str:
    ignored = json.dumps(list(ignore.ignore), ensure_ascii=False)
    lines = [
        f"# Ignore list for {name(ignore.model, 'markdown')}",
        "",
        f"`provider.ignore` = {name(ignored, 'markdown', IGNORE_JSON_CAP)}",
        "",
    ]
    if ignore.entries:
        lines += ["| tag | layer | reason | until |", "| --- | --- | --- | --- |"]
        for e in ignore.entries:
            until = e.until.strftime("%Y-%m-%d %H:%M UTC") if e.until else "-"
            lines.append(f"| {name(e.tag, 'cell')} | {e.layer} | {cell(e.reason)} | {until} |")
    else:
        lines.append("Nothing is excluded.")
    return "\n".join(lines) + "\n"


def render_failed_round_markdown(round_info: RoundInfo, step: str, error: str) -> str:
    """The artifact of a round that failed in its own process: which step, the error, and that nothing was
    decided (the ignore list in force is unchanged)."""
    r = round_info
    kind = "confirmation round" if r.partial else "round"
    return "\n".join([
        f"# Canary {kind} {name(r.round_id, 'markdown')}: failed",
        "",
        f"- model: {name(r.model, 'markdown')}",
        f"- round_ts: {fmt_ts(r.round_ts)}",
        f"- mode: {r.mode}",
        f"- status: failed during step {name(step, 'markdown')}",
        f"- error: {name(error, 'markdown', 500)}",
        "",
        "Nothing of this round was judged or decided: every endpoint's state and the published ignore list stay as"
        " the last complete round left them (`canary ignore-list`). The next round tries again.",
    ])
