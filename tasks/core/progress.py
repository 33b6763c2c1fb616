"""A cycle's progress line (pure): what `canary run` and the cycle's flow run log every few seconds.

    progress_line(37, 32, 100, 41.0, requests=(128, 640))
    -> 'cycle: 37/100 rounds done, 32 in flight, 128 requests out (640 waiting), 41 s in, ETA ~70 s'

The ETA is the pace so far carried over the rounds left: the rounds done took `elapsed_s`, so the rest takes
about `elapsed_s / done * (total - done)`. Rounds in a catalog are alike (one model's endpoints each), which is
what makes so plain an estimate good enough to plan by; before the first round is done there is none.
"""

from __future__ import annotations


def eta_s(done: int, total: int, elapsed_s: float) -> float | None:
    """Seconds left at the pace so far; None before any round is done, 0 when all are."""
    if done >= total:
        return 0.0
    if done <= 0 or elapsed_s <= 0:
        return None
    return elapsed_s / done * (total - done)


def progress_line(done: int, in_flight: int, total: int, elapsed_s: float,
                  requests: tuple[int, int] | None = None) -> str:
    """One line (module docstring); `requests`: (out in the probe worker, waiting for a slot)."""
    eta = eta_s(done, total, elapsed_s)
    parts = [f"cycle: {done}/{total} rounds done", f"{in_flight} in flight"]
    if requests is not None:
        out, waiting = requests
        parts.append(f"{out} requests out" + (f" ({waiting} waiting)" if waiting else ""))
    parts.append(f"{elapsed_s:.0f} s in")
    parts.append("ETA unknown yet" if eta is None else f"ETA ~{eta:.0f} s")
    return ", ".join(parts)
