"""The allocator's arenas, capped for the processes the canary runs (issue 32).

glibc's malloc gives each thread that allocates concurrently an arena of its own (up to 8 per core) and keeps
their freed pages: a cycle's threads (rounds, the store, Prefect's services) left a flow process ~90 MB larger
than the same work with two arenas, and growing with the catalog, for no speed measured. So:

* `cap_arenas()` caps this process (glibc's `mallopt(M_ARENA_MAX)`; the `canary` command calls it first, before
  its threads start, and a cycle's flow run at its start) and sets `MALLOC_ARENA_MAX` in its environment, so
  every process it starts (the probe worker, a private Prefect server, a served deployment's flow runs) starts
  capped; unless `MALLOC_ARENA_MAX` is already set (the operator's value wins: glibc read it at start);
* `capped_env(env)` is the environment for a child started with an environment of its own (the probe worker).

Elsewhere than glibc both do nothing harmful: `cap_arenas` returns False, the variable is ignored.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping

ENV = "MALLOC_ARENA_MAX"
#: Arenas per process: one for the main thread, one shared by the others.
ARENAS = 2
_M_ARENA_MAX = -8  # glibc malloc.h


def capped_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` for a child process: `MALLOC_ARENA_MAX` kept if set, else `ARENAS`."""
    out = dict(env)
    if not out.get(ENV, "").strip():
        out[ENV] = str(ARENAS)
    return out


def cap_arenas() -> bool:
    """Cap this process's arenas to `ARENAS` and its children's (module docstring); True when glibc took it
    (False too when the operator's `MALLOC_ARENA_MAX` already applies)."""
    if os.environ.get(ENV, "").strip():
        return False
    os.environ[ENV] = str(ARENAS)
    try:
        return bool(ctypes.CDLL(None).mallopt(_M_ARENA_MAX, ARENAS))  # the process's own symbols: libc's
    except (OSError, AttributeError):
        return False
