"""The benchmark's timing helpers: what they call, in which order, and what they return."""

from __future__ import annotations

import time

from pyasc.tools import _timing


def test_alternating_best_times_take_turns_after_each_warm_up(monkeypatch):
    monkeypatch.setattr(_timing, "SETTLE_SECONDS", 0.0)
    monkeypatch.setattr(_timing, "WARMUP_SECONDS", 0.0)
    calls = []

    def slow():
        calls.append("slow")
        time.sleep(0.002)

    def fast():
        calls.append("fast")

    best = _timing.best_times_alternating([slow, fast], repeat=4)
    # One warm-up call each, then four rounds in turn.
    assert calls == ["slow", "fast"] + ["slow", "fast"] * 4
    assert len(best) == 2 and best[0] >= 0.002 > best[1] >= 0.0
