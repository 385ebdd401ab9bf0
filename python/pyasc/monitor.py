"""Device monitoring in the spirit of ``npu-smi``: core utilization and temperature.

Utilization is measured by the executor itself: every kernel block records when it ran, and
:meth:`NpuUtilization.current` reports the share of the worker cores' time spent running
blocks. Temperature is read from the machine's hwmon / thermal-zone sensors when it has any.
:class:`profile` collects pyasc's event stream: compiler passes, kernel launches (run at once or
queued on streams), kernel blocks and stream tasks.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from . import _pyasc

__all__ = ["NpuTemperature", "NpuUtilization", "profile"]


class NpuUtilization:
    """Percent of the device's cores busy running pyasc kernels over a trailing window."""

    def __init__(self, window_s: float = 1.0) -> None:
        """Measure over the last ``window_s`` seconds (default one second)."""
        self.window_s = float(window_s)

    def current(self) -> float:
        """Utilization in percent (0 to 100) over the last ``window_s`` seconds."""
        return _pyasc.utilization(self.window_s)

    def __repr__(self) -> str:
        return f"NpuUtilization(window_s={self.window_s})"


class NpuTemperature:
    """The machine's hottest temperature sensor, or ``None`` with a reason when it has none."""

    def __init__(self) -> None:
        """Create a reader; ``reason`` stays empty until a reading fails."""
        self.reason: str = ""

    def current(self) -> Optional[float]:
        """Degrees Celsius, or ``None`` when no sensor can be read (see :attr:`reason`)."""
        celsius, why = _pyasc.temperature()
        self.reason = why or ""
        return celsius

    def __repr__(self) -> str:
        return "NpuTemperature()"


class profile:
    """Collect pyasc's events while the ``with`` block runs.

    ``with pyasc.profile() as p: ...`` then ``p.events`` holds one dict per event, ordered by
    start: ``kind`` (``"pass"``, ``"kernel"``, ``"block"`` or ``"task"``), ``name``, ``start_ns``,
    ``end_ns``, ``micros``, ``thread``, ``stream`` (the stream whose worker ran it, or ``None``),
    ``counters`` (a kernel's ``elements``, ``tiles``, ``blocks``) and ``notes``. Work queued on
    streams is recorded once it has run: synchronise inside the block. :meth:`save_chrome_trace`
    writes them for ``chrome://tracing`` or Perfetto.
    """

    def __init__(self) -> None:
        """Create a profiler; collection starts on entering the ``with`` block."""
        self.events: List[Dict[str, Any]] = []
        self._collector: Any = None

    def __enter__(self) -> profile:
        self._collector = _pyasc.EventCollector()
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.events = self._collector.finish()
        self._collector = None
        return False

    def kernels(self) -> List[Dict[str, Any]]:
        """Return the kernel events (one per kernel of every launch)."""
        return [e for e in self.events if e["kind"] == "kernel"]

    def chrome_trace(self) -> Dict[str, Any]:
        """Return the events in the Chrome trace format (``chrome://tracing``, Perfetto).

        Each event is a complete event (``"ph": "X"``) in microseconds, one row per thread,
        with its kind as category and its stream and counters as arguments.
        """
        trace = []
        for e in self.events:
            args: Dict[str, Any] = dict(e["counters"])
            if e["stream"] is not None:
                args["stream"] = e["stream"]
            if e["notes"]:
                args["notes"] = e["notes"]
            trace.append({"name": e["name"], "cat": e["kind"], "ph": "X", "pid": 0, "tid": e["thread"],
                          "ts": e["start_ns"] / 1e3, "dur": (e["end_ns"] - e["start_ns"]) / 1e3, "args": args})
        return {"traceEvents": trace, "displayTimeUnit": "ns"}

    def save_chrome_trace(self, path: str) -> None:
        """Write :meth:`chrome_trace` as JSON to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.chrome_trace(), f)

    def __repr__(self) -> str:
        return f"profile({len(self.events)} events)"
