"""Round-level Slack alerts (pure): weak refusal probe, pins that did not hold, dead-man; and the one call
the round flow makes, `alerts_for_round`, which also turns the round's failed results into evidence lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from tasks.core.deadman import Overdue, overdue_models
from tasks.core.render.decision_groups import RoundMessages, round_messages
from tasks.core.render.slack import EvidenceLine, build_alert, digest
from tasks.core.render.text import code, command_span, exclude_cmd, fmt_ts, mrkdwn, name
from tasks.core.types import Alert, Attempt, ContractResult, Decision, IgnoreList, Outcome


def render_probe_weak_alert(
    model: str, round_id: str, round_ts: datetime, ignore_list: IgnoreList | None = None,
    passed_controls: Sequence[str] = (),
) -> Alert:
    """A positive control passed the refusal probe: the probe proves nothing this round."""
    controls = ", ".join(name(t, "slack") for t in sorted(passed_controls))
    which = f"the positive controls {controls}" if controls else "a positive control"
    return build_alert(
        key=f"probe_weak|{model}|{round_id}", kind="probe_weak", model=model, tag=None,
        created_at=round_ts, title=f"Refusal probe is weak: {name(model, 'log')}",
        digest_line=digest(model, ignore_list),
        sections=[
            f"In round {name(round_id, 'slack')} of {name(model, 'slack')}, {which} passed the refusal probe although "
            "known to filter. Refusal outcomes of every endpoint in this round are `inconclusive` "
            "(`probe_weak`).",
            "*What to do:* check whether the controls still filter and whether the probe still triggers "
            "them; fix the prompt or the patterns, or update `refusal_controls` in canary.toml.",
        ],
    )


def render_pin_mismatch_alerts(
    model: str, round_id: str, round_ts: datetime, mismatches: Sequence[str | Attempt],
    ignore_list: IgnoreList | None = None,
) -> list[Alert]:
    """One alert per tag whose pin did not hold; `mismatches` are tags, or attempts (they show who served)."""
    by_tag: dict[str, list[Attempt]] = {}
    for m in mismatches:
        if isinstance(m, str):
            by_tag.setdefault(m, [])
        elif m.is_pin_mismatch:
            by_tag.setdefault(m.tag, []).append(m)
    alerts = []
    for tag in sorted(by_tag):
        bad = by_tag[tag]
        detail = ""
        if bad:
            served = ", ".join(name(s, "slack") for s in sorted({a.served_provider or "" for a in bad}))
            contracts = mrkdwn(", ".join(sorted({str(a.contract) for a in bad})))
            detail = (f" (expected {name(bad[0].provider_name, 'slack')}, served by {served}; "
                      f"{len(bad)} attempts: {contracts})")
        alerts.append(build_alert(
            key=f"pin_mismatch|{model}|{tag}|{round_id}", kind="pin_mismatch", model=model, tag=tag,
            created_at=round_ts,
            title=f"Pin did not hold: {name(tag, 'log', 60)} on {name(model, 'log', 60)}",
            digest_line=digest(model, ignore_list),
            sections=[
                f"In round {name(round_id, 'slack')}, requests pinned to {name(tag, 'slack')} on "
                f"{name(model, 'slack')} were served by another provider{detail}. Those results are "
                "`inconclusive`.",
                f"*What to do:* if it persists, this tag cannot be verified: {exclude_cmd(tag, model)}",
            ],
        ))
    return alerts


def render_deadman_alerts(
    overdue: Sequence[Overdue], interval: timedelta, now: datetime,
    ignore_lists: Mapping[str, IgnoreList] | None = None,
) -> list[Alert]:
    """No round completed for a model within two intervals: the canary itself is down."""
    minutes = int(interval.total_seconds() // 60)
    return [
        build_alert(
            key=o.key, kind="deadman", model=o.model, tag=None, created_at=now,
            title=f"No canary round completed: {name(o.model, 'log')}",
            digest_line=digest(o.model, (ignore_lists or {}).get(o.model)),
            sections=[
                f"The last complete round of {name(o.model, 'slack')} was at {fmt_ts(o.last_complete_ts)}; rounds "
                f"run every {minutes} min. Nothing is probed, so suspensions neither start nor end early.",
                "*What to do:* check the Prefect deployment and its worker (`prefect flow-run ls`), then "
                f"run one round by hand: {command_span('canary', 'run', '--model', o.model)}",
            ],
        )
        for o in overdue
    ]


def evidence_from_round(
    results: Sequence[ContractResult], attempts: Sequence[Attempt] = ()
) -> dict[str, list[EvidenceLine]]:
    """The round's failed contracts per tag, each with the start of its first bad reply (given attempts)."""
    text_by_id = {a.attempt_id: a.text for a in attempts}
    out: dict[str, list[EvidenceLine]] = {}
    for r in sorted(results, key=lambda r: (r.tag, str(r.contract))):
        if r.outcome is not Outcome.FAIL:
            continue
        excerpt = next((text_by_id[i] for i in r.attempt_ids if i in text_by_id), "")
        out.setdefault(r.tag, []).append(
            EvidenceLine(contract=str(r.contract), reason=r.reason, evidence=r.evidence, excerpt=excerpt,
                         round_id=r.round_id)
        )
    return out


def alerts_for_round(
    model: str, round_id: str, round_ts: datetime, decisions: Sequence[Decision], probe_weak: bool,
    pin_mismatches: Sequence[str | Attempt], ignore_list: IgnoreList | None,
    *, results: Sequence[ContractResult] = (), attempts: Sequence[Attempt] = (),
    passed_controls: Sequence[str] = (), threads: Mapping[str, str] | None = None,
) -> RoundMessages:
    """Every alert of one round: its decisions in one message (with evidence), each earlier suspension's events in
    that suspension's thread (`threads`: tag -> its message's key; tasks/core/render/decision_groups.py), then
    probe_weak and one alert per pin mismatch. `.threads`: the thread of each decision."""
    evidence = evidence_from_round(results, attempts)
    out = round_messages(model, round_id, decisions, threads or {}, ignore_list, evidence)
    alerts = list(out.alerts)
    if probe_weak:
        alerts.append(render_probe_weak_alert(model, round_id, round_ts, ignore_list, passed_controls))
    alerts += render_pin_mismatch_alerts(model, round_id, round_ts, pin_mismatches, ignore_list)
    return RoundMessages(tuple(alerts), out.threads)


def render_empty_catalog_alert(model: str, round_id: str, now: datetime, base_url: str,
                               ignore_list: IgnoreList | None) -> Alert:
    """Discovery returned no endpoint for a model that had some: nothing is probed, nothing can be judged."""
    return build_alert(
        key=f"empty_catalog|{model}|{round_id}", kind="empty_catalog", model=model, tag=None, created_at=now,
        title=f"No endpoints listed for {name(model, 'log')}",
        digest_line=digest(model, ignore_list),
        sections=[
            f"Round {name(round_id, 'slack')}: the endpoints API at {code(base_url)} listed no endpoint of "
            f"{name(model, 'slack')}, which had endpoints in its previous round. Nothing is probed: suspensions "
            "neither start nor end early.",
            "*What to do:* check the model id in canary.toml and the API key's access; "
            f"{command_span('canary', 'run', '--model', model)} shows discovery's answer.",
        ],
    )


def silence_alerts(
    last_complete: Mapping[str, datetime | None],
    now: datetime,
    interval: timedelta,
    *,
    watching_since: Mapping[str, datetime] | None = None,
    ignore_lists: Mapping[str, IgnoreList] | None = None,
) -> list[Alert]:
    """One dead-man alert per model silent for more than two intervals at `now` (per-model watch
    start for models that never completed a round)."""
    overdue = [
        o
        for model, last in sorted(last_complete.items())
        for o in overdue_models(
            {model: last}, now, interval, watching_since=(watching_since or {}).get(model)
        )
    ]
    return render_deadman_alerts(overdue, interval, now, ignore_lists)
