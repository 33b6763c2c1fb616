"""Protocol violations: HTTP 200, then a body the client cannot use (provider_canary/simulator/FLEET.md "Fault kinds").

* `html_body`: an HTML page, sent with the fault's `content_type` (text/html by default), stream or not.
* `invalid_utf8`: the normal reply, except that the chunk after `tokens` text chunks holds bytes that are
  not UTF-8 (non-streaming: the JSON body's content holds them).
* `huge_line`: the first data line (non-streaming: the one-line JSON body) carries `size_bytes` of content.
  It is generated piece by piece, never held in memory, and generation stops when the client hangs up.
* `masked_upstream_failure`: not a broken body but an empty one: after `tokens` text chunks, finish_reason
  `stop` with native_finish_reason `native` (`network_error`) and no usage, as OpenRouter reports a failed
  upstream hop (tests/fixtures/openrouter/masked-network-error.*); non-streaming, the JSON body of that shape.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from starlette.responses import Response, StreamingResponse

from provider_canary.simulator import wire
from provider_canary.simulator.plan import Plan

PIECE_BYTES = 64 * 1024

Gone = Callable[[], Awaitable[bool]]


def protocol_response(
    kind: str,
    params: Mapping[str, Any],
    plan: Plan,
    head: dict[str, Any],
    fingerprint: str | None,
    usage: dict[str, Any],
    *,
    stream: bool,
    headers: dict[str, str],
    gone: Gone,
) -> Response:
    """The 200 response that plays protocol fault `kind` (one of provider_canary.simulator.faults.PROTOCOL_KINDS)."""
    if kind == "masked_upstream_failure":
        return _masked_failure(params, plan, head, fingerprint, stream=stream, headers=headers)
    if kind == "html_body":
        page = wire.html_page(plan.provider)
        return Response(page, 200, headers={**headers, "content-type": str(params["content_type"])})
    json_headers = {**headers, "content-type": "application/json"}
    sse_headers = {**headers, "content-type": "text/event-stream"}
    if kind == "invalid_utf8":
        tokens = int(params["tokens"])
        if stream:
            return StreamingResponse(
                _invalid_stream(plan, head, fingerprint, usage, tokens), headers=sse_headers
            )
        content = "".join(plan.pieces[:tokens]) + wire.MARKER + "".join(plan.pieces[tokens:])
        body = wire.dumps(wire.chat_result(head, fingerprint, content, "stop", "stop", usage))
        before, after = wire.around_marker(body.encode("utf-8"))
        return Response(before + wire.INVALID_UTF8 + after, 200, headers=json_headers)
    size = int(params["size_bytes"])
    if stream:
        line = wire.sse(wire.chunk(head, fingerprint, wire.MARKER))
        ending = [
            wire.sse(wire.chunk(head, fingerprint, "", "length", "length")),
            wire.sse(wire.chunk(head, fingerprint, "", "length", "length", usage)),
            wire.DONE,
        ]
        body_iter = _huge(line, size, gone, prefix=[wire.KEEPALIVE], suffix=ending)
        return StreamingResponse(body_iter, headers=sse_headers)
    obj = wire.chat_result(head, fingerprint, wire.MARKER, "length", "length", usage)
    return StreamingResponse(_huge(wire.dumps(obj).encode("utf-8"), size, gone), headers=json_headers)


def _masked_failure(
    params: Mapping[str, Any],
    plan: Plan,
    head: dict[str, Any],
    fp: str | None,
    *,
    stream: bool,
    headers: dict[str, str],
) -> Response:
    tokens, native = int(params["tokens"]), str(params["native"])
    pieces = list(plan.pieces[:tokens])
    if stream:
        frames = [wire.KEEPALIVE, *(wire.sse(wire.chunk(head, fp, p)) for p in pieces)]
        frames += [wire.sse(wire.chunk(head, fp, "", "stop", native)), wire.DONE]
        return Response(b"".join(frames), 200, headers={**headers, "content-type": "text/event-stream"})
    body = wire.chat_result(head, fp, "".join(pieces), "stop", native, {})
    body.pop("usage")
    body["choices"][0]["message"]["content"] = "".join(pieces) or None
    return Response(wire.dumps(body), 200, headers={**headers, "content-type": "application/json"})


async def _invalid_stream(
    plan: Plan, head: dict[str, Any], fp: str | None, usage: dict[str, Any], tokens: int
) -> AsyncIterator[bytes]:
    yield wire.KEEPALIVE
    for i, piece in enumerate(plan.pieces):
        if i == tokens:
            before, after = wire.around_marker(wire.sse(wire.chunk(head, fp, wire.MARKER + piece)))
            yield before + wire.INVALID_UTF8 + after
        else:
            yield wire.sse(wire.chunk(head, fp, piece))
    yield wire.sse(wire.chunk(head, fp, "", plan.finish_reason, plan.native_finish_reason))
    yield wire.sse(wire.chunk(head, fp, "", plan.finish_reason, plan.native_finish_reason, usage))
    yield wire.DONE


async def _huge(
    encoded: bytes,
    size: int,
    gone: Gone,
    *,
    prefix: list[bytes] | None = None,
    suffix: list[bytes] | None = None,
) -> AsyncIterator[bytes]:
    """`encoded` with its marker replaced by `size` bytes of text, yielded in pieces of PIECE_BYTES."""
    before, after = wire.around_marker(encoded)
    for part in prefix or []:
        yield part
    yield before
    piece = (b"All work and no play makes Jack a dull boy. " * (PIECE_BYTES // 44 + 1))[:PIECE_BYTES]
    left = size
    while left > 0:
        if await gone():
            return
        yield piece[: min(left, PIECE_BYTES)]
        left -= PIECE_BYTES
    yield after
    for part in suffix or []:
        yield part
