"""The round's probing: every contract of every endpoint, as plain calls on the probe worker.

    attempts, lines = probe_round(plans, round_id, cfg, footprint)   # a round: every endpoint at once
    attempts = probe_endpoint(plan, round_id, cfg, footprint)        # one endpoint (the pipelined history)

Part of the round's shell (tasks/round/steps.py has the other steps). No Prefect task run and no thread per probe: each
contract is a chain of attempts (its turns in order, then the confirmations of a first language failure) that the
answers' callbacks move on (a bug of ours in a chain ends it and fails the round once every chain ended), and the
requests run on the probe worker's event loop (tasks/probe/worker.py), which stamps the bytes where they arrive. The
worker bounds the requests in flight (`concurrency`) and starts them in priority order: a chain's later attempts (a tool
call's second turn, a language confirmation) before any first attempt, so a long chain does not wait behind the queue
between its turns (its round's wall, and the cycle's tail, would carry it); then the first contract of every endpoint
of every round in flight, so every round starts probing as soon as it is planned and a slow endpoint shows itself
early (the worker then starts its other calls at once: tasks/probe/call_queue.py); then the earliest round's others. A
probe never retries: a transport outcome is data that freezes the streak, not something to hide. A bug of ours in a
probe becomes that attempt's `bad_frame` with the error, never the other endpoints' loss. What a probe task run showed
in the UI (each endpoint's attempts and failures) is the round's log: one line per endpoint (`endpoint_line`).
"""

from __future__ import annotations

import collections
import functools
import itertools
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from tasks.config import CanaryConfig
from tasks.core.budget import FULL, Footprint
from tasks.core.plan import EndpointPlan, Probe
from tasks.core.render.text import name
from tasks.core.types import Attempt, Endpoint, ErrorClass
from tasks.runtime.clock import SystemClock
from tasks.runtime.failpoints import failpoint
from tasks.runtime.secrets import known_values, read_secret, redact_known_secrets

log = logging.getLogger("canary")

#: The order rounds start probing in this process: their requests' priority at the dispatcher.
_ROUNDS = itertools.count()


def warm_up() -> None:
    """Start the probe worker before the first round needs it. The language detector needs no warm-up: it is
    built on first use and loads a language's models when a reply first needs them (tasks/core/langdetect.py)."""
    from tasks.probe import worker as probe_worker

    probe_worker.start()


def probe_round(plans: Sequence[EndpointPlan], round_id: str, cfg: CanaryConfig, footprint: Footprint = FULL,
                *, priority: Any = None, sent: Callable[[], None] | None = None,
                on_endpoint: Callable[[Endpoint, list[Attempt]], None] | None = None,
                ) -> tuple[list[Attempt], list[str]]:
    """Every contract of every endpoint in `plans`, all at once: the attempts in plan order (endpoint by endpoint,
    its contracts in order) and one log line per endpoint. `priority`: the worker's order among first attempts
    (default: this round's turn in the process); `sent()` is called once every chain's first attempt is sent;
    `on_endpoint(endpoint, its attempts)` as soon as every probe of an endpoint ended (the round keeps them:
    tasks/spool/probes.py)."""
    probes = [p for plan in plans for p in plan.probes]
    ranks = [(k, j) for j, plan in enumerate(plans) for k in range(len(plan.probes))]
    chains = _run(probes, round_id, cfg, footprint, next(_ROUNDS) if priority is None else priority, sent, ranks,
                  _keeper(plans, on_endpoint) if on_endpoint is not None else None)
    attempts: list[Attempt] = []
    lines: list[str] = []
    i = 0
    for plan in plans:
        mine = [a for chain in chains[i: i + len(plan.probes)] for a in chain]
        i += len(plan.probes)
        attempts.extend(mine)
        lines.append(endpoint_line(plan, mine))
    return attempts, lines


def probe_endpoint(plan: EndpointPlan, round_id: str, cfg: CanaryConfig, footprint: Footprint = FULL, *,
                   priority: Any = None) -> list[Attempt]:
    """Every contract of one endpoint (its chains at once), in plan order."""
    return probe_round([plan], round_id, cfg, footprint, priority=priority)[0]


def endpoint_line(plan: EndpointPlan, attempts: Sequence[Attempt]) -> str:
    """`probe-<tag>: 6 attempts, first text 312 ms; structured http_status 429`: what the endpoint's probe
    task run used to show in the UI, as one line of the round's log."""
    ttfts = [a.ttft_ms for a in attempts if a.ttft_ms is not None]
    first = f"first text {min(ttfts):.0f}-{max(ttfts):.0f} ms" if ttfts else "no text"
    faults = [f"{a.contract} {a.error_class}{f' {a.error_code}' if a.error_code else ''}"
              for a in attempts if a.error_class is not None]
    tail = "; " + ", ".join(faults) if faults else ""
    return f"probe-{name(plan.endpoint.tag, 'log')}: {len(attempts)} attempts, {first}{tail}"


def _keeper(plans: Sequence[EndpointPlan], tell: Callable[[Endpoint, list[Attempt]], None]
            ) -> Callable[[int, list[list[Attempt]]], None]:
    """Called with an endpoint's index once its chains all ended (and every result so far): tells `tell` of it."""
    first = list(itertools.accumulate([0, *(len(plan.probes) for plan in plans)]))

    def done(k: int, results: list[list[Attempt]]) -> None:
        try:
            tell(plans[k].endpoint, [a for chain in results[first[k]: first[k + 1]] for a in chain])
        except Exception:  # keeping them is a safeguard: never the probing's failure
            log.exception("probes of %s not kept beside the journal", name(plans[k].endpoint.tag, "log"))
        failpoint("mid-probe")

    return done


def _run(probes: Sequence[Probe], round_id: str, cfg: CanaryConfig, footprint: Footprint, priority: Any,
         sent: Callable[[], None] | None = None, ranks: Sequence[Any] | None = None,
         ended: Callable[[int, list[list[Attempt]]], None] | None = None) -> list[list[Attempt]]:
    """Each probe's attempts, its chain moved on by the answers; returns when every chain is done (`ended` is
    told of each endpoint whose chains all ended, by its place in `ranks`, with every result so far)."""
    if not probes:
        if sent is not None:
            sent()
        return []
    key = read_secret("OPENROUTER_API_KEY", required=True)
    assert key is not None
    results: list[list[Attempt]] = [[] for _ in probes]
    left = [len(probes)]
    lock, done = threading.Lock(), threading.Event()
    order = ranks or [(0, i) for i in range(len(probes))]
    tail = _OpenChains([endpoint for _, endpoint in order])

    def finished(i: int, attempts: list[Attempt]) -> None:
        results[i] = attempts
        endpoint = order[i][1]
        if tail.chain_ended(endpoint) and ended is not None:
            ended(endpoint, results)
        with lock:
            left[0] -= 1
            if left[0] == 0:
                done.set()

    chains = [_Chain(probe, round_id, cfg, footprint, key, _first_of_endpoint_first(order[i], priority),
                     functools.partial(finished, i))
              for i, probe in enumerate(probes)]
    for chain in chains:
        chain.start()
    tail.all_sent()
    if sent is not None:
        sent()
    done.wait()
    broken = next((c.error for c in chains if c.error is not None), None)
    if broken is not None:  # a bug of ours outside an attempt: the round fails with it (after every chain ended)
        raise broken
    return results


class _OpenChains:
    """Each endpoint's chains still open. Once every chain was sent and the round waits only on its slowest few
    endpoints, it steps aside for the cycle's next round (tasks/orchestration/admission.py `at_tail`), once; outside
    a cycle's admission (a round of its own, the history) it only counts. `owners`: each chain's endpoint."""

    def __init__(self, owners: Sequence[Any]) -> None:
        from tasks.orchestration.admission import at_tail, current_step_aside

        self._step_aside, self._at_tail = current_step_aside(), at_tail
        self._left = collections.Counter(owners)
        self._endpoints = self._open = len(self._left)
        self._lock = threading.Lock()
        self._sent = False

    def chain_ended(self, endpoint: Any) -> bool:
        """One of `endpoint`'s chains ended: whether it was its last open one."""
        with self._lock:
            self._left[endpoint] -= 1
            closed = self._left[endpoint] == 0
            if closed:
                self._open -= 1
                self._check()
        return closed

    def all_sent(self) -> None:
        with self._lock:
            self._sent = True
            self._check()

    def _check(self) -> None:
        if self._step_aside is not None and self._sent and self._at_tail(self._open, self._endpoints):
            self._step_aside()  # its later calls do nothing


def _first_of_endpoint_first(rank: tuple[int, int], priority: Any) -> tuple[Any, ...]:
    """A chain's place among first attempts (module docstring): the first contract of every endpoint of every round
    in flight before any other chain, rounds in their turn (`priority`); then round by round, contract by contract.
    `rank`: (the contract's place in its endpoint's plan, the endpoint's place in the round)."""
    contract, endpoint = rank
    return (contract > 0, priority, contract, endpoint)


class _Chain:
    """One contract's attempts in order: its turns, then (language) the confirmations of a first failure.

    The request body is built here, from the contract's SPEC, and handed to the probe worker (which knows only
    the built-in contracts: a contract registered in this process is probed all the same). Whatever goes wrong
    in here ends the attempt (or the chain) with what it has: a round always gets its chains back."""

    def __init__(self, probe: Probe, round_id: str, cfg: CanaryConfig, footprint: Footprint, key: Any,
                 priority: Any, finished: Callable[[list[Attempt]], None]) -> None:
        from tasks.core.contracts import spec_of

        self.probe, self.round_id, self.cfg, self.footprint, self.key = probe, round_id, cfg, footprint, key
        self.priority, self.finished = priority, finished
        self.spec = spec_of(probe.contract)
        self.todo = list(self.spec.attempts)
        self.attempts: list[Attempt] = []
        self.confirm_checked = False
        self.error: Exception | None = None  # a bug of ours in the chain itself (not in an attempt)

    def start(self) -> None:
        self._next()

    def _next(self) -> None:
        try:
            if not self.todo and not self.confirm_checked:
                self.confirm_checked = True
                spec = self.spec
                if (spec.confirm_first is not None and self.attempts and spec.confirm_first(self.attempts[0])
                        and self.footprint.confirms(self.probe.endpoint.tag)):
                    self.todo = list(spec.confirm_attempts)
            if not self.todo:
                self.finished(self.attempts)
                return
            n = self.todo.pop(0)
            started = SystemClock().now()
            try:
                future = self._send(n)
            except Exception as exc:
                self._landed(self._internal_failure(n, started, exc))
                return
            future.add_done_callback(lambda f: self._answered(n, started, f))
        except Exception as exc:  # a bug in a chain must not hang its round: it ends, the round raises it
            self.error = exc
            self.finished(self.attempts)

    def _send(self, n: int) -> Any:
        from tasks.core.probe_request import build_request, prompt_language
        from tasks.probe.loop import ProbeCall
        from tasks.probe.worker import dispatcher

        probe, cfg, endpoint = self.probe, self.cfg, self.probe.endpoint
        body = build_request(probe.contract, endpoint.model, endpoint.tag, probe.language, cfg, attempt_no=n)
        call = ProbeCall(base_url=cfg.base_url, endpoint=endpoint, contract=probe.contract, round_id=self.round_id,
                         attempt_no=n, language=prompt_language(probe.contract, probe.language), cfg=cfg,
                         api_key=self.key.get(), secrets=known_values(), body=body)
        later = 0 if self.attempts else 1  # a chain's later attempts first (module docstring)
        return dispatcher().submit(call, (later, self.priority))

    def _answered(self, n: int, started: Any, future: Any) -> None:
        try:
            attempt = future.result()
        except Exception as exc:
            attempt = self._internal_failure(n, started, exc)
        self._landed(attempt)

    def _landed(self, attempt: Attempt) -> None:
        self.attempts.append(attempt)
        self._next()

    def _internal_failure(self, n: int, started: Any, exc: Exception) -> Attempt:
        """A bug of ours (or a dead worker) must not cost the other endpoints their results."""
        probe = self.probe
        # the key is a SecretStr: known to the redactor from the moment it exists
        detail = redact_known_secrets(f"probe failed internally: {type(exc).__name__}: {exc}")[:300]
        log.warning("probe-%s-%s: %s", name(probe.endpoint.tag, "log"), probe.contract, detail)
        return Attempt(round_id=self.round_id, model=probe.endpoint.model, tag=probe.endpoint.tag,
                       provider_name=probe.endpoint.provider_name, contract=probe.contract, attempt_no=n,
                       started_at=started, language=probe.language, error_class=ErrorClass.BAD_FRAME,
                       error_detail=detail)
