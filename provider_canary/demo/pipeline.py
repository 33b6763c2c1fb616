"""A history's rounds probed ahead: `canary demo --days 7` in under 2.5 minutes instead of eleven.

Each round runs the round's own steps (tasks/round/steps.py, the functions the `canary-round` flow wires: load the
prior, discover, plan, probe, settle, save in one transaction, write the ignore list, deliver the outbox), in the
flow's order, one round after another: the policy is a fold over a model's rounds. What is not sequential is
probing. A round's requests depend on its simulated time, which the simulator reads from the request's path
(`/at/<unix>/api/v1/...`, provider_canary/simulator/app.py), and, for the language contract only, on the previous
round's language outcome (the rotation: tasks/core/rotation.py). So while round n settles, the requests of the next
`lookahead` rounds are already in flight, their languages predicted by assuming each endpoint's last known
language outcome repeats. At its turn each round plans from its real prior; a probe that differs from the one
predicted (an outcome changed) is sent again then, before anything else. The rounds stored are the ones a flow
run per round would store (tests/e2e/test_history.py compares the two engines); only the wall time differs.

Bounded like a cycle, in two lanes: `IN_FLIGHT` requests at once, and `SLOW_LANE` more for the endpoints that were
slow last round (their requests mostly wait, and would hold the shared lane's slots); all run in the probe worker
process, where timestamps are taken as bytes arrive.
"""

from __future__ import annotations

import itertools
import math
import queue
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from provider_canary.simulator.app import base_url_at
from tasks.config import CanaryConfig
from tasks.core.budget import FULL, Footprint
from tasks.core.plan import EndpointPlan, Probe, by_endpoint, make_round_id, plan_probes
from tasks.core.rotation import next_language
from tasks.core.types import Attempt, Contract, Endpoint, Outcome

if TYPE_CHECKING:
    from tasks.round.engine import RoundProbes

T = TypeVar("T")

#: Rounds probed ahead of the one settling. Six keep two cores busy; more only queue behind the requests' bound.
LOOKAHEAD = 6
#: Requests in flight at once (at most the config's `concurrency`). The history is bound by CPU, not by waiting:
#: past ~20 the simulator and the probe worker queue bytes behind each other, and the canary measures its own
#: load as latency (at 64, healthy endpoints failed TTFT). Measured on 2 cores over one simulated day: 12 ->
#: 1.05 s/round, healthy TTFT p99 82 ms; 20 -> 0.97 s/round, p99 147 ms; the threshold is 500 ms.
IN_FLIGHT = 16
#: Requests in flight at once, besides those, for the endpoints whose last round had an attempt slower than half
#: the TTFT threshold. Such a request waits idle for most of its life: in the shared lane the history fleet's
#: 12 s slow start alone held a quarter of the slots' time and set the history's pace, and on the days a second
#: endpoint starts slow (16 s) the two need ~9.6 slot-seconds a round. A week on 2 cores: 3 min 5-26 s with
#: one lane of 16; 2 min 42 s with a slow lane of 16 (days 2-3 at 0.50-0.58 s a round); 2 min 20 s with 32.
SLOW_LANE = 32

Known = Mapping[str, tuple[str, Outcome]]


@dataclass(frozen=True, slots=True)
class ProbeKey:
    round_no: int
    tag: str
    contract: str
    language: str


def predict_languages(
    rounds_tags: Sequence[Sequence[str]], languages: Sequence[str], planned: Mapping[str, str], known: Known
) -> list[dict[str, str]]:
    """The language of each tag in each of the next rounds (pure; `rounds_tags`: the tags discovered in each).

    `planned`: each tag's language in the last round whose plan is real; `known`: each tag's last known
    (language, outcome). An outcome not known yet is predicted to repeat the tag's last known one (a fault, or
    health, tends to last; nothing known: pass), so a passing endpoint moves on each round and a failing one
    stays; a tag never planned starts at its offset, as tasks/core/rotation.py starts it."""
    rounds: list[dict[str, str]] = []
    current = dict(planned)
    for tags in rounds_tags:
        nxt: dict[str, str] = {}
        for tag in tags:
            lang, last = current.get(tag), known.get(tag)
            previous = (lang, last[1] if last is not None else Outcome.PASS) if lang is not None else last
            nxt[tag] = next_language(tag, languages, previous)
        rounds.append(nxt)
        current |= nxt
    return rounds


class RoundOrderPool:
    """Threads that run the queued call of the lowest round first (then in the order sent): a round's probes
    sent again, because its predicted languages changed or at its turn, pass those of the rounds after it."""

    def __init__(self, workers: int, name: str) -> None:
        self._queue: queue.PriorityQueue[tuple[float, int, Future[Any] | None, Callable[[], Any] | None]] = (
            queue.PriorityQueue())
        self._order = itertools.count()
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
                         for i in range(max(1, workers))]
        for thread in self._threads:
            thread.start()

    def submit(self, round_no: int, call: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        self._queue.put((round_no, next(self._order), future, call))
        return future

    def _work(self) -> None:
        while True:
            _, _, future, call = self._queue.get()
            if future is None or call is None:
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(call())
            except BaseException as exc:  # the caller sees it in future.result()
                future.set_exception(exc)

    def shutdown(self) -> None:
        """Cancel what is still queued, let the calls running finish, stop the threads."""
        while True:
            try:
                _, _, future, _ = self._queue.get_nowait()
            except queue.Empty:
                break
            if future is not None:
                future.cancel()
        for _ in self._threads:
            self._queue.put((math.inf, next(self._order), None, None))
        for thread in self._threads:
            thread.join()


@dataclass
class PipelineCounts:
    sent: int = 0  # probes sent (each one or more attempts)
    reprobed: int = 0  # sent at their round's turn
    wasted: int = 0  # sent ahead on a prediction that turned out wrong
    slow: int = 0  # sent in the slow lane (see ProbePipeline)


class ProbePipeline:
    """The probes of rounds `0..len(times)-1` of one model, up to `lookahead` rounds ahead of the one settling.

    Its methods run on the history's thread; the pools' threads only run probes (tasks/round/probe_task.py's
    `probe_endpoint`, one contract each, on the probe worker's event loop). Two lanes, each its own pool: the endpoints
    that were slow last round (`SLOW_LANE` threads) and the others (`IN_FLIGHT`). The threads bound the requests in
    flight; the config's `concurrency` slots are set to their sum, so they never bind."""

    def __init__(self, cfg: CanaryConfig, model: str, times: Sequence[datetime], api_key: str, *,
                 lookahead: int = LOOKAHEAD):
        import httpx

        lane, slow_lane = min(cfg.concurrency, IN_FLIGHT), min(cfg.concurrency, SLOW_LANE)
        self.cfg = replace(cfg, concurrency=lane + slow_lane)
        self.model, self.times, self.lookahead = model, list(times), lookahead
        self.counts = PipelineCounts()
        self._key = api_key
        self._client = httpx.Client(timeout=httpx.Timeout(cfg.read_timeout_s, connect=cfg.connect_timeout_s))
        self._pool = RoundOrderPool(lane, "history-probe")
        self._slow_pool = RoundOrderPool(slow_lane, "history-slow-probe")
        self._slow: set[str] = set()  # the tags with an attempt slower than half the TTFT threshold last round
        self._endpoints: dict[int, list[Endpoint]] = {}
        self._probes: dict[ProbeKey, tuple[Probe, Future[list[Attempt]]]] = {}
        self._planned: dict[str, str] = {}  # the languages of the last round whose plan is real
        self._known: dict[str, tuple[str, Outcome]] = {}  # each tag's last known (language, outcome)
        self._settled = -1  # the last round whose plan is real
        self._round_cfgs: dict[int, CanaryConfig] = {}
        self._round_ids = [make_round_id(model, t) for t in self.times]

    def round_cfg(self, n: int) -> CanaryConfig:
        """The config of round n: the simulator's base_url at round n's simulated time."""
        if n not in self._round_cfgs:
            self._round_cfgs = {k: v for k, v in self._round_cfgs.items() if k >= self._settled}
            self._round_cfgs[n] = replace(self.cfg, base_url=base_url_at(self.cfg.base_url, self.times[n]))
        return self._round_cfgs[n]

    def _discover(self, n: int) -> list[Endpoint]:
        """Round n's endpoints, as the simulator lists them at round n's time (asked once; a few ms)."""
        from tasks.probe.discover import fetch_endpoints

        if n not in self._endpoints:
            self._endpoints[n] = fetch_endpoints(self._client, self.round_cfg(n).base_url, self._key, self.model)
        return self._endpoints[n]

    def _send(self, n: int, probe: Probe, footprint: Footprint = FULL) -> Future[list[Attempt]]:
        from tasks.round.probe_task import probe_endpoint

        self.counts.sent += 1
        plan, round_id, cfg = EndpointPlan(probe.endpoint, (probe,)), self._round_ids[n], self.round_cfg(n)
        pool = self._pool
        if probe.endpoint.tag in self._slow:
            pool = self._slow_pool
            self.counts.slow += 1
        return pool.submit(n, lambda: probe_endpoint(plan, round_id, cfg, footprint, priority=n))

    def _look_ahead(self) -> None:
        """Send what the rounds after the last real plan need, by the latest prediction: what is in flight
        already is not sent twice, and a language probe whose prediction changed is replaced."""
        first, last = self._settled + 1, min(len(self.times) - 1, self._settled + self.lookahead)
        discovered: list[tuple[int, list[Endpoint]]] = []
        for n in range(first, last + 1):
            try:
                discovered.append((n, self._discover(n)))
            except Exception:  # the round asks again at its turn, and fails there if it must
                break
        predicted = predict_languages([[e.tag for e in eps] for _, eps in discovered], self.cfg.languages,
                                      self._planned, self._known)
        wanted = {(n, tag): lang for (n, _), languages in zip(discovered, predicted, strict=True)
                  for tag, lang in languages.items()}
        self._drop(lambda k: k.contract is Contract.LANGUAGE and wanted.get((k.round_no, k.tag), k.language)
                   != k.language)
        for (n, endpoints), languages in zip(discovered, predicted, strict=True):
            for probe in plan_probes(endpoints, self.cfg.languages, {}):
                if probe.contract is Contract.LANGUAGE:
                    probe = replace(probe, language=languages[probe.endpoint.tag])
                key = ProbeKey(n, probe.endpoint.tag, probe.contract, probe.language)
                if key not in self._probes:
                    self._probes[key] = (probe, self._send(n, probe))

    def start(self) -> None:
        """Send the first rounds (nothing known yet: every tag starts at its offset of the rotation)."""
        self._look_ahead()

    def take(self, n: int, previous_languages: Known, footprint: Footprint = FULL) -> RoundProbes:
        """Round n's endpoints and attempts, planned from its real prior exactly as the flow plans it."""
        from tasks.round.engine import RoundProbes, planned_probes

        self._known = dict(previous_languages)
        endpoints = self._discover(n)  # a failure is the round's, as in the flow
        probes = planned_probes(endpoints, self.cfg.languages, previous_languages, footprint)
        self._planned = {p.endpoint.tag: p.language for p in probes if p.contract is Contract.LANGUAGE}
        self._settled = n
        futures: list[Future[list[Attempt]]] = []
        reprobed = 0
        for plan in by_endpoint(probes):
            for probe in plan.probes:
                sent = self._probes.pop(ProbeKey(n, probe.endpoint.tag, probe.contract, probe.language), None)
                if sent is None or sent[0] != probe or footprint is not FULL:
                    reprobed += 1
                    futures.append(self._send(n, probe, footprint))
                else:
                    futures.append(sent[1])
        self._drop(lambda k: k.round_no <= n)
        self._endpoints = {k: v for k, v in self._endpoints.items() if k > n}
        self._look_ahead()
        self.counts.reprobed += reprobed
        attempts = [a for f in futures for a in f.result()]
        slow_ms = self.cfg.ttft_s * 1000 / 2
        self._slow = {a.tag for a in attempts if a.total_ms is not None and a.total_ms > slow_ms}
        return RoundProbes(endpoints, attempts, reprobed)

    def learned(self, language_outcomes: Known) -> None:
        """The round taken last is settled: with its language outcomes the next round's languages are exact."""
        self._known.update(language_outcomes)
        self._look_ahead()

    def _drop(self, which: Callable[[ProbeKey], bool]) -> None:
        """Forget the probes sent ahead that `which` picks (mispredicted): not sent if still queued, the answer
        not kept if already sent."""
        for key in [k for k in self._probes if which(k)]:
            self._probes.pop(key)[1].cancel()
            self.counts.wasted += 1

    def close(self) -> None:
        for _probe, future in self._probes.values():
            future.cancel()
        self._pool.shutdown()
        self._slow_pool.shutdown()
        self._client.close()


@contextmanager
def no_prefect_api() -> Iterator[None]:
    """No Prefect API in this context: what would ask one (a Variable, a Secret block) learns at once that there
    is none, instead of starting a temporary server. The pipelined history runs no flow."""
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED, temporary_settings

    with temporary_settings(updates={PREFECT_SERVER_EPHEMERAL_ENABLED: False, PREFECT_API_URL: None}):
        yield


def language_outcomes(results: Sequence[Any]) -> dict[str, tuple[str, Outcome]]:
    """Per tag, (language, outcome) of its language contract in these results (what the store's
    `last_language_outcomes` reads once they are saved)."""
    return {r.tag: (r.language, r.outcome) for r in results
            if r.contract is Contract.LANGUAGE and r.language is not None}


@contextmanager
def pipelined_rounds(overrides: Mapping[str, Any], model: str, times: Sequence[datetime], api_key: str
                     ) -> Iterator[Callable[[int, datetime], dict[str, Any]]]:
    """`run_round(n, round_ts)` for rounds 0..len(times)-1 of `model`, called in order: each is the round's
    steps (flows/round.py `run_round`) without a flow run, its probes taken from the pipeline."""
    from tasks import store
    from tasks.config.loading import resolve_config
    from tasks.round import probe_task

    cfg = resolve_config(None, dict(overrides))
    probe_task.warm_up()  # the probe worker (the detector loads its models at the first reply judged)
    pipe = ProbePipeline(cfg, model, times, api_key)
    try:
        pipe.start()
        with store.held_open(cfg.db_path):  # a fresh file nothing else opens until the history is built
            yield lambda n, round_ts: pipelined_round(pipe, n, round_ts)
    finally:
        pipe.close()


def pipelined_round(pipe: ProbePipeline, n: int, round_ts: datetime) -> dict[str, Any]:
    """Round n of the pipeline's model at `round_ts` (= times[n]): the round's steps as plain calls, its probes
    taken from the pipeline; returns the flow's summary (and `reprobed`)."""
    from flows.round import run_round
    from tasks.round.engine import Engine

    if round_ts != pipe.times[n]:
        raise ValueError(f"round {n} is at {pipe.times[n]:%Y-%m-%d %H:%M}, not {round_ts:%Y-%m-%d %H:%M}")
    engine = Engine(
        # its probes come from the pipeline all at once: the round keeps them when the probing ends
        probe=lambda _round_id, prior, footprint, _kept: pipe.take(n, prior.previous_languages, footprint),
        artifacts=False,  # the artifacts need a Prefect API
        settled=lambda settled: pipe.learned(language_outcomes(settled.results)),  # the next rounds' languages
    )
    return run_round(engine, pipe.cfg, pipe.model, round_ts).as_dict()
