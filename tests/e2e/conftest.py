"""e2e fixtures: every test starts without the operational Variable another test may have left behind."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def no_leftover_operational_variable(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "prefect_harness" not in request.fixturenames:
        return
    from prefect.variables import Variable

    from tasks.variable_sync import VARIABLE_NAME

    try:
        Variable.unset(VARIABLE_NAME)
    except Exception:
        pass
