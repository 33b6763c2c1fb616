"""The allocators' arenas, capped for the processes the canary runs (issue 32).

glibc's malloc gives each thread that allocates concurrently an arena of its own (up to 8 per core) and keeps
their freed pages: a cycle's threads (rounds, the store, Prefect's services) left a flow process ~90 MB larger
than the same work with two arenas, and growing with the catalog, for no speed measured. Arrow (pandas 3 keeps
its strings in pyarrow arrays; the store inserts rows through Arrow tables) allocates from its own mimalloc pool
by default, a heap per thread that allocates: with a round thread per model in flight it held ~100 MB more than
the same work on glibc's capped arenas (165 MB resident of mimalloc's 1 GiB reservation at 32 rounds in flight).
So:

* `cap_arenas()` caps this process (glibc's `mallopt(M_ARENA_MAX)`; the `canary` command calls it first, before
  its threads start, and a cycle's flow run at its start) and sets `MALLOC_ARENA_MAX` in its environment, so
  every process it starts (the probe worker, a private Prefect server, a served deployment's flow runs) starts
  capped; unless `MALLOC_ARENA_MAX` is already set (the operator's value wins: glibc read it at start);
* it also points Arrow at the system allocator (`ARROW_DEFAULT_MEMORY_POOL=system`, read when Arrow is loaded,
  so this process and its children; a process that loaded pyarrow before, a deployment's flow run, gets
  `pyarrow.set_memory_pool` instead), unless the operator set `ARROW_DEFAULT_MEMORY_POOL`;
* `capped_env(env)` is the environment for a child started with an environment of its own (the probe worker).

Elsewhere than glibc both do nothing harmful: `cap_arenas` returns False, the variable is ignored.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping

ENV = "MALLOC_ARENA_MAX"
#: Arenas per process: one for the main thread, one shared by the others.
ARENAS = 2
_M_ARENA_MAX = -8  # glibc malloc.h
ARROW_POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"
#: Arrow's pool: malloc's, on the arenas capped above (its default, mimalloc, keeps a heap per thread).
ARROW_POOL = "system"


def capped_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` for a child process: `MALLOC_ARENA_MAX` and `ARROW_DEFAULT_MEMORY_POOL` kept if set, else
    `ARENAS` and `ARROW_POOL`."""
    out = dict(env)
    if not out.get(ENV, "").strip():
        out[ENV] = str(ARENAS)
    if not out.get(ARROW_POOL_ENV, "").strip():
        out[ARROW_POOL_ENV] = ARROW_POOL
    return out


def cap_arenas() -> bool:
    """Cap this process's arenas to `ARENAS` and its children's, and put Arrow on the system allocator (module
    docstring); True when glibc took the cap (False too when the operator's `MALLOC_ARENA_MAX` already applies)."""
    _arrow_on_system_pool()
    if os.environ.get(ENV, "").strip():
        return False
    os.environ[ENV] = str(ARENAS)
    try:
        return bool(ctypes.CDLL(None).mallopt(_M_ARENA_MAX, ARENAS))  # the process's own symbols: libc's
    except (OSError, AttributeError):
        return False


def _arrow_on_system_pool() -> None:
    """`ARROW_DEFAULT_MEMORY_POOL=system` for this process and its children, unless the operator chose a pool; if
    pyarrow is loaded already (its default pool chosen at import), its Python-side default pool too."""
    if os.environ.get(ARROW_POOL_ENV, "").strip():
        return
    os.environ[ARROW_POOL_ENV] = ARROW_POOL
    pyarrow = sys.modules.get("pyarrow")
    if pyarrow is not None:
        try:
            pyarrow.set_memory_pool(pyarrow.system_memory_pool())
        except Exception:  # a pool it cannot switch to: Arrow's default stays, nothing breaks
            pass
