"""The mutation gate's rules (pure: plain data in, plain data out; the shell is mutation/run.py).

A mutant is one small change mutmut made to one line of a decision module (docs/mutation.md). After a run each
mutant is *caught* (a test failed, or it hung or crashed the tests), *equivalent* (it survived and
mutation/equivalents.toml lists it with the reason no test can tell it from the original), or *survived*.
Nothing new may survive: the gate fails on every survivor, except the *known* survivors of
mutation/survivors.toml (tests still to write, counted as survived: a debt that only shrinks), and on every
entry of either file that names no surviving mutant of a module that ran (a stale entry must not linger).

An equivalent is named by what a reader sees, not by mutmut's numbering (which shifts with every edit): the
module's file, the function (`Class.method` or `function`), and the changed line(s) before and after, each
stripped of indentation (several lines joined with ` / `).

Which modules need a run is read from mutation/record.json: per module, the hash of its source, of its
equivalents entries and of each test file that ran its code at its last full pass (`scripts/mutation
--record`). A module whose hash, equivalents or covering tests changed since is *stale*; CI runs only those.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

#: mutmut's statuses that mean a test noticed the mutant (a hang or a crash of the tests is noticed too).
CAUGHT = frozenset({"killed", "timeout", "segfault", "caught by type check"})
JOIN = " / "


@dataclass(frozen=True, slots=True)
class Mutant:
    file: str  # the module's path in the repository, e.g. provider_canary/router/answer.py
    key: str  # mutmut's name for it (router.answer.x_check__mutmut_3): to `mutmut show` it
    function: str  # Class.method or function
    line: int  # in the original file
    before: str
    after: str
    status: str  # mutmut's: killed, survived, no tests, timeout, ...

    @property
    def caught(self) -> bool:
        return self.status in CAUGHT


@dataclass(frozen=True, slots=True)
class Equivalent:
    file: str
    function: str
    before: str
    after: str
    why: str

    def names(self, m: Mutant) -> bool:
        return (self.file, self.function, self.before, self.after) == (m.file, m.function, m.before, m.after)


@dataclass(frozen=True, slots=True)
class Tally:
    caught: int = 0
    survived: int = 0  # new survivors: the gate fails
    equivalent: int = 0
    known: int = 0  # survivors listed in mutation/survivors.toml: tests still to write

    @property
    def total(self) -> int:
        return self.caught + self.survived + self.equivalent + self.known

    @property
    def score(self) -> float:
        """The share of non-equivalent mutants caught (1.0 when there are none)."""
        judged = self.caught + self.survived + self.known
        return self.caught / judged if judged else 1.0


@dataclass(frozen=True, slots=True)
class GateResult:
    tallies: Mapping[str, Tally]
    survivors: tuple[Mutant, ...] = ()
    unmatched: tuple[Equivalent, ...] = ()  # entries of a module that ran which named no surviving mutant
    known: tuple[Mutant, ...] = ()  # survivors listed in mutation/survivors.toml
    equivalent_of: Mapping[str, Equivalent] = field(default_factory=dict)  # mutant key -> its entry

    @property
    def passed(self) -> bool:
        return not self.survivors and not self.unmatched


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def function_name(mutant_key: str) -> str:
    """`provider_canary.router.answer.xǁAnswerReaderǁchunk__mutmut_3` -> `AnswerReader.chunk`; `...x_check__mutmut_1` ->
    check."""
    name = mutant_key.rpartition(".")[2].rpartition("__mutmut_")[0]
    if name.startswith("xǁ"):
        cls, _, method = name[2:].partition("ǁ")
        return f"{cls}.{method}"
    return name.removeprefix("x_")


_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")


def parse_diff(diff: str) -> tuple[int, str, str]:
    """A mutant's unified diff of its function -> (line of the first change within the function's code,
    1-based), the removed lines and the added lines (each stripped, joined with JOIN)."""
    start, before, after, old_line, first = 0, [], [], 0, 0
    for text in diff.splitlines():
        if text.startswith(("---", "+++")):
            continue
        hunk = _HUNK.match(text)
        if hunk:
            old_line = int(hunk.group(1))
            continue
        if text.startswith("-"):
            first = first or old_line
            before.append(text[1:].strip())
            old_line += 1
        elif text.startswith("+"):
            first = first or old_line
            after.append(text[1:].strip())
        else:
            old_line += 1
        start = first
    return start, JOIN.join(before), JOIN.join(after)


def load_equivalents(text: str, table: str = "equivalent", required: tuple[str, ...] = (
        "file", "function", "before", "why")) -> list[Equivalent]:
    """The `[[<table>]]` entries of mutation/equivalents.toml (`equivalent`, each with its reason) or of
    mutation/survivors.toml (`survivor`, no reason: a test is owed); ValueError names a bad one."""
    entries = tomllib.loads(text).get(table, [])
    out = []
    for n, entry in enumerate(entries, 1):
        missing = [k for k in required if not str(entry.get(k, "")).strip()]
        if missing:
            raise ValueError(f"{table} entry {n} ({entry.get('file')}, {entry.get('function')}): "
                             f"missing {', '.join(missing)}")
        out.append(Equivalent(entry["file"], entry["function"], str(entry.get("before", "")).strip(),
                              str(entry.get("after", "")).strip(), str(entry.get("why", "")).strip()))
    return out


def load_known(text: str) -> list[Equivalent]:
    """mutation/survivors.toml: the survivors a test is still owed for (no reason: none excuses them)."""
    return load_equivalents(text, "survivor", ("file", "function"))


def assess(mutants: Iterable[Mutant], equivalents: Sequence[Equivalent], files_run: Iterable[str],
          known: Sequence[Equivalent] = ()) -> GateResult:
    """Each mutant caught, equivalent, known or survived, tallied per file; the entries of a file that ran
    which named no surviving mutant."""
    counts: dict[str, list[int]] = {f: [0, 0, 0, 0] for f in files_run}
    survivors: list[Mutant] = []
    listed: list[Mutant] = []
    equivalent_of: dict[str, Equivalent] = {}
    entries = [*equivalents, *known]
    used: set[int] = set()
    for m in sorted(mutants, key=lambda m: (m.file, m.line, m.key)):
        row = counts.setdefault(m.file, [0, 0, 0, 0])
        if m.caught:
            row[0] += 1
            continue
        match = next((i for i, e in enumerate(entries) if e.names(m)), None)
        if match is None:
            row[1] += 1
            survivors.append(m)
        elif match < len(equivalents):
            row[2] += 1
            used.add(match)
            equivalent_of[m.key] = entries[match]
        else:
            row[3] += 1
            used.add(match)
            listed.append(m)
    unmatched = tuple(e for i, e in enumerate(entries) if i not in used and e.file in counts)
    tallies = {f: Tally(*row) for f, row in sorted(counts.items())}
    return GateResult(tallies, tuple(survivors), unmatched, tuple(listed), equivalent_of)


def equivalents_digest(equivalents: Sequence[Equivalent], file: str) -> str:
    own = sorted((e.function, e.before, e.after) for e in equivalents if e.file == file)
    return digest(repr(own).encode())


def stale(record: Mapping[str, object], file: str, source_digest: str, equivalents_hash: str,
          test_digests: Mapping[str, str | None]) -> str | None:
    """Why `file` needs a run against its record entry, or None when nothing it rests on changed.
    `test_digests`: the current digest of each test file the entry names (None: the file is gone)."""
    entry = record.get(file)
    if not isinstance(entry, Mapping):
        return "never recorded"
    if entry.get("source") != source_digest:
        return "its source changed"
    if entry.get("equivalents") != equivalents_hash:
        return "its equivalents changed"
    tests = entry.get("tests")
    changed = sorted(t for t, d in (tests.items() if isinstance(tests, Mapping) else ()) if test_digests.get(t) != d)
    if changed:
        return f"its tests changed ({', '.join(changed[:3])}{', ...' if len(changed) > 3 else ''})"
    return None


def table(result: GateResult) -> str:
    """caught / survived (new) / known (mutation/survivors.toml) / equivalent per module, and the total."""
    rows = [("module", "mutants", "caught", "survived", "known", "equivalent", "score")]
    total = Tally(*(sum(getattr(t, k) for t in result.tallies.values())
                    for k in ("caught", "survived", "equivalent", "known")))
    for f, t in [*result.tallies.items(), ("total", total)]:
        rows.append((f, str(t.total), str(t.caught), str(t.survived), str(t.known), str(t.equivalent),
                     f"{t.score:.1%}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths,
                                                                                                   strict=True)))
                     for r in rows)


def record_table(modules: Mapping[str, Mapping[str, object]]) -> str:
    """The figures of mutation/record.json as the Markdown table of docs/mutation.md: per module its mutants,
    caught, owed (known survivors), equivalent, score (caught / (caught + owed)) and the seconds its mutants'
    tests took, summed; then the total."""
    def tally(entry: Mapping[str, object]) -> tuple[Tally, float]:
        def n(key: str) -> int:
            value = entry.get(key, 0)
            return value if isinstance(value, int) else 0
        seconds = entry.get("seconds", 0.0)
        return (Tally(caught=n("caught"), equivalent=n("equivalent"), known=n("known")),
                float(seconds) if isinstance(seconds, int | float) else 0.0)

    rows = [(f"`{f}`", *tally(e)) for f, e in sorted(modules.items())]
    total = Tally(*(sum(getattr(t, k) for _, t, _ in rows) for k in ("caught", "survived", "equivalent", "known")))
    rows.append(("total", total, sum(s for _, _, s in rows)))
    lines = ["| module | mutants | caught | owed | equivalent | score | seconds |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    lines += [f"| {name} | {t.total} | {t.caught} | {t.known} | {t.equivalent} | {t.score:.1%} | {s:.0f} |"
              for name, t, s in rows]
    return "\n".join(lines)


def toml_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def failure_message(result: GateResult) -> str:
    """Every survivor (file:line, function, the change, mutmut's name) and every stale entry, and what to do."""
    out: list[str] = []
    if result.survivors:
        out.append(f"{len(result.survivors)} mutant(s) survived: no test failed when this line was changed.")
        for m in result.survivors:
            how = "no test runs this line" if m.status == "no tests" else m.status
            out.append(f"  {m.file}:{m.line} in {m.function} ({how}; {m.key})\n"
                       f"    - {m.before}\n    + {m.after}")
        out.append(
            "What to do: add or sharpen a test that fails with the change (the behaviour a user sees; "
            "`scripts/mutation FILE` runs one module again). Only when no test can ever tell the two apart, add "
            "to mutation/equivalents.toml, with the reason:")
        for m in result.survivors[:3]:
            out.append(f"  [[equivalent]]\n  file = {toml_string(m.file)}\n  function = {toml_string(m.function)}"
                       f"\n  before = {toml_string(m.before)}\n  after = {toml_string(m.after)}\n"
                       '  why = "<why no test can tell them apart>"')
    if result.unmatched:
        out.append(f"{len(result.unmatched)} entry(ies) of mutation/equivalents.toml or survivors.toml name no "
                   "surviving mutant (the code changed, or a test now catches it): remove them.")
        out.extend(f"  {e.file} {e.function}: {e.before} -> {e.after}" for e in result.unmatched)
    out.append("Then `scripts/mutation --record FILE...` and commit mutation/record.json.")
    return "\n".join(out)
