"""Carrying the record across a move (docs/mutation.md "After a move"): `python -m mutation.carry REV`.

A move of modules (`git mv` and every import rewritten) changes the bytes of many test files, so the gate finds most
decision modules stale although no test asserts anything new and no decision module changed. A module's record
entry is carried over, with the new paths and digests and its old figures, only when all of this holds:

1. the entry describes REV's tree: its source and every covering test file at REV have the recorded digests;
2. from REV to the working tree, its source and each covering test file are the same program once the move is
   applied: the same syntax tree after every module REV names that git sees renamed (`git diff -M REV`) is
   spelled by its new dotted name or path, in imports, attribute chains and strings, with runs of imports sorted
   (a formatter reorders them), docstrings' line breaks (rewrapped around longer names) and formatting ignored;
3. its equivalents entries are unchanged (the move rewrites their paths only).

Anything else (a test that gained or lost a line, a name bound differently) leaves the module stale: run it.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import Mapping

from mutation.gate import digest, equivalents_digest, load_equivalents, load_known
from mutation.record_files import EQUIVALENTS, KNOWN, RECORD, ROOT, file_digest


def dotted(path: str) -> str | None:
    """`tasks/probe/worker.py` -> `tasks.probe.worker`; a package's `__init__.py` -> the package; else None."""
    if not path.endswith(".py"):
        return None
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


class Move:
    """What a move renamed: file paths and the dotted module names they give."""

    def __init__(self, renamed: Mapping[str, str]) -> None:
        self.paths: dict[str, str] = dict(renamed)
        names = {dotted(a): dotted(b) for a, b in renamed.items()}
        self.names = {a: b for a, b in names.items() if a and b and a != b}
        # in text, a bare package name is a word like any other ("[router]"): only dotted names and paths
        words = sorted([*(n for n in self.names if "." in n), *self.paths], key=len, reverse=True)
        self._in_text = re.compile("|".join(rf"(?<![\w./]){re.escape(w)}(?![\w/])" for w in words)) if words \
            else None

    def name(self, full: str) -> str:
        """A dotted name with its longest renamed module prefix spelled anew."""
        parts = full.split(".")
        for i in range(len(parts), 0, -1):
            head = ".".join(parts[:i])
            if head in self.names:
                return ".".join([self.names[head], *parts[i:]])
        return full

    def text(self, s: str) -> str:
        if self._in_text is None:
            return s
        return self._in_text.sub(lambda m: self.names.get(m.group(0)) or self.paths.get(m.group(0), m.group(0)), s)


NO_MOVE = Move({})


def _chain(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _chain(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


class _Spell(ast.NodeTransformer):
    """Every import as one marker per bound name with its target's full (moved) dotted name; dotted attribute
    chains and strings spelled after the move; runs of imports sorted."""

    def __init__(self, move: Move, tree: ast.AST) -> None:
        self.move = move
        # the names `import a.b` binds (`a`): only a chain starting with one of them spells a module; `router.x`
        # on a local variable named `router` is left alone
        self.module_heads = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                             for a in n.names if a.asname is None}

    def _marker(self, target: str, bound: str) -> ast.stmt:
        return ast.Expr(ast.Constant(f"import {self.move.name(target)} as {bound}"))

    def visit_Import(self, node: ast.Import) -> list[ast.stmt]:
        return [self._marker(a.name, a.asname or self.move.name(a.name)) for a in node.names]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> list[ast.stmt] | ast.ImportFrom:
        if node.level or not node.module:
            return node
        return [self._marker(f"{node.module}.{a.name}", a.asname or a.name) for a in node.names]

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        chain = _chain(node)
        if chain is not None:  # the same spelling on both sides, moved or not
            moved = self.move.name(chain) if chain.split(".")[0] in self.module_heads else chain
            return ast.Name(id=moved, ctx=node.ctx)
        return self.generic_visit(node)  # type: ignore[return-value]

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        return ast.Constant(self.move.text(node.value)) if isinstance(node.value, str) else node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]  # a docstring rewrapped by the longer names is the same docstring
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                first.value = ast.Constant(" ".join(first.value.value.split()))
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list):
                setattr(node, field, _imports_sorted(stmts))
        return node


def _is_marker(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
        and isinstance(stmt.value.value, str) and stmt.value.value.startswith("import ")


def _imports_sorted(stmts: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    run: list[ast.stmt] = []
    for s in [*stmts, None]:
        if s is not None and _is_marker(s):
            run.append(s)
            continue
        out.extend(sorted(run, key=ast.dump))
        run = []
        if s is not None:
            out.append(s)
    return out


def program(source: str, move: Move = NO_MOVE) -> str:
    """`source`'s syntax tree as text, spelled after `move` (module docstring, rule 2)."""
    tree = ast.parse(source)
    return ast.dump(_Spell(move, tree).visit(tree), annotate_fields=False, include_attributes=False)


def same_program(before: str, after: str, move: Move) -> bool:
    try:
        return program(before, move) == program(after)
    except SyntaxError:
        return False


# --- the shell: git and the record ---


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def _at(rev: str, path: str) -> str | None:
    try:
        return _git("show", f"{rev}:{path}")
    except subprocess.CalledProcessError:
        return None


def renamed_since(rev: str) -> dict[str, str]:
    out = {}
    for line in _git("diff", "-M", "--name-status", rev, "--").splitlines():
        status, *paths = line.split("\t")
        if status.startswith("R") and len(paths) == 2:
            out[paths[0]] = paths[1]
    return out


def carry_entry(rev: str, old: str, entry: Mapping[str, object], move: Move,
                equivalents_hash: str) -> tuple[str, dict[str, object]] | str:
    """(new path, carried entry), or why it cannot be carried."""
    new = move.paths.get(old, old)
    tests = entry.get("tests")
    tests = dict(tests) if isinstance(tests, Mapping) else {}
    files = {old: str(entry.get("source")), **{t: str(d) for t, d in tests.items()}}
    fresh: dict[str, str | None] = {}
    for path, recorded in files.items():
        before = _at(rev, path)
        if before is None or digest(before.encode()) != recorded:
            return f"its record does not describe {rev}'s {path}"
        now_path = move.paths.get(path, path)
        now = file_digest(now_path)
        if now is None:
            return f"{now_path} is gone"
        if now != recorded and not same_program(before, (ROOT / now_path).read_text(encoding="utf-8"), move):
            return f"{now_path} changed beyond the move"
        fresh[now_path] = now
    if equivalents_hash != entry.get("equivalents"):
        return "its equivalents changed"
    carried = dict(entry)
    carried["source"] = fresh[new]
    carried["tests"] = {move.paths.get(t, t): fresh[move.paths.get(t, t)] for t in sorted(tests)}
    return new, carried


def _untouched(old: str, entry: Mapping[str, object], move: Move) -> bool:
    """Nothing of the entry moved or changed: it stays as it is (fresh or stale for its own reasons)."""
    tests = entry.get("tests")
    paths = [old, *(tests if isinstance(tests, Mapping) else ())]
    return not any(p in move.paths for p in paths) and file_digest(old) == entry.get("source") and all(
        file_digest(t) == d for t, d in (tests.items() if isinstance(tests, Mapping) else ()))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m mutation.carry REV   (the commit the record was fresh at, before the move)",
              file=sys.stderr)
        return 2
    rev = args[0]
    move = Move(renamed_since(rev))
    equivalents = [*load_equivalents(EQUIVALENTS.read_text(encoding="utf-8")),
                   *(load_known(KNOWN.read_text(encoding="utf-8")) if KNOWN.exists() else [])]
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    modules: dict[str, Mapping[str, object]] = dict(record.get("modules") or {})
    out, carried, kept = {}, 0, []
    for old, entry in modules.items():
        new: str = move.paths.get(old, old)
        if _untouched(old, entry, move):
            out[new] = entry
            continue
        got = carry_entry(rev, old, entry, move, equivalents_digest(equivalents, new))
        if isinstance(got, str):
            kept.append(f"{old}: {got}")
            out[new] = entry
        else:
            out[got[0]] = got[1]
            carried += 1
    record["modules"] = dict(sorted(out.items()))
    RECORD.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"mutation carry: {carried} module(s) carried over the move since {rev}; {len(kept)} left as they were")
    for line in kept:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
