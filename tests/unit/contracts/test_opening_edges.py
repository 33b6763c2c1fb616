"""Edges of the corrupted-opening contract (tasks/core/contracts/opening.py) that test_opening.py's table does
not reach: whitespace before the opening, a two-dot ellipsis, a one-letter fragment, the first 16 characters,
the whole evidence line, the minimum replies and the peers' majority at their boundaries, and a round's own
free-text contracts."""

from __future__ import annotations

import pytest
from attempt_factory import attempt

from tasks.core.contracts import opening
from tasks.core.contracts.spec import PeerRound
from tasks.core.types import Attempt, Contract, Judgement, Outcome, Reason

pytestmark = pytest.mark.unit
BAD, GOOD = ",She smiles at you.", "She smiles at you."


@pytest.mark.parametrize(("text", "corrupted"), [
    ("\n  ,She smiles.", True), (".. and then she left.", False), ("s*He smiled.", True),
    ("*" * 15 + ",She", True), ("*" * 16 + ",She", False),
])
def test_openings_at_the_edges(text: str, corrupted: bool) -> None:
    assert opening.is_corrupted_opening(text) is corrupted


def replies(*texts: str, contract: str = Contract.TTFT, tag: str = "deepinfra/fp8") -> list[Attempt]:
    return [attempt(contract, text=t, attempt_no=i + 1, tag=tag) for i, t in enumerate(texts)]  # type: ignore[arg-type]


def test_the_evidence_line_whole() -> None:
    assert opening.judge_endpoint(replies("  " + BAD + "  ", BAD, GOOD)) == Judgement(
        Outcome.FAIL, Reason.CORRUPTED_OPENING, "corrupted openings (2/3) e.g. ',She smiles ' > 50%")
    assert opening.judge_endpoint(replies(GOOD, GOOD)) == Judgement(Outcome.PASS, Reason.OK,
                                                                   "corrupted openings (0/2)")


def test_two_replies_are_enough_and_a_rounds_own_text_contracts_count() -> None:
    assert opening.judge_endpoint(replies(BAD, BAD)).outcome is Outcome.FAIL
    poems = replies(BAD, BAD, contract="poetry")
    assert opening.judge_endpoint(poems, frozenset({"poetry"})).outcome is Outcome.FAIL
    assert opening.judge_endpoint(poems).reason == Reason.FEW_REPLIES


@pytest.mark.parametrize(("failing", "passing", "suspect"), [(2, 1, True), (2, 2, False), (1, 2, False)])
def test_the_prompt_is_suspect_when_most_of_at_least_three_endpoints_fail(failing: int, passing: int,
                                                                        suspect: bool) -> None:
    per_tag = {f"f{i}": replies(BAD, BAD, contract="poetry", tag=f"f{i}") for i in range(failing)}
    per_tag |= {f"p{i}": replies(GOOD, GOOD, contract="poetry", tag=f"p{i}") for i in range(passing)}
    peers = PeerRound(attempts=per_tag, judged={}, text_contracts=frozenset({"poetry"}))
    got = opening.judge_peers(peers, None)  # type: ignore[arg-type]
    total = failing + passing
    if suspect:
        assert got["f0"] == Judgement(Outcome.INCONCLUSIVE, Reason.PROMPT_SUSPECT,
                                      f"corrupted openings (2/2) e.g. ',She smiles ' > 50%; endpoints failing "
                                      f"({failing}/{total})")
    else:
        assert got["f0"].outcome is Outcome.FAIL
    assert got["p0"].outcome is Outcome.PASS
