"""How the simulator plays a reply's timeline in wall time (provider_canary/simulator/player.py `ReplyPlayer._paced`):
short waits are pooled, so frames that fall due close together go out as one send, and the first text is never
early (the client measures TTFT on it)."""

from __future__ import annotations

import asyncio
import time

import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.player import _MIN_SLEEP_S, Mark, ReplyPlayer, Timeline

pytestmark = pytest.mark.unit


class _State:
    """What `_paced` reads of the app's state: the time scale and whether the server is stopping."""

    def __init__(self, time_scale: float) -> None:
        import threading

        self.time_scale = time_scale
        self.stopping = threading.Event()


class _Connected:
    async def is_disconnected(self) -> bool:
        return False


def _play(timeline: list[bytes | float | Mark], time_scale: float = 1.0) -> list[tuple[float, bytes]]:
    """(seconds since the start, bytes) of each send."""
    fleet = parse_fleet({"models": [{"id": "m/x", "endpoints": [{"tag": "a", "provider_name": "A"}]}]})
    player = ReplyPlayer(_State(time_scale), _Connected(), None, {}, fleet.models[0].endpoints[0], 0)  # type: ignore[arg-type]

    async def run() -> list[tuple[float, bytes]]:
        t0, sends = time.monotonic(), []
        it: Timeline = iter(timeline)
        async for data in player._paced(it):
            sends.append((time.monotonic() - t0, data))
        return sends

    return asyncio.run(run())


def test_frames_due_within_the_pooled_wait_go_out_as_one_send() -> None:
    step = _MIN_SLEEP_S / 10
    frames = [b"f%d" % i for i in range(30)]
    timeline: list[bytes | float | Mark] = [b"first", Mark.ON_TIME]
    for frame in frames:
        timeline += [step, frame]
    sends = _play(timeline)
    assert b"".join(data for _, data in sends) == b"first" + b"".join(frames)  # the same bytes, in order
    assert sends[0][1] == b"first"
    assert 2 <= len(sends) <= 5  # 30 frames, 3 pooled waits' worth: not 30 sends


def test_the_first_text_waits_for_the_pooled_waits_before_it() -> None:
    wait = _MIN_SLEEP_S / 2  # under the pooling threshold: a plain flush would send it early
    sends = _play([b": keep-alive\n\n", Mark.FLUSH, wait, b"text", Mark.ON_TIME, b"[DONE]"])
    assert [data for _, data in sends] == [b": keep-alive\n\n", b"text", b"[DONE]"]
    assert sends[0][0] < wait
    assert sends[1][0] >= wait * 0.95  # on time, not early


def test_a_long_wait_is_slept_and_what_came_before_it_is_not_held_back() -> None:
    sends = _play([b"a", 0.05, b"b"], time_scale=1.0)
    assert [data for _, data in sends] == [b"a", b"b"]
    assert sends[0][0] < 0.01 and sends[1][0] >= 0.045


def test_waits_are_scaled() -> None:
    sends = _play([b"a", 1.0, b"b"], time_scale=0.02)  # 1 simulated second at 0.02: 20 ms
    assert 0.018 <= sends[1][0] < 0.5
