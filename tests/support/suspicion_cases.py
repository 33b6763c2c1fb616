"""The suspicion tests' common cases (tests/unit/test_suspicion.py, test_suspicion_quality.py): one model, its
endpoints, the rules, a live count, and `suspect` run at NOW."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

from tasks.core.live_records import LiveCount, LiveOutcome
from tasks.core.suspicion import SuspicionRules, suspect
from tasks.core.types import Action, Endpoint, EndpointState, IgnoreList, Mode

M = "acme/model"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
RULES = SuspicionRules(window_s=300, min_requests=20, failure_rate=0.5, uptime_drop=20, cooldown_s=900, peer_margin=0.3)
EPS = [Endpoint(M, "alpha", "Alpha"), Endpoint(M, "deepinfra/fp8", "DeepInfra"),
       Endpoint(M, "deepinfra/turbo", "DeepInfra")]
NO_IGNORE = IgnoreList(M, (), ())
SUSPEND = {Action.SUSPEND, Action.WOULD_SUSPEND}


def count(outcome: LiveOutcome, n: int, tag: str | None = "alpha", provider: str | None = None,
          ago_s: float = 60) -> LiveCount:
    return LiveCount((NOW - timedelta(seconds=ago_s)).replace(second=0), M, "model:chat", 1, tag, provider,
                     outcome, n)


def run(counts: list[LiveCount], endpoints: list[Endpoint] = EPS, **kw: object) -> list:  # type: ignore[type-arg]
    args = {"states": {}, "ignore": NO_IGNORE, "last_suspected": {}, "rules": RULES, "cleared": None} | kw
    return suspect(M, counts, endpoints, args["states"], args["ignore"], args["last_suspected"],  # type: ignore[arg-type]
                   args["rules"], NOW, args["cleared"])  # type: ignore[arg-type]


STATES = st.builds(
    lambda fail, clean, suspended: EndpointState(M, "alpha", Mode.ENFORCE, fail_streak=fail, clean_streak=clean,
                                                 suspended_until=NOW + timedelta(hours=1) if suspended else None),
    st.integers(0, 5), st.integers(0, 5), st.booleans())
