"""Timing helpers shared by ``pyasc demo`` and ``pyasc bench``."""

from __future__ import annotations

import importlib
import time
from typing import Any, Callable, List, Optional, Sequence

SETTLE_SECONDS = 0.2
"""Pause before each candidate's warm-up, so worker threads another library left spinning
(OpenMP, TBB, pyasc's launch team) have gone idle and do not compete with the next one."""

WARMUP_SECONDS = 0.05
"""Warm-up keeps calling for at least this long: memory that was just written (a fresh input,
a new output buffer) reads slowly for the first few passes on a virtual machine, and whichever
candidate ran first would otherwise pay for that alone."""


def best_time(fn: Callable[[], Any], repeat: int = 7, number: int = 1, warmup: int = 1) -> float:
    """Best wall time of ``fn`` in seconds over ``repeat`` rounds of ``number`` calls.

    Timing starts after a pause of ``SETTLE_SECONDS`` and ``warmup`` calls that also last at
    least ``WARMUP_SECONDS`` (neither if ``warmup`` is 0).
    """
    if warmup:
        time.sleep(SETTLE_SECONDS)
        began = time.perf_counter()
        done = 0
        while done < warmup or time.perf_counter() - began < WARMUP_SECONDS:
            fn()
            done += 1
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t) / number)
    return best


def best_times_alternating(fns: Sequence[Callable[[], Any]], repeat: int = 7) -> List[float]:
    """Best wall time in seconds of each of ``fns``, their calls taken in turn.

    For candidates whose times lie close together on a machine whose speed drifts (shared
    cores, a neighbour's memory traffic): round ``i`` times every candidate once, so each
    best comes from the same stretch of the machine's time. Each warms up as in
    :func:`best_time` first.
    """
    for fn in fns:
        best_time(fn, repeat=0)
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t)
    return best


def fmt_time(seconds: float) -> str:
    """Format a duration with a unit that keeps 3-4 significant digits."""
    if seconds < 1e-6:
        return f"{seconds * 1e9:.0f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def peer(name: str) -> Optional[Any]:
    """Return the peer module ``name``, or None when it is not installed (or broken)."""
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - a broken peer install is just an absent peer
        return None
