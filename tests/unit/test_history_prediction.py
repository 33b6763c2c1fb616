"""The pipelined history's pure parts: language prediction and the round-ordered pool
(provider_canary/demo/pipeline.py)."""

from __future__ import annotations

import threading
from concurrent.futures import CancelledError

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provider_canary.demo.pipeline import RoundOrderPool, predict_languages
from tasks.core.rotation import plan_languages, start_offset
from tasks.core.types import Outcome

LANGS = ("en", "es", "pt", "fr", "de")
TAGS = ("a", "b", "c/fp8")


def test_nothing_known_starts_every_tag_at_its_offset_then_moves_on() -> None:
    first, second = predict_languages([TAGS, TAGS], LANGS, {}, {})
    assert first == {t: LANGS[start_offset(t, len(LANGS))] for t in TAGS}
    assert second == {t: LANGS[(LANGS.index(first[t]) + 1) % len(LANGS)] for t in TAGS}  # predicted to pass


def test_a_failing_endpoint_is_predicted_to_stay_a_passing_one_to_move() -> None:
    known = {"a": ("es", Outcome.FAIL), "b": ("es", Outcome.PASS)}
    rounds = predict_languages([["a", "b"]] * 3, LANGS, {"a": "es", "b": "pt"}, known)
    assert [r["a"] for r in rounds] == ["es", "es", "es"]
    assert [r["b"] for r in rounds] == ["fr", "de", "en"]


def test_a_tag_absent_from_a_round_keeps_its_place_in_the_rotation() -> None:
    rounds = predict_languages([["a"], [], ["a"]], LANGS, {"a": "en"}, {"a": ("en", Outcome.PASS)})
    assert rounds == [{"a": "es"}, {}, {"a": "pt"}]


@given(
    outcomes=st.lists(st.sampled_from([Outcome.PASS, Outcome.FAIL, Outcome.INCONCLUSIVE, Outcome.TRANSPORT]),
                      min_size=1, max_size=6),
    start=st.sampled_from(LANGS),
)
def test_when_the_outcome_repeats_the_prediction_is_the_rotation_itself(outcomes: list[Outcome], start: str) -> None:
    """Whatever the last known outcome, predicting k rounds equals planning them one by one with that outcome
    (tasks/core/rotation.py), the plan the rounds make when the endpoint behaves as before."""
    outcome = outcomes[0]
    predicted = predict_languages([TAGS] * len(outcomes), LANGS, dict.fromkeys(TAGS, start),
                                  {t: (start, outcome) for t in TAGS})
    current = dict.fromkeys(TAGS, start)
    for got in predicted:
        current = plan_languages(TAGS, LANGS, {t: (current[t], outcome) for t in TAGS})
        assert got == current


def test_the_pool_runs_the_lowest_round_first() -> None:
    pool = RoundOrderPool(1, "test-pool")
    gate, order = threading.Event(), []
    try:
        blocker = pool.submit(0, gate.wait)  # holds the one thread while the others queue
        futures = [pool.submit(n, lambda n=n: order.append(n)) for n in (5, 3, 4, 3)]
        gate.set()
        blocker.result(timeout=5)
        for f in futures:
            f.result(timeout=5)
    finally:
        pool.shutdown()
    assert order == [3, 3, 4, 5]


def test_a_cancelled_call_never_runs_and_shutdown_cancels_what_is_queued() -> None:
    pool = RoundOrderPool(1, "test-pool")
    gate, ran = threading.Event(), []
    blocker = pool.submit(0, gate.wait)
    dropped = pool.submit(1, lambda: ran.append("dropped"))
    queued = pool.submit(2, lambda: ran.append("queued"))
    assert dropped.cancel()
    gate.set()
    blocker.result(timeout=5)
    queued.result(timeout=5)
    late_gate = threading.Event()
    running = pool.submit(3, late_gate.wait)
    never = pool.submit(4, lambda: ran.append("never"))
    threading.Timer(0.2, late_gate.set).start()
    pool.shutdown()  # the running call finishes; the queued one is cancelled
    assert running.done() and never.cancelled()
    with pytest.raises(CancelledError):
        never.result()
    assert ran == ["queued"]


def test_an_exception_reaches_the_caller_and_the_pool_goes_on() -> None:
    pool = RoundOrderPool(2, "test-pool")
    try:
        def boom() -> None:
            raise RuntimeError("bug")

        failed = pool.submit(0, boom)
        with pytest.raises(RuntimeError, match="bug"):
            failed.result(timeout=5)
        assert pool.submit(1, lambda: 42).result(timeout=5) == 42
    finally:
        pool.shutdown()
