"""Sums and means over leading axes (the columns of a matrix) against float64 NumPy."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyasc
import pytest
from isa_support import run_under_isa


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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4096, 512), (777, 300), (20_000, 64), (130, 4100)])
def test_variances_over_columns_match_float64(dtype, shape):
    # A sum, deviations from it, then sums of those: phases that walk the matrix twice.
    rng = np.random.default_rng(shape[0])
    x = (rng.standard_normal(shape) * 3 + 1e4).astype(dtype)  # a large mean: the corrected two-pass matters
    x64 = x.astype(np.float64)
    for ddof in (0, 1):
        v = pyasc.operator(lambda a, d=ddof: np.var(a, axis=0, ddof=d))(x)
        s = pyasc.operator(lambda a, d=ddof: np.std(a, axis=0, ddof=d))(x)
        tol = 1e-4 if dtype == np.float32 else 1e-10
        np.testing.assert_allclose(v, x64.var(axis=0, ddof=ddof), rtol=tol)
        np.testing.assert_allclose(s, x64.std(axis=0, ddof=ddof), rtol=tol)


def test_mixed_column_programs_match_numpy():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3000, 200)).astype(np.float32)
    x64 = x.astype(np.float64)
    cases = {
        "centred squares": (lambda a: ((a - a.mean(axis=0)) ** 2).sum(axis=0),
                            ((x64 - x64.mean(axis=0)) ** 2).sum(axis=0)),
        "sum and mean": (lambda a: a.sum(axis=0) * 2.0 + a.mean(axis=0),
                         x64.sum(axis=0) * 2 + x64.mean(axis=0)),
        "scaled squares": (lambda a: (a * a * 0.5 + 1.0).sum(axis=0), (x64 * x64 * 0.5 + 1).sum(axis=0)),
        # float32 data summed in float64: the cast is computed again in the second walk.
        "float64 variance": (lambda a: np.var(a, axis=0, dtype=np.float64), x64.var(axis=0)),
        # Deviations from a mean read again after a later sum: they depend on a per-column
        # value, so this keeps the row path.
        "scaled deviations": (lambda a: ((a - a.mean(axis=0)) / ((a - a.mean(axis=0)) ** 2).sum(axis=0)).sum(axis=0),
                              ((x64 - x64.mean(axis=0)) / ((x64 - x64.mean(axis=0)) ** 2).sum(axis=0)).sum(axis=0)),
        # Not sums only: these keep the row path.
        "max": (lambda a: a.max(axis=0), x64.max(axis=0)),
        "softmax": (lambda a: np.exp(a - a.max(axis=0)) / np.exp(a - a.max(axis=0)).sum(axis=0),
                    np.exp(x64 - x64.max(axis=0)) / np.exp(x64 - x64.max(axis=0)).sum(axis=0)),
    }
    for name, (fn, want) in cases.items():
        got = pyasc.operator(fn)(x)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-4, err_msg=name)
    # Views: a column slice and reversed rows.
    for view in (x[:, 5:150], x[::-1]):
        np.testing.assert_allclose(pyasc.operator(lambda a: np.var(a, axis=0))(view),
                                   view.astype(np.float64).var(axis=0), rtol=1e-4)


def _extreme_op(fn):
    return pyasc.operator(lambda v: fn(v, axis=0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4096, 1024), (20_000, 70), (9000, 1500), (1, 300)])
def test_axis0_max_and_min_match_numpy_with_nan_and_inf(dtype, shape):
    rng = np.random.default_rng(sum(shape) + 1)
    x = (rng.standard_normal(shape) * 10 + 3).astype(dtype)
    # NaN in a few columns (first row, last row, a middle row), infinities in others.
    x[0, 1] = np.nan
    x[-1, shape[1] - 2] = np.nan
    x[shape[0] // 2, shape[1] // 2] = np.nan
    x[shape[0] // 3, 5] = np.inf
    x[shape[0] - 1, 6] = -np.inf
    saved = x.copy()
    for name in ("max", "min"):
        got = _extreme_op(getattr(np, name))(x)
        want = getattr(np, name)(x, axis=0)
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(x, saved)


def test_axis0_extremes_of_views_follow_by_row_instructions():
    rng = np.random.default_rng(11)
    y = rng.standard_normal((6000, 300)).astype(np.float32)
    for view in (y[:, 10:250], y[::-1], y[::3, ::-1]):
        np.testing.assert_array_equal(pyasc.operator(lambda v: v.max(axis=0))(view), view.max(axis=0))
    # Per-row instructions after the extreme (a range of each column) and keepdims.
    spread = pyasc.operator(lambda v: v.max(axis=0, keepdims=True) * 2.0 + 1.0)
    np.testing.assert_allclose(spread(y), y.max(axis=0, keepdims=True) * np.float32(2) + 1, rtol=1e-6)
    x3 = rng.standard_normal((64, 48, 80))
    np.testing.assert_array_equal(pyasc.operator(lambda v: v.min(axis=0))(x3), x3.min(axis=0))


@pytest.mark.parametrize("isa", ["avx2", "sse2", "scalar"])
def test_axis0_extremes_on_lower_isas(isa):
    script = (
        "import sys, numpy as np, pyasc\n"
        "x = np.random.default_rng(5).standard_normal((3000, 200)).astype(np.float32)\n"
        "x[7, 3] = np.nan; x[2999, 4] = np.nan\n"
        "out = [pyasc.operator(lambda v: f(v, axis=0))(x) for f in (np.max, np.min)]\n"
        "ok = all(np.array_equal(o, f(x, axis=0), equal_nan=True) for o, f in zip(out, (np.max, np.min)))\n"
        "sys.stdout.write(str(ok))\n"
    )
    assert run_under_isa(script, isa) == "True"
