"""Round status aggregation (docs/design.md "round status"), table-driven."""

from __future__ import annotations

import pandas as pd
import pytest

from tasks.core.types import Contract, ContractResult, Outcome, RoundStatus
from tasks.core.verdicts import OUTCOME_COLUMNS, STATUS_COLUMNS, results_frame, round_status, status_map

pytestmark = pytest.mark.unit

CONTRACTS = ["ttft", "refusal", "structured", "language", "opening"]


def frame(outcomes: str, tag: str = "x", round_id: str = "r1") -> pd.DataFrame:
    """One endpoint's contract outcomes as letters: p pass, f fail, t transport, i inconclusive."""
    names = {"p": "pass", "f": "fail", "t": "transport", "i": "inconclusive"}
    rows = [(round_id, "m/x", tag, CONTRACTS[i], names[c], "r") for i, c in enumerate(outcomes)]
    return pd.DataFrame(rows, columns=list(OUTCOME_COLUMNS))


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        ("pppp", "clean"),
        ("fppp", "fail"),
        ("tfpi", "fail"),  # fail wins over transport
        ("tppp", "transport"),
        ("tiii", "transport"),
        ("pipi", "clean"),  # at least one pass and nothing worse
        ("iiii", "inconclusive"),
        ("i", "inconclusive"),
        ("f", "fail"),
        ("iiif", "fail"),
    ],
)
def test_round_status(outcomes: str, expected: str) -> None:
    out = round_status(frame(outcomes))
    assert out.to_dict("records") == [{"round_id": "r1", "model": "m/x", "tag": "x", "status": expected}]


def test_groups_by_round_model_and_tag_sorted() -> None:
    outcomes = pd.concat(
        [frame("pp", "b", "r2"), frame("fp", "a", "r2"), frame("tp", "a", "r1"), frame("ii", "c")]
    )
    out = round_status(outcomes)
    assert list(out.columns) == list(STATUS_COLUMNS)
    assert list(out.itertuples(index=False, name=None)) == [
        ("r1", "m/x", "a", "transport"),
        ("r1", "m/x", "c", "inconclusive"),
        ("r2", "m/x", "a", "fail"),
        ("r2", "m/x", "b", "clean"),
    ]


def test_results_frame_from_contract_results() -> None:
    results = [
        ContractResult("r1", "m/x", "a", Contract.TTFT, Outcome.PASS, "ok"),
        ContractResult("r1", "m/x", "a", Contract.LANGUAGE, Outcome.FAIL, "language_mix", "pt+es"),
        ContractResult("r1", "m/x", "b", Contract.TTFT, Outcome.TRANSPORT, "http_429"),
    ]
    df = results_frame(results)
    assert list(df.columns) == list(OUTCOME_COLUMNS)
    assert df.iloc[1].to_dict() == {
        "round_id": "r1",
        "model": "m/x",
        "tag": "a",
        "contract": "language",
        "outcome": "fail",
        "reason": "language_mix",
    }
    assert status_map(round_status(df)) == {"a": RoundStatus.FAIL, "b": RoundStatus.TRANSPORT}


def test_empty_input_gives_an_empty_frame_with_columns() -> None:
    out = round_status(results_frame([]))
    assert out.empty and list(out.columns) == list(STATUS_COLUMNS)
    assert status_map(out) == {}


def test_unknown_outcome_is_named() -> None:
    bad = frame("pp")
    bad.loc[1, "outcome"] = "weird"
    with pytest.raises(ValueError, match=r"^unknown outcome 'weird' \(expected one of inconclusive, pass, transport, "
                                         r"fail\)$"):
        round_status(bad)


def test_missing_columns_are_named() -> None:
    with pytest.raises(ValueError, match=r"^outcome frame lacks column\(s\) model, outcome$"):
        round_status(frame("p").drop(columns=["outcome", "model"]))
