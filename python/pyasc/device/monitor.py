"""Device monitoring in the spirit of ``npu-smi``: core utilization and temperature.

Utilization is measured by the executor itself: every kernel block records when it ran, and
:meth:`NpuUtilization.current` reports the share of the worker cores' time spent running
blocks. Temperature is read from the machine's hwmon / thermal-zone sensors when it has any.
:class:`profile` (defined in :mod:`pyasc.tools.profiler`) collects pyasc's event stream.
"""

from __future__ import annotations

from typing import Any, Optional

from .. import _pyasc

__all__ = ["NpuTemperature", "NpuUtilization"]


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


def __getattr__(name: str) -> Any:
    """Load ``profile`` from :mod:`pyasc.tools.profiler` on first use (the profiler is not imported with pyasc)."""
    if name == "profile":
        from ..tools.profiler import profile

        return profile
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
