"""The event stream: passes, kernels, blocks and stream tasks on every launch path."""

from __future__ import annotations

import logging

import numpy as np
import pyasc


def test_sync_launch_records_passes_kernels_and_blocks():
    op = pyasc.operator(lambda v: v * 2.0 + 1.0, kernel_name="ev_sync")
    x = np.arange(50_000, dtype=np.float32)
    with pyasc.profile() as p:
        y = op(x)
    np.testing.assert_array_equal(y, x * 2 + 1)
    kinds = {e["kind"] for e in p.events}
    assert {"pass", "kernel", "block"} <= kinds
    assert [e["name"] for e in p.events if e["kind"] == "pass"][:3] == ["precision", "attention", "promote"]
    (k,) = [e for e in p.kernels() if e["name"].startswith("ev_sync")]
    assert k["counters"]["elements"] == 50_000 and k["stream"] is None
    assert all(e["start_ns"] <= e["end_ns"] for e in p.events)
    assert p.events == sorted(p.events, key=lambda e: (e["start_ns"], e["thread"]))


def test_device_array_launch_kernel_stats_are_visible():
    op = pyasc.operator(lambda v: v * 3.0, kernel_name="ev_async")
    x = pyasc.to_device(np.arange(1000, dtype=np.float32))
    op(x)  # compile outside the profile
    pyasc.synchronize()
    s = pyasc.Stream()
    with pyasc.profile() as p:
        with pyasc.stream(s):
            y = op(x)
        pyasc.synchronize()
    np.testing.assert_array_equal(y.numpy(), np.arange(1000, dtype=np.float32) * 3)
    (k,) = [e for e in p.kernels() if e["name"].startswith("ev_async")]
    assert k["stream"] == s.id and k["counters"]["elements"] == 1000 and k["micros"] >= 0
    tasks = [e for e in p.events if e["kind"] == "task" and e["name"] == "ev_async"]
    assert len(tasks) == 1 and tasks[0]["start_ns"] <= k["start_ns"] <= k["end_ns"] <= tasks[0]["end_ns"]
    assert not any(e["kind"] == "pass" for e in p.events)


def test_device_array_launch_is_logged_at_debug(caplog):
    op = pyasc.operator(lambda v: v + 1.0, kernel_name="ev_log")
    x = pyasc.to_device(np.ones(64, np.float32))
    pyasc.set_log_level("DEBUG")
    try:
        with caplog.at_level(logging.DEBUG, logger="pyasc"):
            y = op(x)
            y.numpy()
    finally:
        pyasc.set_log_level("WARNING")
    assert "launch ev_log_k0: 64 elements" in caplog.text


def test_nothing_is_collected_outside_a_profile():
    op = pyasc.operator(lambda v: v - 1.0, kernel_name="ev_none")
    op(np.ones(8, np.float32))
    with pyasc.profile() as p:
        pass
    assert not [e for e in p.events if e["name"].startswith("ev_none")]


def test_chrome_trace_export(tmp_path):
    import json

    op = pyasc.operator(lambda v: v * 0.5, kernel_name="ev_chrome")
    with pyasc.profile() as p:
        op(np.ones(100, np.float32))
    path = tmp_path / "trace.json"
    p.save_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    (k,) = [e for e in trace if e["name"] == "ev_chrome_k0" and e.get("cat") == "kernel"]
    assert k["ph"] == "X" and k["dur"] >= 0 and k["args"]["elements"] == 100
    assert any(e.get("cat") == "pass" and e["name"] == "fuse" for e in trace)
