"""`canary at`: what the canary saw around the time a user reported a change (pure; the CLI fetches rows).

A user reports "model M got weird around T". The answer, for the rounds of M within `window` of T:

* which endpoints were probed, their round statuses, and the failing/transport outcomes with reasons,
  evidence and reply excerpts (the `suspects` are ordered by failing rounds, nearest to T first);
* what was excluded at T, layer by layer (builtin file, operational table, canary suspensions in enforce
  mode) and the merged ignore list that traffic used at T; shadow (observe) suspensions are listed apart;
* the decisions and exclusion changes made in the window, and the router's route events for M.

Inputs are DataFrames with the columns of the store's tables/views (docs/schema.md); see `build_report`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pandas as pd

from tasks.at.frames import cell_text, cell_ts, frame_records
from tasks.at.in_force import operational_at, suspensions_at
from tasks.at.records import EndpointReport, Finding, InForce, Report
from tasks.config.loading import parse_duration
from tasks.core.exclusions import merge_ignore_list
from tasks.core.types import BuiltinExclusion, EndpointState, Mode
from tasks.errors import ConfigError

#: Failing/transport outcomes shown per endpoint (the nearest to T first); the rest are counted.
MAX_FINDINGS_PER_ENDPOINT = 4
EXCERPT_CHARS = 160
MAX_WINDOW = timedelta(days=31)
#: What `canary at` shows of each suspicion (docs/design.md "Suspicion").
SUSPICION_COLUMNS = ("detected_at", "tag", "signal", "evidence", "status", "confirm_round_id", "round_status",
                     "note")
#: What `canary at` shows of each exclusion added or removed in the window.
EXCLUSION_CHANGE_COLUMNS = ("tag", "model", "reason", "who", "added_at", "until", "removed_at", "removed_by",
                            "removed_reason")


def parse_time(text: str) -> datetime:
    """An ISO 8601 time (`2026-11-02T03:00Z`, `2026-11-02 03:00`, with an offset or naive = UTC)."""
    value = text.strip()
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ConfigError(f"at: --time must be an ISO time like 2026-11-02T03:00Z (got {text!r})") from None
    return (ts if ts.tzinfo else ts.replace(tzinfo=UTC)).astimezone(UTC)


def parse_window(text: str) -> timedelta:
    """`2h`, `90m`, `1d`: how far either side of T to look (more than 0, at most 31 days)."""
    window = parse_duration(text.strip(), "--window") if isinstance(text, str) else parse_duration(text, "")
    if window <= timedelta(0) or window > MAX_WINDOW:
        raise ConfigError(f"at: --window must be more than 0 and at most 31d (got {text!r})")
    return window

def _findings(
    outcomes: pd.DataFrame, attempts: pd.DataFrame | None, tag: str, t: datetime
) -> tuple[list[Finding], int]:
    bad = outcomes[(outcomes["tag"] == tag) & outcomes["outcome"].isin(["fail", "transport"])]
    if bad.empty:
        return [], 0
    bad = bad.assign(_dist=(pd.to_datetime(bad["round_ts"], utc=True) - pd.Timestamp(t)).abs())
    bad = bad.sort_values(["_dist", "contract"], kind="stable")
    excerpts: dict[tuple[str, str], str] = {}
    if attempts is not None and not attempts.empty:
        mine = attempts[attempts["tag"] == tag].sort_values("attempt_no", kind="stable")
        for row in mine.itertuples(index=False):
            key = (str(row.round_id), str(row.contract))
            text = cell_text(getattr(row, "excerpt", "")) or cell_text(getattr(row, "error_detail", ""))
            if key not in excerpts and text:
                excerpts[key] = text[:EXCERPT_CHARS]
    out = [
        Finding(
            round_ts=cell_ts(r["round_ts"]) or t,
            contract=str(r["contract"]),
            outcome=str(r["outcome"]),
            reason=cell_text(r.get("reason")),
            evidence=cell_text(r.get("evidence")),
            language=cell_text(r.get("language")) or None,
            excerpt=excerpts.get((str(r["round_id"]), str(r["contract"])), ""),
        )
        for r in bad.head(MAX_FINDINGS_PER_ENDPOINT).to_dict("records")
    ]
    return out, max(0, len(bad) - MAX_FINDINGS_PER_ENDPOINT)


def _failing_since(frame: pd.DataFrame, t: datetime) -> dict[str, datetime]:
    """Per tag: where the failing run containing its last round at or before t started."""
    if frame.empty:
        return {}
    f = frame.assign(round_ts=pd.to_datetime(frame["round_ts"], utc=True))
    f = f[f["round_ts"] <= pd.Timestamp(t)].sort_values("round_ts", kind="stable")
    out: dict[str, datetime] = {}
    for tag, group in f.groupby("tag", sort=False):
        statuses, times = list(group["status"]), list(group["round_ts"])
        if not statuses or statuses[-1] == "clean" or "fail" not in statuses:
            continue
        start = None
        for status, ts in zip(reversed(statuses), reversed(times), strict=True):
            if status == "clean":
                break
            if status == "fail":
                start = ts
        if start is not None and any(s == "fail" for s in statuses[-3:]):
            out[str(tag)] = start.to_pydatetime()
    return out

def build_report(
    model: str,
    t: datetime,
    window: timedelta,
    *,
    endpoint_rounds: pd.DataFrame,
    outcomes: pd.DataFrame,
    attempts: pd.DataFrame | None = None,
    suspensions: pd.DataFrame | None = None,
    decisions: pd.DataFrame | None = None,
    exclusions: pd.DataFrame | None = None,
    builtin: Iterable[BuiltinExclusion] = (),
    route_events: pd.DataFrame | None = None,
    lookback: pd.DataFrame | None = None,
    suspicions: pd.DataFrame | None = None,
) -> Report:
    """The answer to "what happened to `model` around `t`".

    endpoint_rounds: v_endpoint_rounds rows of the window (round_id, round_ts, tag, provider_name, status);
    outcomes: outcomes + round_ts of the window; attempts: v_attempts rows (round_id, tag, contract,
    attempt_no, excerpt, error_detail) of those outcomes; suspensions: v_suspensions of the model;
    decisions: decisions of the window; exclusions: every exclusions row; route_events: of the window;
    lookback: v_endpoint_rounds (round_ts, tag, status) from before the window up to T, for `failing_since`;
    suspicions: `suspicions` rows of the window (live traffic / uptime triggers, with evidence and what the
    pinned probes then said).
    Suspects: endpoints with failing or transport rounds in the window: failing at T with 2+ failing rounds,
    the most recent onset first (the sudden change a user noticed), then single-round blips, then those not
    failing at T, transport-only ones last.
    """
    t = t.astimezone(UTC)
    since, until = t - window, t + window
    er = endpoint_rounds.copy()
    notes: list[str] = []
    if er.empty:
        notes.append(f"no round of {model} between {since:%Y-%m-%d %H:%M} and {until:%Y-%m-%d %H:%M} UTC")
    er["round_ts"] = pd.to_datetime(er["round_ts"], utc=True)
    rounds = er.drop_duplicates("round_id").sort_values("round_ts", kind="stable")
    nearest = _nearest_round(rounds, t)
    endpoints = _endpoint_reports(er, nearest, outcomes, attempts, t)
    onsets = _failing_since(lookback if lookback is not None else er, t)
    endpoints = [replace(e, failing_since=onsets.get(e.tag)) for e in endpoints]
    in_force, ignore = _in_force_at(model, t, until, sorted(set(er["tag"].astype(str))), builtin, exclusions,
                                    suspensions)
    return Report(
        model=model,
        time=t,
        since=since,
        until=until,
        round_ids=tuple(str(r) for r in rounds["round_id"]),
        nearest_round=nearest,
        endpoints=tuple(endpoints),
        suspects=_suspects(endpoints),
        in_force=in_force,
        ignore_at_t=ignore,
        decisions=frame_records(
            decisions, ("decided_at", "tag", "action", "mode", "ladder_step", "until", "reason", "actor")
        ),
        exclusion_changes=frame_records(_exclusion_changes(exclusions, since, until), EXCLUSION_CHANGE_COLUMNS),
        route_events=frame_records(route_events, ("event_at", "key", "tier", "upstream", "reason", "latency_ms")),
        suspicions=frame_records(suspicions, SUSPICION_COLUMNS),
        notes=tuple(notes),
    )


def _nearest_round(rounds: pd.DataFrame, t: datetime) -> str | None:
    """The id of the window's round nearest to t (None: no round)."""
    if rounds.empty:
        return None
    pos = int((rounds["round_ts"] - pd.Timestamp(t)).abs().to_numpy().argmin())
    return str(rounds["round_id"].iloc[pos])


def _endpoint_reports(er: pd.DataFrame, nearest: str | None, outcomes: pd.DataFrame, attempts: pd.DataFrame | None,
                      t: datetime) -> list[EndpointReport]:
    """Per endpoint of the window (by tag): its statuses, its status at T, its failing outcomes nearest T."""
    endpoints: list[EndpointReport] = []
    for tag, group in er.groupby("tag", sort=True):
        counts = {str(k): int(v) for k, v in group["status"].value_counts().items()}
        at_t = group[group["round_id"] == nearest]["status"]
        found, more = _findings(outcomes, attempts, str(tag), t) if not outcomes.empty else ([], 0)
        endpoints.append(
            EndpointReport(
                tag=str(tag),
                provider_name=cell_text(group["provider_name"].dropna().iloc[0])
                if group["provider_name"].notna().any()
                else "",
                rounds=int(group["round_id"].nunique()),
                statuses=counts,
                status_at_t=str(at_t.iloc[0]) if len(at_t) else None,
                findings=tuple(found),
                more_findings=more,
            )
        )
    return endpoints


def _suspects(endpoints: Iterable[EndpointReport]) -> tuple[str, ...]:
    """The tags with failing or transport rounds, in `build_report`'s suspect order."""
    far = datetime.min.replace(tzinfo=UTC)
    return tuple(
        e.tag
        for e in sorted(
            (e for e in endpoints if e.failing_rounds or e.statuses.get("transport")),
            key=lambda e: (
                e.failing_since is None,
                e.failing_rounds < 2,  # a single failing round is a blip (the policy needs fail_rounds)
                -(e.failing_since or far).timestamp() if e.failing_since else 0.0,
                -e.failing_rounds,
                -e.statuses.get("transport", 0),
                e.tag,
            ),
        )
    )


def _in_force_at(
    model: str, t: datetime, until: datetime, tags: list[str], builtin: Iterable[BuiltinExclusion],
    exclusions: pd.DataFrame | None, suspensions: pd.DataFrame | None,
) -> tuple[tuple[InForce, ...], tuple[str, ...]]:
    """What was excluded at T, layer by layer, and the merged ignore list traffic used then."""
    builtin_list = [b for b in builtin if b.model is None or b.model == model]
    operational = operational_at(exclusions, model, t)
    suspended = suspensions_at(suspensions, t)
    states = [
        EndpointState(
            model=model, tag=s.tag, mode=Mode.ENFORCE, suspended_until=s.until or until, suspended_at=s.since
        )
        for s in suspended
        if s.layer == "canary"
    ]
    merged = merge_ignore_list(model, tags, builtin_list, operational, states, t)
    in_force = (
        [InForce(b.tag, "builtin", b.reason, None, None) for b in builtin_list]
        + [
            InForce(o.tag, "operational", f"{o.reason} (by {o.who})", o.added_at, o.until)
            for o in operational
        ]
        + sorted(suspended, key=lambda s: (s.layer, s.tag))
    )
    return tuple(in_force), merged.ignore


def _exclusion_changes(exclusions: pd.DataFrame | None, since: datetime, until: datetime) -> pd.DataFrame | None:
    """The exclusions rows added or removed in the window."""
    if exclusions is None or exclusions.empty:
        return exclusions
    added = pd.to_datetime(exclusions["added_at"], utc=True)
    removed = pd.to_datetime(exclusions["removed_at"], utc=True)
    return exclusions[((added >= since) & (added <= until)) | ((removed >= since) & (removed <= until))]
