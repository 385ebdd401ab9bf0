"""``pyasc bench --roofs``: each workload's fraction of the memory roof, pyasc's and its peer's."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pyasc
from pyasc.bench import roofs as bench_roofs


def test_a_fraction_is_the_profiled_bytes_over_time_and_roof():
    x = np.ones((64, 1024), np.float32)
    op = pyasc.operator(lambda v: v * 2)
    calls = []
    seconds, fraction, theirs, peer_fraction = bench_roofs.measure(
        ("x * 2", op, (x,), lambda: calls.append(np.multiply(x, 2)), "numpy"), 4)
    # One float32 read and one written per element.
    moved = 2 * x.nbytes
    roof = pyasc.device.roofs.peaks()["triad_gbs"] * 1e9
    assert seconds > 0 and theirs > 0 and calls
    assert abs(fraction - moved / seconds / roof) <= 1e-9 * fraction
    assert abs(peer_fraction - moved / theirs / roof) <= 1e-9 * peer_fraction


def test_the_survey_prints_every_workload_and_marks_only_gaps():
    r = subprocess.run([sys.executable, "-m", "pyasc.cli", "bench", "--roofs", "--quick"], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [line for line in r.stdout.splitlines() if re.match(r"  [a-z_]+ +\d", line)]
    assert [line.split()[0] for line in lines] == [c[0] for c in bench_roofs._CASES]
    for line in lines:
        cells = line.split()
        mine, theirs = float(cells[2]), float(cells[5])
        assert mine > 0 and theirs > 0
        assert ("below 70%" in line) == (mine < bench_roofs.GOAL <= theirs)


def test_without_jax_numpy_is_the_peer_and_computes_the_same_values(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)  # `import jax` raises ImportError
    monkeypatch.setitem(sys.modules, "jax.numpy", None)
    for name, op, args, peer, peer_name in bench_roofs.workloads(quick=True):
        assert peer_name == "numpy"
        np.testing.assert_allclose(np.asarray(op(*args)), peer(), rtol=2e-4, atol=2e-4, err_msg=name)
