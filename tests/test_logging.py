"""DEBUG logging shows the trace, every pass, fusion decisions and kernel launches with times."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import numpy as np
import pyasc


def test_debug_log_shows_trace_passes_fusion_and_launches(caplog):
    pyasc.set_log_level("DEBUG")
    try:
        with caplog.at_level(logging.DEBUG, logger="pyasc"):
            @pyasc.operator(device_type="npu")
            def gelu(x):
                return x * 0.5 * (1.0 + pyasc.erf(x / 1.41421))

            gelu(np.ones(100000, np.float32))
    finally:
        pyasc.set_log_level("WARNING")
    text = caplog.text
    assert "NPU twin" in text
    assert "trace of gelu" in text and "erf(" in text
    for p in ("promote", "fold", "cse", "dce", "fuse", "lower"):
        assert f"pass {p}:" in text
    assert "kernel 0: anchors" in text and "5 ops fused" in text
    assert "launch gelu_k0: 100000 elements" in text and " us" in text
    assert "compiled gelu for (float32[100000])" in text


def test_quiet_by_default(caplog):
    with caplog.at_level(logging.DEBUG, logger="pyasc"):
        pyasc.operator(lambda x: x + 1)(np.ones(4))
    assert "launch" not in caplog.text


def test_pyasc_log_environment_variable():
    code = "import numpy as np, pyasc; pyasc.operator(lambda x: x * 2)(np.ones(3))"
    env = dict(os.environ, PYASC_LOG="DEBUG")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pass fuse:" in out.stderr and "launch " in out.stderr
