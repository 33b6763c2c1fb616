"""A labelled Prometheus metric's children, kept by their label values.

prometheus_client's `metric.labels(*values)` checks the values, turns each into a string and takes the metric's
lock on every call; the router asks for the same few series on every request (its labels are bounded: routes,
tiers, endpoints, reasons, clients of the routes file). `Children(metric)(*values)` asks `labels` once per
distinct tuple of values and keeps the child, which is the same object `labels` would return.
"""

from __future__ import annotations

from typing import Any


class Children:
    __slots__ = ("_kept", "_metric")

    def __init__(self, metric: Any) -> None:
        self._metric = metric
        self._kept: dict[tuple[object, ...], Any] = {}

    def __call__(self, *values: object) -> Any:
        child = self._kept.get(values)
        if child is None:
            child = self._kept[values] = self._metric.labels(*values)
        return child
