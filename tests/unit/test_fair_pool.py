"""The fair pool's assignment pass (tasks/probe/fair_pool.py), driven directly: which queued request gets which
connection, and which connections close. httpcore's own pass, run on the same state, shows what each case fixes
(encode/httpcore#822: every queued request of a pass gets the same idle connection; #1110: a connection given to a
request is closed before it starts; surplus counted over all connections, not the idle ones)."""

from __future__ import annotations

import asyncio

import httpcore
import pytest
from httpcore._async.connection_pool import AsyncPoolRequest

from tasks.probe.fair_pool import FairPool

ORIGIN = "http://127.0.0.1:9"


class Conn:
    """A pooled HTTP/1.1 connection's state as the pass reads it: idle (kept alive) or busy, maybe expired."""

    def __init__(self, state: str = "idle", origin: str = ORIGIN, expired: bool = False) -> None:
        self.state, self.origin, self.expired = state, httpcore.URL(origin).origin, expired

    def can_handle_request(self, origin: httpcore.Origin) -> bool:
        return origin == self.origin

    def is_available(self) -> bool:
        return self.state == "idle"

    def is_idle(self) -> bool:
        return self.state == "idle"

    def is_closed(self) -> bool:
        return self.state == "closed"

    def has_expired(self) -> bool:
        return self.expired


def pool(cls: type[httpcore.AsyncConnectionPool], conns: list[Conn], queued: int, *, keepalive: int = 10,
         max_connections: int = 10, given: dict[int, int] | None = None, origin: str = ORIGIN, http2: bool = False
         ) -> tuple[httpcore.AsyncConnectionPool, list[AsyncPoolRequest], list[object]]:
    """A pool holding `conns`, with `given` (request index -> connection index) requests assigned but not started
    and `queued` more waiting; runs one pass: (pool, the waiting requests, the connections it closed)."""
    p = cls(max_connections=max_connections, max_keepalive_connections=keepalive, http2=http2)
    p._connections = list(conns)  # type: ignore[arg-type]

    async def one_pass() -> tuple[list[AsyncPoolRequest], list[object]]:  # a request's wake-up event is anyio's
        for conn_no in (given or {}).values():
            started = AsyncPoolRequest(httpcore.Request("POST", ORIGIN + "/v1"))
            started.assign_to_connection(conns[conn_no])  # type: ignore[arg-type]
            p._requests.append(started)
        waiting = [AsyncPoolRequest(httpcore.Request("POST", origin + "/v1")) for _ in range(queued)]
        p._requests.extend(waiting)
        return waiting, list(p._assign_requests_to_connections())

    waiting, closing = asyncio.run(one_pass())
    return p, waiting, closing


def test_idle_connections_each_go_to_one_request_and_the_rest_get_new_ones() -> None:
    idle = [Conn(), Conn()]
    p, waiting, closing = pool(FairPool, idle, 5)
    got = [r.connection for r in waiting]
    assert got[0] is idle[0] and got[1] is idle[1]
    assert all(c is not None and c not in idle for c in got[2:]) and len({id(c) for c in got}) == 5
    assert closing == [] and len(p._connections) == 5
    # httpcore's pass gives the first idle connection to all five: four of them fail and queue again
    _, stock_waiting, _ = pool(httpcore.AsyncConnectionPool, [Conn(), Conn()], 5)
    assert len({id(r.connection) for r in stock_waiting}) == 1


def test_a_connection_given_to_a_request_not_started_is_neither_given_again_nor_closed() -> None:
    idle = [Conn(), Conn()]
    p, waiting, closing = pool(FairPool, idle, 1, keepalive=0, given={0: 0})
    assert waiting[0].connection is not idle[0] and waiting[0].connection is not None
    assert closing == [idle[1]] and idle[0] in p._connections  # the spare one is surplus at keepalive 0
    _, _, stock_closing = pool(httpcore.AsyncConnectionPool, [Conn(), Conn()], 0, keepalive=0, given={0: 0})
    assert len(stock_closing) == 2  # httpcore closes the one it gave away too (#1110)


def test_surplus_is_counted_over_the_idle_connections() -> None:
    conns = [Conn("busy"), Conn("busy"), Conn("busy"), Conn(), Conn()]
    p, _, closing = pool(FairPool, conns, 0, keepalive=2)
    assert closing == [] and len(p._connections) == 5
    _, _, closing = pool(FairPool, [Conn("busy"), Conn(), Conn(), Conn()], 0, keepalive=2)
    assert len(closing) == 1
    _, _, stock_closing = pool(httpcore.AsyncConnectionPool, list(conns), 0, keepalive=2)
    assert len(stock_closing) == 2  # httpcore counted five connections against two


def test_closed_and_expired_connections_leave_the_pool() -> None:
    closed, expired, kept = Conn("closed"), Conn(expired=True), Conn()
    p, waiting, closing = pool(FairPool, [closed, expired, kept], 1)
    assert closing == [expired] and p._connections == [kept] and waiting[0].connection is kept


@pytest.mark.parametrize("given", [{}, {0: 0}, {0: 0, 1: 1}])
def test_a_full_pool_makes_room_by_closing_a_spare_idle_connection(given: dict[int, int]) -> None:
    idle = [Conn(origin="http://127.0.0.1:8"), Conn(origin="http://127.0.0.1:8")]
    p, waiting, closing = pool(FairPool, idle, 1, max_connections=2, given=given)
    spare = [c for n, c in enumerate(idle) if n not in given.values()]
    if spare:
        assert closing == [spare[0]] and waiting[0].connection not in idle and waiting[0].connection is not None
    else:
        assert closing == [] and waiting[0].is_queued()  # both spoken for: it waits for one to free
    assert len(p._connections) == 2


def test_a_connection_for_another_origin_is_not_given() -> None:
    other = Conn(origin="http://127.0.0.1:8")
    p, waiting, _ = pool(FairPool, [other], 1)
    assert waiting[0].connection is not other and len(p._connections) == 2


def test_http2_pools_keep_httpcores_pass() -> None:
    conn = Conn()
    _, waiting, _ = pool(FairPool, [conn], 3, http2=True)
    assert all(r.connection is conn for r in waiting)  # one multiplexed connection takes them all
