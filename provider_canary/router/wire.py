"""What the router answers besides a chat completion, as OpenAI's clients expect it (the Starlette shell's parts).

    GET  /v1/models            the routes keyed by model name (`{"object": "list", "data": [...]}`)
    GET  /v1/models/{id}       one of them (`client.models.retrieve`), or 404 `model_not_found`
    any unknown path           404, any known path with another method 405: JSON in OpenAI's error shape
                               (provider_canary/router/records.py `error_body`), never Starlette's `text/plain`
    OPTIONS (preflight)        answered when `[router] cors_origins` is set, and every response then carries
                               `Access-Control-Allow-Origin` (Starlette's CORSMiddleware); 405 otherwise
"""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from provider_canary.router import records
from provider_canary.router.routes import Routes

#: Response headers a browser client may read (CORS): the router's own, and Retry-After.
EXPOSED_HEADERS = ("x-canary-route", "x-canary-tier", "x-canary-tokens-saved", "x-canary-tokens-sent",
                   "x-canary-tokenizer", "x-canary-savers-failed", "x-canary-check-failed", "retry-after",
                   "x-generation-id")
#: Seconds a browser may cache a preflight answer.
PREFLIGHT_MAX_AGE_S = 600


def error_response(status: int, message: str, headers: dict[str, str] | None = None, code: str | None = None,
                   **metadata: Any) -> JSONResponse:
    return JSONResponse(records.error_body(status, message, code=code, **metadata), status_code=status,
                        headers=headers)


def model_card(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "canary-router"}


def models_list(routes: Routes) -> JSONResponse:
    return JSONResponse({"object": "list", "data": [model_card(m) for m in routes.model_names]})


def model_retrieve(routes: Routes, name: str) -> JSONResponse:
    if name in routes.model_names:
        return JSONResponse(model_card(name))
    return error_response(404, f"The model '{name}' does not exist: no route of this router is keyed by it",
                          code="model_not_found", param="model")


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's 404 (no such path) and 405 (a known path, another method), in OpenAI's shape."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else None
    what = "Invalid URL" if status == 404 else "Method not allowed" if status == 405 else "Error"
    return error_response(status, f"{what} ({request.method} {request.url.path})", headers=headers)


#: Exception handlers for `Starlette(exception_handlers=...)`.
EXCEPTION_HANDLERS = {404: http_error, 405: http_error}


def cors_middleware(origins: tuple[str, ...]) -> list[Middleware]:
    """CORS when `cors_origins` is set (none otherwise): preflight for any path, the client's own headers allowed
    (an SDK sends Authorization and its x-stainless-* headers), no credentials (keys travel as headers)."""
    if not origins:
        return []
    return [Middleware(CORSMiddleware, allow_origins=list(origins), allow_methods=["GET", "POST", "OPTIONS"],
                       allow_headers=["*"], expose_headers=list(EXPOSED_HEADERS), max_age=PREFLIGHT_MAX_AGE_S)]
