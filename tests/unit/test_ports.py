"""tests/support/ports.py: a held port cannot be bound by anyone else until it is released, then it can at once."""

from __future__ import annotations

import socket

import pytest

from tests.support.ports import HeldPort

pytestmark = pytest.mark.unit


def _binds(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        s.listen()  # as a server would
        return True


def test_a_held_port_is_taken_until_released_then_free_at_once() -> None:
    held = HeldPort()
    assert not _binds(held.port)
    assert held.release() == held.port
    assert _binds(held.port)
    held.release()  # again: nothing
