"""Build the operator's files from the code: the Grafana dashboard (ops/grafana/dashboard.py) and the generated
parts of docs/operations.md (the metric table from the exporter's and the router's families, the alert table
and one runbook per alert from ops/prometheus/canary-rules.yml).

    .venv/bin/python ops/build.py            # write them
    .venv/bin/python ops/build.py --check    # exit 1, naming the files, when a committed one differs

A generated part sits between `<!-- generated: NAME -->` and `<!-- end generated: NAME -->`; the text around it
is written by hand. tests/unit/test_ops_build.py runs the check, so the tables stay true to the code.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "ops" / "grafana"))

DOCS = REPO / "docs" / "operations.md"
RULES = REPO / "ops" / "prometheus" / "canary-rules.yml"
DASHBOARD = REPO / "ops" / "grafana" / "canary-dashboard.json"
KIND = {"gauge": "gauge", "counter": "counter", "histogram": "histogram"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def exporter_rows() -> list[tuple[str, str, tuple[str, ...], str]]:
    """(name, type, labels, help) of every family `canary metrics` writes, in exposition order."""
    from tasks.metrics.exporter import OWN_FAMILIES
    from tasks.store.metric_text import FAMILIES, HISTOGRAMS

    own = {name: (name, kind, labels, help_) for name, kind, help_, labels in OWN_FAMILIES}
    rows = [own.pop(n) for n in ("canary_snapshot_up", "canary_build_info")]
    rows += [(f.name, f.kind, f.labels, f.help) for f in FAMILIES if f.per_model]
    rows += [(h.name, h.kind, h.labels, h.help) for h in HISTOGRAMS]
    rows += [(f.name, f.kind, f.labels, f.help) for f in FAMILIES if not f.per_model]
    return rows + list(own.values())


def router_rows() -> list[tuple[str, str, tuple[str, ...], str]]:
    """(name, type, labels, help) of the router's `GET /metrics`, read from a fresh `RouterMetrics` registry."""
    from provider_canary.router.metrics import RouterMetrics

    registry = RouterMetrics().registry
    rows = []
    for collector in dict.fromkeys(registry._names_to_collectors.values()):  # prometheus_client's own index
        labels = tuple(getattr(collector, "_labelnames", ()))
        for family in collector.collect() if not labels else collector.describe():
            name = family.name + ("_total" if family.type == "counter" else "")
            rows.append((name, family.type, labels or tuple(getattr(family, "_labelnames", ())), family.documentation))
    return rows


def metric_table() -> str:
    lines = ["| metric | type | labels | means |", "| --- | --- | --- | --- |"]
    lines += [f"| `{n}` | {k} | {', '.join(labels) or ''} | {_cell(h)} |" for n, k, labels, h in exporter_rows()]
    return "\n".join(lines)


def router_table() -> str:
    lines = ["| metric | type | labels | means |", "| --- | --- | --- | --- |"]
    lines += [f"| `{n}` | {k} | {', '.join(labels)} | {_cell(h)} |" for n, k, labels, h in router_rows()]
    return "\n".join(lines)


def _rules() -> list[dict[str, Any]]:
    import yaml

    spec = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    return [r for g in spec["groups"] for r in g["rules"] if "alert" in r]


def anchor(alert: str) -> str:
    """The runbook heading's anchor (GitHub's: lower case, no punctuation)."""
    return re.sub(r"[^a-z0-9-]", "", alert.lower())


def _template(text: str) -> str:
    """An annotation as a reader sees it: `{{ $labels.model }}` as `<model>`, other templating as `...`."""
    text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", r"<\1>", text)
    return re.sub(r"\{\{.*?\}\}", "...", text)


def _expr(rule: dict[str, Any]) -> str:
    return " ".join(str(rule["expr"]).split())


def rule_table() -> str:
    lines = ["| alert | severity | fires when | runbook |", "| --- | --- | --- | --- |"]
    for r in _rules():
        when = f"`{_cell(_expr(r))}`" + (f" for {r['for']}" if r.get("for") else "")
        lines.append(f"| `{r['alert']}` | {r['labels']['severity']} | {when} | [runbook](#{anchor(r['alert'])}) |")
    return "\n".join(lines)


def runbooks() -> str:
    out = []
    for r in _rules():
        a = r["annotations"]
        out += [f"#### {r['alert']}", "",
                f"Severity **{r['labels']['severity']}**; fires when `{_expr(r)}`"
                + (f" holds for {r['for']}" if r.get("for") else "") + ".", "",
                f"It says: {_template(a['summary'])}.", "",
                f"What to do: {_template(a['description'])}", ""]
    return "\n".join(out).rstrip()


def sections() -> dict[str, str]:
    return {"metrics": metric_table(), "router-metrics": router_table(), "rules": rule_table(),
            "runbooks": runbooks()}


def with_sections(doc: str, parts: dict[str, str]) -> str:
    for name, body in parts.items():
        pattern = re.compile(rf"(<!-- generated: {re.escape(name)} -->\n).*?(<!-- end generated: "
                             rf"{re.escape(name)} -->)", re.S)
        if not pattern.search(doc):
            raise SystemExit(f"build: docs/operations.md has no generated section {name!r}")
        doc = pattern.sub(lambda m, body=body: m.group(1) + body + "\n" + m.group(2), doc)
    return doc


def built() -> dict[Path, str]:
    from dashboard import dashboard_json  # ops/grafana/dashboard.py

    return {DASHBOARD: dashboard_json(), DOCS: with_sections(DOCS.read_text(encoding="utf-8"), sections())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 when a file differs")
    args = ap.parse_args()
    files = built()
    stale = [p for p, text in files.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
    if args.check:
        for p in stale:
            print(f"build: {p.relative_to(REPO)} differs from what the code builds (run ops/build.py)")
        return 1 if stale else 0
    for p in stale:
        p.write_text(files[p], encoding="utf-8")
        print(f"wrote {p.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
