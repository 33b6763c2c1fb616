"""The label children the router's request path keeps (provider_canary/router/metric_children.py): the very series
prometheus_client's `labels()` gives, whatever form the values come in (an int tier, a StrEnum outcome), counted once
each."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram

from provider_canary.router.metric_children import Children
from tasks.core.live_records import LiveOutcome

pytestmark = pytest.mark.unit


def test_a_kept_child_is_the_series_labels_gives_and_counts_once_per_call() -> None:
    registry = CollectorRegistry()
    counter = Counter("canary_test_attempts", "test", ("tier", "outcome"), registry=registry)
    kids = Children(counter)
    kids(1, LiveOutcome.OK).inc()
    kids("1", "ok").inc()
    kids(1, LiveOutcome.OK).inc()
    assert kids(1, LiveOutcome.OK) is counter.labels("1", "ok") is kids("1", "ok")
    assert registry.get_sample_value("canary_test_attempts_total", {"tier": "1", "outcome": "ok"}) == 3
    assert [s.labels for m in registry.collect() for s in m.samples if s.name.endswith("_total")] == [
        {"tier": "1", "outcome": "ok"}]


def test_histogram_children_observe_into_one_series() -> None:
    registry = CollectorRegistry()
    histogram = Histogram("canary_test_seconds", "test", ("route", "tier"), buckets=(0.1, 1.0), registry=registry)
    kids = Children(histogram)
    for seconds in (0.05, 0.5, 5.0):
        kids("model:chat", 2).observe(seconds)
    labels = {"route": "model:chat", "tier": "2"}
    assert registry.get_sample_value("canary_test_seconds_count", labels) == 3
    assert registry.get_sample_value("canary_test_seconds_bucket", {**labels, "le": "1.0"}) == 2
