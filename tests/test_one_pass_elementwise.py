"""Elementwise kernels of several instructions run as one assembled pass on AVX-512 and as one
pass per instruction elsewhere: both give NumPy's float32/float64/int32 results bit for bit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
from conftest import supported_isas

# Sizes: below one tile, several tiles with a ragged end, and enough for both threads.
SIZES = (37, 5000, 1 << 18 | 13)

_SCRIPT = r"""
import json, sys
import numpy as np
import pyasc
from pyasc.bench.vectorized import piecewise as scalar_piecewise

piecewise = pyasc.vectorized_operator(scalar_piecewise)  # if/elif/else with math.sqrt

@pyasc.operator
def mixed(x, y, c):
    t = x * y - c
    return np.where(t > 0.25, t * t, np.sqrt(np.abs(t)) + x)

@pyasc.operator
def ints(a, b):
    return np.where(a < b, a * b - 3, a + b * 2)

out = {}
for n in json.loads(sys.argv[2]):
    rng = np.random.default_rng(n)
    x = rng.uniform(-4, 4, n).astype(np.float32)
    x[::97] = np.nan
    x[5::101] = np.inf
    y = rng.uniform(-2, 2, 2 * n).astype(np.float32)[::2]  # strided: gathered per tile
    out[f"piecewise{n}"] = piecewise(x)
    out[f"mixed32_{n}"] = mixed(x, y, np.float32(0.5))
    out[f"mixed64_{n}"] = mixed(x.astype(np.float64), y.astype(np.float64), 0.5)
    for i, c in enumerate((0.5, -1.25)):  # a broadcast argument: its value changes between launches
        out[f"bcast{i}_{n}"] = mixed(x, y, np.full((1,), c, np.float32))
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(-1000, 1000, n).astype(np.int32)
    out[f"ints{n}"] = ints(a, b)
np.savez(sys.argv[1], **out)
"""


def _run(tmp_path, isa: str) -> dict:
    path, script = tmp_path / f"{isa}.npz", tmp_path / "one_pass.py"  # operators defined in a file
    script.write_text(_SCRIPT)
    env = {**os.environ, "PYASC_ISA": isa}
    proc = subprocess.run([sys.executable, str(script), str(path), json.dumps(SIZES)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return dict(np.load(path))


def _want(n: int) -> dict:
    """The same functions in NumPy, operation by operation in the arguments' dtype."""
    rng = np.random.default_rng(n)
    x = rng.uniform(-4, 4, n).astype(np.float32)
    x[::97] = np.nan
    x[5::101] = np.inf
    y = rng.uniform(-2, 2, 2 * n).astype(np.float32)[::2]
    with np.errstate(invalid="ignore"):
        one, half = np.float32(1), np.float32(0.5)
        pw = np.where(x < -one, -one - half * (x + one), np.where(x < one, x * x * x, np.sqrt(x)))
        out = {f"piecewise{n}": pw}
        for tag, (xx, yy, c) in {"32": (x, y, np.float32(0.5)),
                                 "64": (x.astype(np.float64), y.astype(np.float64), 0.5)}.items():
            t = xx * yy - c
            out[f"mixed{tag}_{n}"] = np.where(t > 0.25, t * t, np.sqrt(np.abs(t)) + xx)
        for i, c in enumerate((0.5, -1.25)):
            t = x * y - np.full((1,), c, np.float32)
            out[f"bcast{i}_{n}"] = np.where(t > 0.25, t * t, np.sqrt(np.abs(t)) + x)
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(-1000, 1000, n).astype(np.int32)
    out[f"ints{n}"] = np.where(a < b, a * b - 3, a + b * 2)
    return out


def test_every_isa_gives_numpys_bits(tmp_path):
    want = {}
    for n in SIZES:
        want.update(_want(n))
    runs = {isa: _run(tmp_path, isa) for isa in supported_isas()}
    for isa, got in runs.items():
        for key, ref in want.items():
            assert got[key].dtype == ref.dtype, (isa, key, got[key].dtype, ref.dtype)
            assert np.array_equal(got[key], ref, equal_nan=True), (isa, key)
