"""CANARY_DEBUG: every command prints one line on an error; with CANARY_DEBUG set, the traceback too."""

from __future__ import annotations

import os
import traceback


def debug_enabled() -> bool:
    """CANARY_DEBUG set to anything but empty, 0, false or no."""
    return os.environ.get("CANARY_DEBUG", "").strip().lower() not in ("", "0", "false", "no")


def traceback_if_debug() -> None:
    """Print the exception being handled, above the one-line error, when CANARY_DEBUG is set."""
    if debug_enabled():
        traceback.print_exc()
