"""When the round process may do its long CPU work (the detector build): after its first probe calls, once
it has sent none for a while (tasks/probe_worker.quiet_after_first_call)."""

from __future__ import annotations

import pytest

from tasks import probe_worker


def test_not_quiet_before_any_call_then_quiet_only_after_the_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(probe_worker.time, "monotonic", lambda: now[0])
    sent = probe_worker._SendTimes()
    monkeypatch.setattr(probe_worker, "_SENT", sent)
    assert not probe_worker.quiet_after_first_call(0.3)  # nothing sent yet: the probes are not out
    now[0] = 200.0
    assert not probe_worker.quiet_after_first_call(0.3)  # however long it waits
    sent.note()
    assert not probe_worker.quiet_after_first_call(0.3)
    now[0] = 200.2
    sent.note()  # still sending
    now[0] = 200.4
    assert not probe_worker.quiet_after_first_call(0.3)
    now[0] = 200.5
    assert probe_worker.quiet_after_first_call(0.3)
    assert sent.first == 200.0 and sent.last == 200.2
