"""The round's probing tasks: warm up once per process, then probe every contract of one endpoint.

Part of the round's shell (tasks/round/steps.py has the other steps). A probe never retries: a transport outcome is
data that freezes the streak, not something to hide. One detector per process, and a process-wide bound on requests
in flight (`concurrency`); the requests themselves run in the probe worker process (tasks/probe_worker.py), so this
process's CPU work is never measured as latency.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.clock import SystemClock
from tasks.config import CanaryConfig
from tasks.core.budget import FULL, Footprint
from tasks.core.plan import EndpointPlan, Probe
from tasks.core.render.text import name
from tasks.core.types import Attempt, ErrorClass
from tasks.secrets import known_values, read_secret, redact

log = logging.getLogger("canary")

_SHARED_LOCK = threading.Lock()
_SLOTS: dict[int, threading.BoundedSemaphore] = {}
_BUILD_STARTED = threading.Event()


def _request_slots(concurrency: int) -> threading.BoundedSemaphore:
    """`concurrency` probe requests in flight at once in this process, whatever the thread pool holds."""
    with _SHARED_LOCK:
        return _SLOTS.setdefault(concurrency, threading.BoundedSemaphore(concurrency))


#: The detector is built once the first probes are out and no call was sent for QUIET_S, or after BUILD_WAIT_S.
QUIET_S = 0.3
BUILD_WAIT_S = 5.0


@task(name="warm-up", cache_policy=NO_CACHE)
def warm_up(build_now: bool = False) -> None:
    """Start the probe worker, and the language detector's build (1-2 s of CPU holding this process's GIL,
    more on a cold disk).

    One round (a single-model cycle, a round on its own): the build waits for the round's requests to be out,
    then runs while the round waits for answers, so it delays no request's start (the slowest chain would carry
    that to the round's wall) and the GIL it holds here is not measured in the probe worker; a judge that needs
    the detector sooner builds it then. `build_now` (a cycle of several models): built before any round starts,
    as the rounds that had not started yet would wait for the GIL and start seconds after the others. With the
    probes in this process (CANARY_PROBE_PROCESS=0) it is always built first, or the probes would measure it."""
    from tasks import probe_worker
    from tasks.core.langdetect import get_detector

    probe_worker.start()
    if build_now or probe_worker.in_process():
        get_detector()
    elif not _BUILD_STARTED.is_set():
        _BUILD_STARTED.set()  # a build that fails is tried again by the first judge that needs the detector
        threading.Thread(target=_build_when_quiet, name="build-detector", daemon=True).start()


def _build_when_quiet() -> None:
    from tasks import probe_worker
    from tasks.core.langdetect import get_detector

    deadline = time.monotonic() + BUILD_WAIT_S
    while time.monotonic() < deadline and not probe_worker.quiet_after_first_call(QUIET_S):
        time.sleep(0.05)
    get_detector()


def warm_up_once() -> None:
    """`warm_up` as a task run the first time in this process only: in a cycle the cycle has warmed up, and
    a task run per round that does nothing costs its round Prefect's machinery and API events for no news."""
    from tasks import probe_worker
    from tasks.core.langdetect import DEFAULT_MODE, is_built

    if not ((is_built(DEFAULT_MODE) or _BUILD_STARTED.is_set()) and probe_worker.is_running()):
        warm_up()


@task(name="probe", task_run_name="probe-{plan.endpoint.tag}", cache_policy=NO_CACHE)
def probe(plan: EndpointPlan, round_id: str, cfg: CanaryConfig, footprint: Footprint = FULL) -> list[Attempt]:
    """Every contract of one endpoint, pinned and concurrent (one Prefect task per endpoint: the task machinery
    costs CPU that the other probes would measure as latency); a first language failure is confirmed by two
    more attempts."""
    from concurrent.futures import ThreadPoolExecutor

    from tasks.probe_worker import attempt_runner

    key = read_secret("OPENROUTER_API_KEY", required=True)
    assert key is not None
    with attempt_runner() as run:
        if len(plan.probes) == 1:
            return _contract_chain(run, plan.probes[0], round_id, cfg, footprint, key)
        with ThreadPoolExecutor(max_workers=len(plan.probes), thread_name_prefix=f"probe-{plan.endpoint.tag}") as ex:
            chains = [ex.submit(_contract_chain, run, p, round_id, cfg, footprint, key) for p in plan.probes]
            return [a for chain in chains for a in chain.result()]


def _contract_chain(run: Any, probe: Probe, round_id: str, cfg: CanaryConfig, footprint: Footprint,
                    key: Any) -> list[Attempt]:
    """One contract's attempts in order: its turns, then (language) the confirmations of a first failure.

    The request body is built here, from the contract's SPEC, and handed to the probe worker (which knows only
    the built-in contracts: a contract registered in this process is probed all the same)."""
    from tasks.core.contracts import spec_of
    from tasks.core.probe_request import build_request, prompt_language
    from tasks.probe_worker import ProbeCall

    spec = spec_of(probe.contract)
    endpoint = probe.endpoint
    recorded_language = prompt_language(probe.contract, probe.language)

    clock = SystemClock()
    slots = _request_slots(cfg.concurrency)

    def once(n: int) -> Attempt:
        with slots:
            started = clock.now()
            try:
                body = build_request(probe.contract, endpoint.model, endpoint.tag, probe.language, cfg,
                                     attempt_no=n)
                return run(ProbeCall(base_url=cfg.base_url, endpoint=endpoint, contract=probe.contract,
                                     round_id=round_id, attempt_no=n, language=recorded_language, cfg=cfg,
                                     api_key=key.get(), secrets=known_values(), body=body))
            except Exception as exc:  # a bug of ours must not cost the other endpoints their results
                detail = redact(f"probe failed internally: {type(exc).__name__}: {exc}", key)[:300]
                log.warning("probe-%s-%s: %s", name(probe.endpoint.tag, "log"), probe.contract, detail)
                return Attempt(round_id=round_id, model=probe.endpoint.model, tag=probe.endpoint.tag,
                               provider_name=probe.endpoint.provider_name, contract=probe.contract,
                               attempt_no=n, started_at=started, language=probe.language,
                               error_class=ErrorClass.BAD_FRAME, error_detail=detail)

    attempts = [once(n) for n in spec.attempts]
    if (spec.confirm_first is not None and spec.confirm_first(attempts[0])
            and footprint.confirms(endpoint.tag)):
        attempts.extend(once(n) for n in spec.confirm_attempts)
    return attempts
