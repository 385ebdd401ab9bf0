"""NpuUtilization and NpuTemperature: idle, under load from another thread, sensor or reason."""

from __future__ import annotations

import threading
import time

import numpy as np
import pyasc
import pytest


@pyasc.operator
def _heavy(x):
    y = np.sin(x)
    for _ in range(4):
        y = np.exp(np.sin(y) * 0.5) + np.sin(y * 1.3)
    return y


def _run_load(seconds: float, done: threading.Event, calls: list) -> None:
    x = np.linspace(-3.0, 3.0, 8 << 20)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        _heavy(x)
        calls.append(1)
    done.set()


def test_idle_utilization_is_about_zero():
    time.sleep(1.1)
    u = pyasc.NpuUtilization().current()
    assert isinstance(u, float)
    assert 0.0 <= u < 2.0, u


def test_utilization_is_high_under_load():
    # Warm up: compile and size the pool outside the measured loop.
    _heavy(np.linspace(-3.0, 3.0, 8 << 20))
    done, calls = threading.Event(), []
    worker = threading.Thread(target=_run_load, args=(1.5, done, calls))
    util = pyasc.NpuUtilization()
    worker.start()
    try:
        time.sleep(1.0)
        samples = [util.current()]
        while not done.wait(0.1):
            samples.append(util.current())
        samples.append(util.current())
    finally:
        worker.join()
    assert len(calls) >= 1
    assert max(samples) > 20.0, samples
    assert all(0.0 <= s <= 100.0 for s in samples), samples


def test_utilization_decays_after_load():
    _heavy(np.linspace(-3.0, 3.0, 1 << 22))
    time.sleep(1.1)
    assert pyasc.NpuUtilization().current() < 2.0


def test_window_must_be_positive():
    with pytest.raises(pyasc.InvalidArgumentError):
        pyasc.NpuUtilization(0.0).current()
    with pytest.raises(pyasc.InvalidArgumentError):
        pyasc.NpuUtilization(float("nan")).current()


def test_temperature_is_plausible_or_explained():
    t = pyasc.NpuTemperature()
    c = t.current()
    if c is None:
        assert t.reason.strip(), "None without a reason"
        assert "hwmon" in t.reason and "thermal" in t.reason
    else:
        assert isinstance(c, float) and 0.0 < c < 150.0, c
        assert t.reason == ""


def test_article_monitor_snippet(capsys):
    class NpuMonitor:
        def __init__(self):
            self.util = pyasc.NpuUtilization()
            self.temp = pyasc.NpuTemperature()

        def log_stats(self):
            print(f"Util: {self.util.current()}% | Temp: {self.temp.current()}°C")

    NpuMonitor().log_stats()
    out = capsys.readouterr().out
    assert out.startswith("Util: ") and "% | Temp: " in out and out.rstrip().endswith("°C")
