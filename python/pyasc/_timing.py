"""Timing helpers shared by ``pyasc demo`` and ``pyasc bench``."""

from __future__ import annotations

import time
from typing import Any, Callable


def best_time(fn: Callable[[], Any], repeat: int = 7, number: int = 1, warmup: int = 1) -> float:
    """Best wall time of ``fn`` in seconds over ``repeat`` rounds of ``number`` calls (after warm-up)."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t) / number)
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
