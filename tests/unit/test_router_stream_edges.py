"""The router's stream gate (provider_canary/router/stream.py) at its edges: an event past the probe's line cap but
within the gate's pending cap is an event like any other, in every phase; a BOM opens the stream only; the frames the
judge reads (`read_all`) include a finish that commits; the held preamble is let go at the commit."""

from __future__ import annotations

import pytest

from provider_canary.router import stream as g
from provider_canary.router.stream import MAX_PENDING_BYTES, Abort, Commit, FailOver, Finish, Gate, Phase, Send
from tasks.core.wire.sse import DEFAULT_MAX_LINE_BYTES, Chunk
from tests.unit.test_router_stream import DONE, HELLO, KEEPALIVE, STOP, chunk, client_bytes, run

pytestmark = pytest.mark.unit

BOM = b"\xef\xbb\xbf"
#: A text delta larger than the probe's line cap (1 MiB) and within the gate's pending cap (4 MiB).
BIG_TEXT = "x" * (DEFAULT_MAX_LINE_BYTES + 1024)
BIG = chunk({"content": BIG_TEXT})
BIG_STOP = chunk({"content": BIG_TEXT}, "stop")


def test_a_big_event_is_within_the_gates_cap() -> None:
    assert DEFAULT_MAX_LINE_BYTES < len(BIG_STOP) < MAX_PENDING_BYTES


def test_a_big_first_content_event_commits() -> None:
    gate, actions = run([KEEPALIVE, BIG, DONE])
    assert isinstance(actions[0], Commit) and actions[0].data == KEEPALIVE + BIG
    assert client_bytes(actions) == KEEPALIVE + BIG + DONE and gate.done


def test_a_big_finishing_event_after_the_commit_makes_the_answer_whole() -> None:
    # its finish_reason is read: the lost [DONE] is sent at EOF, not an abort
    _, actions = run([HELLO, BIG_STOP])
    assert actions[-2:] == [Send(g.DONE), Finish()]
    _, read = run([HELLO, BIG_STOP], read_all=True)  # the judge's way reads it too
    assert read[-2:] == [Send(g.DONE), Finish()]
    [frame] = read[1].frames  # type: ignore[union-attr]
    assert frame[0] == len(BIG_STOP) and isinstance(frame[1], Chunk)


def test_a_big_last_event_without_its_blank_line_is_read_at_eof() -> None:
    _, actions = run([BIG_STOP.rstrip(b"\n")])
    assert isinstance(actions[0], Commit) and actions[-2:] == [Send(g.DONE), Finish()]


def test_a_bom_before_a_last_event_without_its_blank_line_is_dropped_when_it_opens_the_stream() -> None:
    _, actions = run([BOM + HELLO.rstrip(b"\n")])
    assert isinstance(actions[0], Commit) and actions[0].data == BOM + HELLO


def test_a_bom_after_the_commit_is_no_sse_and_nothing_of_it_reaches_the_client() -> None:
    # a last piece that does not read whole is dropped: the client gets what it had and the stream's abort
    gate, actions = run([HELLO, BOM + STOP.rstrip(b"\n")])
    assert client_bytes(actions[:-1]) == HELLO and isinstance(actions[-1], Abort)
    assert gate.phase is Phase.CLOSED


def test_a_bom_before_the_last_piece_of_a_held_preamble_is_no_sse() -> None:
    _, actions = run([KEEPALIVE, BOM + HELLO.rstrip(b"\n")])
    assert [type(a) for a in actions] == [FailOver]


@pytest.mark.parametrize("fail_over_empty", [False, True], ids=["commit", "fail-over-empty"])
def test_an_empty_finish_commits_with_the_frames_it_held_and_lets_them_go(fail_over_empty: bool) -> None:
    length = chunk({"content": ""}, "length")  # an empty answer that says why: committed even when failing over
    gate, actions = g.feed(Gate(read_all=True, fail_over_empty=fail_over_empty), KEEPALIVE + length)
    [commit] = actions
    assert isinstance(commit, Commit) and commit.data == KEEPALIVE + length
    assert [size for size, _ in commit.frames] == [len(KEEPALIVE), len(length)]
    assert commit.frames[0][1] is None and isinstance(commit.frames[1][1], Chunk)
    assert (gate.phase, gate.held, gate.held_frames, gate.finished) == (Phase.COMMITTED, b"", (), True)


def test_a_content_commit_lets_the_held_frames_go() -> None:
    gate, actions = g.feed(Gate(read_all=True), KEEPALIVE + HELLO)
    assert isinstance(actions[0], Commit) and len(actions[0].frames) == 2
    assert (gate.phase, gate.held, gate.held_frames) == (Phase.COMMITTED, b"", ())
