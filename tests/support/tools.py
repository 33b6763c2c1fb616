"""What a test does when a tool it needs (a binary of a Debian package) is missing: skip with the reason, except on
CI (`CI=true`), where .ci/run installs every such tool and a missing one is a failure."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def tool_missing(why: str) -> NoReturn:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(why)
    pytest.skip(why)
