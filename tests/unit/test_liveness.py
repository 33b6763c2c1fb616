"""tasks/runtime/liveness.py: a process is gone only when, on this host, its pid is free or now belongs to a process
started at another time; anything that cannot be judged is alive (a lease or the next run decides). Journals,
the cycle lock and alert claims all ask this one question."""

from __future__ import annotations

import pytest

from tasks.runtime.liveness import ProcessId, claim_is_dead, judged_gone

pytestmark = pytest.mark.unit

STARTS = {100: 5000, 200: 7777}


def gone(proc: ProcessId) -> bool:
    return judged_gone(proc, host="box", alive=lambda pid: pid in STARTS, start_of=STARTS.get)


@pytest.mark.parametrize(
    ("proc", "is_gone"),
    [
        (ProcessId(100, "box", 5000), False),  # the same process
        (ProcessId(100, "box", 4999), True),  # pid reused by a newer process
        (ProcessId(300, "box", 5000), True),  # no such process
        (ProcessId(100, "box", None), False),  # start time unknown: the pid alone
        (ProcessId(300, "other", 1), False),  # another host: cannot tell
    ],
)
def test_judged_gone(proc: ProcessId, is_gone: bool) -> None:
    assert gone(proc) is is_gone


@pytest.mark.parametrize("proc", [ProcessId(100, "box", 5000), ProcessId(7, "h|x", None), ProcessId(1, "b", None)])
def test_a_claim_names_its_process(proc: ProcessId) -> None:
    if "|" in proc.host:  # a host name never holds '|'; such a claim is malformed, and its lease decides
        assert ProcessId.from_claim(proc.as_claim()) is None
    else:
        assert ProcessId.from_claim(proc.as_claim()) == proc


@pytest.mark.parametrize("claim", [None, "", "garbage", "box|x|1", "box|1|y"])
def test_a_malformed_claim_is_never_dead(claim: str | None) -> None:
    assert ProcessId.from_claim(claim) is None and not claim_is_dead(claim)


def test_this_process_is_alive_and_a_reused_pid_is_not() -> None:
    me = ProcessId.current()
    assert not claim_is_dead(me.as_claim()) and not me.is_gone()
    if me.start is not None:
        assert claim_is_dead(ProcessId(me.pid, me.host, me.start + 1).as_claim())
