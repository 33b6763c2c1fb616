"""The router's status endpoints: `GET /healthz` (cooldowns, circuits, sink backlogs, the judge, the canary's
lists), `GET /livez` (the process answers) and `GET /readyz` (ready for traffic:
provider_canary/router/readiness.py)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

from provider_canary.router.readiness import SinkState, not_ready
from provider_canary.router.shell import RouterShell
from provider_canary.router.tokens import TOKENIZER


async def health(shell: RouterShell, request: Request) -> JSONResponse:
    now = shell.clock.monotonic()
    cooling = sum(1 for until in shell.cooldowns.values() if until > now)
    pending, dropped = sum(b.pending() for b in shell.events), sum(b.dropped for b in shell.events)
    lists = shell.ignore.statuses(shell.routes)
    circuits = shell.circuits.health(shell.routes)
    body = {
        "ok": True,
        "tokenizer": TOKENIZER,
        "cooling": cooling,
        "pending_events": pending,
        "dropped_events": dropped,
        "pending_live_counts": sum(b.pending() for b in shell.live.batchers),
        "pending_on_disk": shell.pending_on_disk(),
        "restored_from_disk": sum(b.spill.restored for b in shell.batchers if b.spill is not None),
        "judge": {"enabled": shell.routes.settings.judge, **shell.judging.health()},
        "open_circuits": sum(1 for c in circuits if c["state"] != "closed"),
        "circuits": circuits,
        "lists_missing": sum(1 for s in lists if not s.exists),
        "lists_stale": sum(1 for s in lists if s.stale),
        "lists": [s.as_json() for s in lists],
        **({"lists_url": shell.lists_poll.health()} if shell.lists_poll else {}),
    }
    return JSONResponse(body)


async def livez(shell: RouterShell, request: Request) -> JSONResponse:
    return JSONResponse({"live": True})


async def readyz(shell: RouterShell, request: Request) -> JSONResponse:
    sinks = [SinkState(b.name, b.pending(), b.max_buffered, b.dropped) for b in shell.batchers]
    reasons = not_ready(shell.ignore.statuses(shell.routes), sinks, shell.client is not None)
    return JSONResponse({"ready": not reasons, "reasons": reasons}, status_code=503 if reasons else 200)
