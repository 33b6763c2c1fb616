"""The mutation gate's rules (mutation/gate.py) and its committed files: a survivor fails the gate and is named
(file:line, function, the change, what to do); an equivalent is matched by what it changes, not by mutmut's
numbering; an equivalents entry that names nothing any more fails too; a module is run again when its source,
its equivalents or a test that covered it changed."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from mutation import gate
from mutation.gate import Equivalent, Mutant, Tally

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]

#: What mutmut 3 prints for a mutant (`mutmut show`): the function before and after.
DIFF = """--- router/answer.py
+++ router/answer.py
@@ -1,8 +1,8 @@
 def masked_failure(a: Attempt) -> FailoverReason | None:
     \"\"\"Why a non-streamed HTTP 200 is no answer.\"\"\"
     if a.error_class is ErrorClass.MIDSTREAM_ERROR:
         code = a.error_code if a.error_code is not None else 500
-        if not has_output(a) or is_try_again_status(code):
+        if not has_output(a) or is_try_again_status(None):
             return reasons.error_in_200(code)
         return None
     word = upstream_failure(a)"""


def mutant(status: str = "survived", before: str = "x = 1", after: str = "x = 2", function: str = "f",
           file: str = "router/answer.py", key: str = "router.answer.x_f__mutmut_1") -> Mutant:
    return Mutant(file, key, function, 10, before, after, status)


def test_a_mutant_is_named_by_its_function_and_its_change() -> None:
    assert gate.function_name("router.answer.x_masked_failure__mutmut_10") == "masked_failure"
    assert gate.function_name("router.answer.xǁAnswerReaderǁchunk__mutmut_3") == "AnswerReader.chunk"
    assert gate.function_name("router.answer.xǁAnswerReaderǁ__init____mutmut_6") == "AnswerReader.__init__"
    assert gate.parse_diff(DIFF) == (5, "if not has_output(a) or is_try_again_status(code):",
                                     "if not has_output(a) or is_try_again_status(None):")
    removed = DIFF.replace("+        if not has_output(a) or is_try_again_status(None):\n", "")
    assert gate.parse_diff(removed)[2] == ""
    two = DIFF.replace(" -1,8 +1,8 ", " -3,8 +3,8 ").replace("-        if", "-        x = 1\n-        if")
    assert gate.parse_diff(two) == (7, "x = 1 / if not has_output(a) or is_try_again_status(code):",
                                    "if not has_output(a) or is_try_again_status(None):")


def test_caught_equivalent_and_survived_are_tallied_per_module() -> None:
    eq = Equivalent("router/answer.py", "f", "x = 1", "x = 2", "nobody reads x")
    found = [mutant("killed"), mutant("timeout"), mutant("survived"), mutant("no tests", after="x = 3"),
             mutant("survived", file="router/judging.py", key="router.judging.x_f__mutmut_1")]
    result = gate.assess(found, [eq], ["router/answer.py", "router/judging.py", "router/tiers.py"])
    assert result.tallies == {"router/answer.py": Tally(2, 1, 1), "router/judging.py": Tally(0, 1, 0),
                               "router/tiers.py": Tally()}
    assert [m.after for m in result.survivors] == ["x = 3", "x = 2"] and not result.passed
    assert result.equivalent_of == {"router.answer.x_f__mutmut_1": eq}
    assert Tally(2, 1, 1).score == pytest.approx(2 / 3) and Tally(0, 0, 4).score == 1.0


def test_an_equivalent_names_one_change_of_one_function_of_one_module() -> None:
    eq = Equivalent("router/answer.py", "f", "x = 1", "x = 2", "nobody reads x")
    for other in (mutant(function="g"), mutant(after="x = 0"), mutant(before="y = 1"),
                  mutant(file="router/tiers.py")):
        assert gate.assess([other], [eq], [other.file]).survivors == (other,)
    assert gate.assess([mutant()], [eq], ["router/answer.py"]).passed


def test_an_entry_that_names_no_survivor_of_a_module_that_ran_fails_the_gate() -> None:
    eq = Equivalent("router/answer.py", "f", "x = 1", "x = 2", "nobody reads x")
    caught_now = gate.assess([mutant("killed")], [eq], ["router/answer.py"])
    assert caught_now.unmatched == (eq,) and not caught_now.passed
    assert "remove them" in gate.failure_message(caught_now)
    assert gate.assess([], [eq], ["router/judging.py"]).passed  # its module did not run: nothing to say


def test_the_failure_message_says_where_what_and_what_to_do() -> None:
    m = Mutant("router/answer.py", "router.answer.x_masked_failure__mutmut_10", "masked_failure", 199,
               "if not has_output(a) or is_try_again_status(code):",
               'if not has_output(a) or is_try_again_status("XXcodeXX"):', "survived")
    text = gate.failure_message(gate.assess([m], [], ["router/answer.py"]))
    assert "router/answer.py:199 in masked_failure (survived; router.answer.x_masked_failure__mutmut_10)" in text
    assert "- if not has_output(a) or is_try_again_status(code):" in text
    assert "add or sharpen a test" in text and "scripts/mutation --record" in text
    entry = text[text.index("[[equivalent]]"):].split("Then")[0].replace("\n  ", "\n").strip()
    parsed = gate.load_equivalents(entry.replace("<why no test can tell them apart>", "a reason"))
    assert parsed == [Equivalent(m.file, m.function, m.before, m.after, "a reason")]  # pasteable as it is


def test_an_equivalent_without_its_reason_is_refused() -> None:
    with pytest.raises(ValueError, match="entry 1 .*missing why"):
        gate.load_equivalents('[[equivalent]]\nfile = "a.py"\nfunction = "f"\nbefore = "x"\nafter = "y"\n')


def test_a_module_runs_again_when_what_it_rests_on_changed() -> None:
    record = {"router/answer.py": {"source": "s1", "equivalents": "e1", "tests": {"tests/unit/t.py": "t1"}}}
    assert gate.stale(record, "router/answer.py", "s1", "e1", {"tests/unit/t.py": "t1"}) is None
    assert gate.stale(record, "router/judging.py", "s1", "e1", {}) == "never recorded"
    assert gate.stale(record, "router/answer.py", "s2", "e1", {"tests/unit/t.py": "t1"}) == "its source changed"
    assert gate.stale(record, "router/answer.py", "s1", "e2", {"tests/unit/t.py": "t1"}) == (
        "its equivalents changed")
    assert gate.stale(record, "router/answer.py", "s1", "e1", {"tests/unit/t.py": None}) == (
        "its tests changed (tests/unit/t.py)")
    eqs = [Equivalent("router/answer.py", "f", "a", "b", "why"), Equivalent("router/tiers.py", "g", "a", "b", "y")]
    assert gate.equivalents_digest(eqs, "router/answer.py") == gate.equivalents_digest(eqs[:1], "router/answer.py")
    assert gate.equivalents_digest(eqs, "router/answer.py") != gate.equivalents_digest(eqs[1:], "router/answer.py")


def test_the_table_has_a_row_per_module_and_the_total() -> None:
    result = gate.assess([mutant("killed"), mutant("killed"), mutant("survived")], [], ["router/answer.py"])
    rows = [r.split() for r in gate.table(result).splitlines()]
    assert rows == [["module", "mutants", "caught", "survived", "known", "equivalent", "score"],
                    ["router/answer.py", "3", "2", "1", "0", "0", "66.7%"],
                    ["total", "3", "2", "1", "0", "0", "66.7%"]]


def test_the_records_table_scores_caught_over_caught_and_owed_and_sums_every_column() -> None:
    record = {"router/b.py": {"mutants": 10, "caught": 6, "known": 2, "equivalent": 2, "seconds": 3.4},
              "router/a.py": {"mutants": 3, "caught": 3, "known": 0, "equivalent": 0, "seconds": 1.2}}
    assert gate.record_table(record).splitlines() == [
        "| module | mutants | caught | owed | equivalent | score | seconds |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        "| `router/a.py` | 3 | 3 | 0 | 0 | 100.0% | 1 |",
        "| `router/b.py` | 10 | 6 | 2 | 2 | 75.0% | 3 |",
        "| total | 13 | 9 | 2 | 2 | 81.8% | 5 |"]


def test_a_known_survivor_passes_the_gate_but_counts_as_survived_and_must_go_once_caught() -> None:
    owed = Equivalent("router/answer.py", "f", "x = 1", "x = 2", "")
    result = gate.assess([mutant("killed"), mutant()], [], ["router/answer.py"], [owed])
    assert result.passed and result.known == (mutant(),)
    assert result.tallies["router/answer.py"] == Tally(caught=1, known=1) and Tally(1, 0, 0, 1).score == 0.5
    caught_now = gate.assess([mutant("killed")], [], ["router/answer.py"], [owed])
    assert caught_now.unmatched == (owed,) and not caught_now.passed
    assert gate.load_known('[[survivor]]\nfile = "a.py"\nfunction = "f"\nbefore = "x"\nafter = "y"\n') == [
        Equivalent("a.py", "f", "x", "y", "")]


# -- the committed files -----------------------------------------------------------------------------------
def test_the_equivalents_and_the_record_name_only_decision_modules() -> None:
    modules = tomllib.loads((ROOT / "mutation" / "modules.toml").read_text(encoding="utf-8"))["modules"]
    assert all((ROOT / m).is_file() for m in modules) and len(set(modules)) == len(modules)
    equivalents = gate.load_equivalents((ROOT / "mutation" / "equivalents.toml").read_text(encoding="utf-8"))
    known = gate.load_known((ROOT / "mutation" / "survivors.toml").read_text(encoding="utf-8"))
    assert {e.file for e in [*equivalents, *known]} <= set(modules)
    named = [(e.file, e.function, e.before, e.after) for e in [*equivalents, *known]]
    assert len(set(named)) == len(named)  # a mutant is equivalent or owed a test, once
    record = json.loads((ROOT / "mutation" / "record.json").read_text(encoding="utf-8"))
    assert set(record["modules"]) <= set(modules)



def test_the_docs_show_the_record_as_it_is() -> None:
    """docs/mutation.md's table is `scripts/mutation --table` of the committed record: paste it after `--record`."""
    record = json.loads((ROOT / "mutation" / "record.json").read_text(encoding="utf-8"))
    assert gate.record_table(record["modules"]) in (ROOT / "docs" / "mutation.md").read_text(encoding="utf-8")
