"""The Prometheus text exposition format (0.0.4), line by line (pure): the one renderer and the one escaper of
every sample the canary's exporter writes (`canary metrics`, tasks/metrics/exporter.py; the stored per-model text,
tasks/store/metric_text.py).

    header("canary_rounds_total", "counter", "Rounds that ended, by status")
    sample_line("canary_rounds_total", (("model", 'a"b'), ("status", "complete")), 3)
        # -> 'canary_rounds_total{model="a\\"b",status="complete"} 3.0\n'

Label values are escaped as the format says (backslash, double quote, line feed: `\\\\`, `\\"`, `\\n`), so any
model id or endpoint tag, however hostile (quotes, backslashes, newlines, 10 kB), stays one sample on one line;
HELP text escapes backslash and line feed. Values are Go-style floats: `+Inf`, `-Inf`, `NaN`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

#: What `GET /metrics` answers with (the text format prometheus_client and Prometheus speak).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Labels = Sequence[tuple[str, str]]


def escape_label_value(value: str) -> str:
    if "\\" not in value and '"' not in value and "\n" not in value:
        return value  # the usual case, ~4x faster than three replaces
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    v = float(value)
    if v != v:
        return "NaN"
    if v in (math.inf, -math.inf):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v)


def header(name: str, kind: str, help_: str) -> str:
    """`# HELP` and `# TYPE` of one family."""
    return f"# HELP {name} {escape_help(help_)}\n# TYPE {name} {kind}\n"


def label_set(labels: Labels) -> str:
    """`{a="x",b="y"}`, or '' without labels."""
    if not labels:
        return ""
    return "{" + ",".join([f'{k}="{escape_label_value(v)}"' for k, v in labels]) + "}"


def sample_line(name: str, labels: Labels, value: float) -> str:
    return f"{name}{label_set(labels)} {format_value(value)}\n"


def sample_lines(name: str, labels: Labels, last: str, values: Iterable[tuple[str, float]]) -> str:
    """Lines that share `labels` and differ in one last label (`last`) and the value: the shared part is
    escaped once (the exclusion gauges: every endpoint x layer, at every scrape)."""
    shared = label_set(labels)
    prefix = f"{name}{shared[:-1]}," if shared else f"{name}{{"
    return "".join([f'{prefix}{last}="{escape_label_value(v)}"}} {format_value(x)}\n' for v, x in values])


def family_lines(name: str, label_names: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """One line per row: the row's first values are the labels (in `label_names` order), its last the value;
    a row whose value is None is left out (no sample, as for a contract that was inconclusive). The same
    lines as `sample_line` per row, with the label names' text built once (thousands of rows a snapshot)."""
    n = len(label_names)
    heads = [f'{k}="' if i == 0 else f'",{k}="' for i, k in enumerate(label_names)]
    opening, closing = (f"{name}{{", '"} ') if n else (name, " ")
    out = []
    for row in rows:
        value = row[n]
        if value is None:
            continue
        labels = "".join([head + escape_label_value(str(v)) for head, v in zip(heads, row[:n], strict=True)])
        out.append(f"{opening}{labels}{closing}{format_value(value)}\n")  # type: ignore[arg-type]
    return "".join(out)


def histogram_lines(name: str, labels: Labels, buckets: Sequence[tuple[float, float]], total: float) -> str:
    """`<name>_bucket` per (le, cumulative count), `+Inf` last (its count is the `_count`), then `_sum` and
    `_count`, all with `labels`."""
    out = [sample_line(f"{name}_bucket", (*labels, ("le", format_value(le))), n) for le, n in buckets]
    count = buckets[-1][1] if buckets else 0.0
    out.append(sample_line(f"{name}_sum", labels, total))
    out.append(sample_line(f"{name}_count", labels, count))
    return "".join(out)
