"""A client's request body, read into what the walk over tiers needs (pure; the shell runs it off the event loop
when the body is large).

`prepare(raw, routes, authorization)` parses the JSON body, finds the route, and runs the savers. It never
raises for anything a client can send: a body that is not JSON, nested too deep for the parser, or not an
object is a `Refusal` (400, one line), a model without a route a `Refusal` (404). What the client asked the
answer to be (its `tools`, its `response_format`) rides along for the judging (provider_canary/router/answer.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from provider_canary.router.routes import Route, Routes
from provider_canary.router.savings import MAX_TEXT_CHARS, PipelineResult, SaverContext, run_savers

#: Bodies at least this large are parsed, and their savers run, in a worker thread (the event loop keeps
#: serving other clients meanwhile); smaller ones cost less than the thread hop.
OFF_LOOP_BYTES = 64 * 1024


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str
    reason: str  # the `reason` label of canary_router_requests_refused_total


@dataclass(frozen=True)
class Prepared:
    body: dict[str, Any]
    route: Route
    model: str | None  # the model name the client asked for
    pipeline: PipelineResult
    stream: bool
    tools: Any  # the client's `tools`, as sent (the judging reads them)
    response_format: Any


def parse_body(raw: bytes) -> dict[str, Any] | Refusal:
    try:
        body = json.loads(raw)
    except RecursionError:
        return Refusal(400, "the request body is nested too deep to read", "too_deep")
    except (ValueError, UnicodeDecodeError):
        return Refusal(400, "the request body is not JSON", "not_json")
    if not isinstance(body, dict):
        return Refusal(400, "the request body must be a JSON object", "not_object")
    return body


def prepare(raw: bytes, routes: Routes, api_key: str | None) -> Prepared | Refusal:
    body = parse_body(raw)
    if isinstance(body, Refusal):
        return body
    model = body.get("model") if isinstance(body.get("model"), str) else None
    route = routes.find(model, api_key)
    if route is None:
        return Refusal(404, f"no route for model {model!r}", "no_route")
    settings = routes.settings
    ctx = SaverContext(settings.token_budget, max_text_chars=MAX_TEXT_CHARS)
    pipeline = run_savers(body.get("messages"), settings.savers, ctx)
    return Prepared(body, route, model, pipeline, body.get("stream") is True, body.get("tools"),
                    body.get("response_format"))
