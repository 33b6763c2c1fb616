"""A fixture for tests that check exact redaction output: the process-wide registry of secret values (filled
by whatever ran before in the same pytest process) is emptied for the test and given back after it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def fresh_secret_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from tasks.runtime import secrets

    monkeypatch.setattr(secrets, "_registered", set())
    monkeypatch.setattr(secrets, "_known_cache", None)
    for name in (*secrets.ENV_SECRETS, *secrets.ENV_URLS):
        monkeypatch.delenv(name, raising=False)
    yield
