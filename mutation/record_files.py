"""The mutation record on disk (docs/mutation.md "The gate in CI"): mutation/record.json (per module, the hashes of
its source, its equivalents entries and its covering tests as of its last passing run), which modules are stale
against it, and mutation/survivors.toml rewritten with a run's survivors (`--owe`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path

from mutation.gate import Equivalent, GateResult, digest, equivalents_digest, stale, toml_string

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "mutation"
RECORD = HERE / "record.json"
EQUIVALENTS = HERE / "equivalents.toml"
KNOWN = HERE / "survivors.toml"


def tool() -> str:
    return f"mutmut {version('mutmut')}"


def file_digest(rel: str) -> str | None:
    path = ROOT / rel
    return digest(path.read_bytes()) if path.exists() else None


def stale_files(files: list[str], record: Mapping[str, object], equivalents: list[Equivalent]) -> dict[str, str]:
    if record.get("tool") not in (tool(), None):
        return dict.fromkeys(files, f"recorded with {record.get('tool')}, this is {tool()}")
    modules = record.get("modules")
    entries = modules if isinstance(modules, Mapping) else {}
    out = {}
    for f in files:
        entry = entries.get(f)
        tests = entry.get("tests", {}) if isinstance(entry, Mapping) else {}
        why = stale(entries, f, file_digest(f) or "", equivalents_digest(equivalents, f),
                    {t: file_digest(t) for t in tests})
        if why:
            out[f] = why
    return out


def write_record(record: dict[str, object], result: GateResult, covered: dict[str, set[str]],
                 seconds: dict[str, float], equivalents: list[Equivalent]) -> list[str]:
    """The files that passed, written into the record (the others keep their old entry)."""
    if record.get("tool") != tool():
        record = {"tool": tool(), "modules": {}}
    modules = dict(record.get("modules") or {})  # type: ignore[call-overload]
    failed = {m.file for m in result.survivors} | {e.file for e in result.unmatched}
    written = []
    for f, t in result.tallies.items():
        if f in failed:
            continue
        modules[f] = {"source": file_digest(f), "equivalents": equivalents_digest(equivalents, f),
                      "tests": {t_: file_digest(t_) for t_ in sorted(covered.get(f, ()))},
                      "mutants": t.total, "caught": t.caught, "known": t.known, "equivalent": t.equivalent,
                      "seconds": round(seconds.get(f, 0.0), 1)}
        written.append(f)
    out = {"tool": tool(), "modules": dict(sorted(modules.items()))}
    RECORD.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return written


def owe(known: list[Equivalent], result: GateResult, files: list[str]) -> list[Equivalent]:
    """mutation/survivors.toml rewritten: the entries of the modules run are now exactly their survivors."""
    kept = [e for e in known if e.file not in files]
    owed = {(m.file, m.function, m.before, m.after): m for m in [*result.known, *result.survivors]}
    entries = kept + [Equivalent(f, fn, b, a, "") for (f, fn, b, a) in sorted(owed)]
    head = [ln for ln in KNOWN.read_text(encoding="utf-8").splitlines() if ln.startswith("#")] if KNOWN.exists() \
        else []
    body = [f"[[survivor]]\nfile = {toml_string(e.file)}\nfunction = {toml_string(e.function)}\n"
            f"before = {toml_string(e.before)}\nafter = {toml_string(e.after)}\n" for e in entries]
    KNOWN.write_text("\n".join(head) + "\n\n" + "\n".join(body), encoding="utf-8")
    print(f"mutation: {len(owed)} survivor(s) of {len(files)} module(s) written into {KNOWN.relative_to(ROOT)}")
    return entries
