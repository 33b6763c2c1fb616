"""`canary run --catalog`'s progress line (tasks/core/progress.py): rounds done, in flight, the probe requests out
and waiting, the ETA at the pace so far (issue 32.5)."""

from __future__ import annotations

import pytest

from tasks.core.progress import eta_s, progress_line


@pytest.mark.parametrize(("done", "total", "elapsed", "eta"), [
    (0, 100, 30.0, None),  # no round done: no pace yet
    (25, 100, 50.0, 150.0),  # 2 s a round, 75 left
    (100, 100, 200.0, 0.0),
    (3, 3, 0.0, 0.0),
])
def test_the_eta_is_the_pace_so_far_over_the_rounds_left(done: int, total: int, elapsed: float,
                                                         eta: float | None) -> None:
    assert eta_s(done, total, elapsed) == eta


def test_one_line_says_done_in_flight_requests_and_eta() -> None:
    assert progress_line(37, 32, 100, 41.0, requests=(128, 640)) == (
        "cycle: 37/100 rounds done, 32 in flight, 128 requests out (640 waiting), 41 s in, ETA ~70 s")
    assert progress_line(0, 4, 10, 2.0) == "cycle: 0/10 rounds done, 4 in flight, 2 s in, ETA unknown yet"
    assert "waiting" not in progress_line(5, 1, 10, 5.0, requests=(3, 0))
