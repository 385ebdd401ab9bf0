"""Sums and means over leading axes (the columns of a matrix) against float64 NumPy."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyasc
import pytest


def _ref(x, axis, mean=False):
    r = x.astype(np.float64).sum(axis=axis)
    return r / np.prod([x.shape[a] for a in np.atleast_1d(axis)]) if mean else r


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4096, 1024), (300, 4100), (20_000, 70), (3, 2000), (9000, 1500)])
def test_axis0_sum_and_mean_match_float64(dtype, shape):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 10 + 3).astype(dtype)
    saved = x.copy()
    s = pyasc.operator(lambda v: v.sum(axis=0))(x)
    m = pyasc.operator(lambda v: np.mean(v, axis=0))(x)
    np.testing.assert_array_equal(x, saved)
    tol = 2e-6 if dtype == np.float32 else 1e-12
    scale = np.abs(x.astype(np.float64)).sum(axis=0)
    assert s.dtype == dtype and m.dtype == dtype and s.shape == (shape[1],)
    assert np.all(np.abs(s - _ref(x, 0)) <= tol * scale)
    assert np.all(np.abs(m - _ref(x, 0, mean=True)) <= tol * scale / shape[0])


def test_leading_axes_of_views_and_higher_ranks():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 48, 80)).astype(np.float32)
    op = pyasc.operator(lambda v: v.sum(axis=0))
    np.testing.assert_allclose(op(x), _ref(x, 0), rtol=1e-5, atol=1e-4)
    # Column slices, reversed rows and a strided view read through the same path.
    y = rng.standard_normal((5000, 300)).astype(np.float32)
    for view in (y[:, 10:250], y[::-1], y[::3, ::-1], y[:, :64]):
        np.testing.assert_allclose(op(view), _ref(view, 0), rtol=1e-5, atol=1e-3)
    keep = pyasc.operator(lambda v: v.sum(axis=0, keepdims=True) * 2.0)
    np.testing.assert_allclose(keep(y), 2 * _ref(y, 0)[None], rtol=1e-5, atol=1e-3)


def test_threads_do_not_change_the_result():
    script = (
        "import sys, numpy as np, pyasc\n"
        "x = np.random.default_rng(3).standard_normal((40_000, 256)).astype(np.float32)\n"
        "sys.stdout.write(pyasc.operator(lambda v: v.sum(axis=0))(x).tobytes().hex())\n"
    )
    runs = []
    for threads in ("1", "2"):
        env = dict(os.environ, PYASC_NUM_THREADS=threads)
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        runs.append(np.frombuffer(bytes.fromhex(out.stdout), dtype=np.float32))
    np.testing.assert_array_equal(runs[0], runs[1])
    x = np.random.default_rng(3).standard_normal((40_000, 256)).astype(np.float32)
    np.testing.assert_allclose(runs[0], _ref(x, 0), rtol=1e-6, atol=1e-3)
