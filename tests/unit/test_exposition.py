"""The one line renderer and its one escaper (tasks/core/exposition.py): any label value comes back exactly
through prometheus_client's own parser; values in Go's float spelling."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from tasks.core.exposition import family_lines, format_value, header, histogram_lines, sample_line, sample_lines

pytestmark = pytest.mark.unit


@settings(max_examples=200, deadline=None)
@given(model=st.text(max_size=60), tag=st.text(max_size=60), value=st.floats(allow_nan=False))
def test_any_label_value_round_trips_through_prometheus_clients_parser(model: str, tag: str, value: float) -> None:
    text = header("canary_x", "gauge", "help with \\ and\nnewline") + sample_line(
        "canary_x", (("model", model), ("provider_tag", tag)), value)
    (family,) = text_string_to_metric_families(text)
    (sample,) = family.samples
    assert sample.labels == {"model": model, "provider_tag": tag}
    assert sample.value == value or (math.isinf(value) and sample.value == value)


@pytest.mark.parametrize(("value", "text"), [(1, "1.0"), (0.25, "0.25"), (math.inf, "+Inf"), (-math.inf, "-Inf"),
                                             (math.nan, "NaN"), (1e-5, "1e-05")])
def test_values_are_go_floats(value: float, text: str) -> None:
    assert format_value(value) == text


def test_the_batch_renderers_write_what_sample_line_writes() -> None:
    rows = [("m", 'say "hi"', 1), ("m", "skipped", None), ("m", "x\\y\nz", 2.5)]
    assert family_lines("f", ("model", "provider_tag"), rows) == "".join(
        sample_line("f", (("model", r[0]), ("provider_tag", r[1])), r[2]) for r in rows if r[2] is not None)
    assert family_lines("g", (), [(3,)]) == sample_line("g", (), 3) == "g 3.0\n"
    assert sample_lines("e", (("model", 'a"b'),), "layer", [("canary", 1), ("builtin", 0)]) == (
        sample_line("e", (("model", 'a"b'), ("layer", "canary")), 1)
        + sample_line("e", (("model", 'a"b'), ("layer", "builtin")), 0))
    lines = histogram_lines("h_seconds", (("model", "m"),), [(0.5, 1), (math.inf, 3)], 4.5).splitlines()
    assert lines == ['h_seconds_bucket{model="m",le="0.5"} 1.0', 'h_seconds_bucket{model="m",le="+Inf"} 3.0',
                     'h_seconds_sum{model="m"} 4.5', 'h_seconds_count{model="m"} 3.0']
