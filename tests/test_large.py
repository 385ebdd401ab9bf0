"""Large launches: outputs big enough to be streamed past the caches (odd lengths, so the
last tile is partial and unaligned), a row-broadcast operand read in place over many tiles,
and reductions over long rows; each against a float64 NumPy reference."""

from __future__ import annotations

import math

import numpy as np
import pyasc
from conftest import assert_matches

_erf = np.vectorize(math.erf, otypes=[np.float64])


def test_streamed_outputs_match_numpy():
    n = (33 << 20) // 4 + 13  # more than 32 MiB of float32 output
    x = np.random.default_rng(5).standard_normal(n).astype(np.float32)
    keep = x.copy()
    scaled = pyasc.operator(lambda t: t * 1.5 + 1.0)(x)
    assert_matches(scaled, (x * np.float32(1.5) + np.float32(1.0)))
    two = pyasc.operator(lambda t: (t * 2.0, t - 1.0))(x)
    assert_matches(two[0], x * np.float32(2.0))
    assert_matches(two[1], x - np.float32(1.0))
    np.testing.assert_array_equal(x, keep)


def test_streamed_gelu_against_float64():
    n = (32 << 20) // 4 + 1001
    x = np.random.default_rng(6).standard_normal(n).astype(np.float32) * 3
    got = pyasc.operator(lambda t: t * 0.5 * (1.0 + pyasc.erf(t / 1.41421)))(x)
    step = 997  # a float64 erf of every element is slow in Python; check a strided sample
    xs = x[::step].astype(np.float64)
    ref = (xs * 0.5 * (1.0 + _erf(xs / np.float32(1.41421).astype(np.float64))))
    assert got.dtype == np.float32 and got.shape == x.shape
    # 1 + erf(...) cancels for negative x in float32 (as in NumPy), so the error bound is
    # absolute in |x|: a few float32 roundings of values up to |x|.
    eps = np.finfo(np.float32).eps
    err = np.abs(got[::step].astype(np.float64) - ref)
    assert np.all(err <= 4 * eps * np.maximum(np.abs(xs), 1e-30)), err.max()


def test_row_broadcast_operand_over_many_tiles():
    x = np.random.default_rng(7).standard_normal((3001, 1024)).astype(np.float32)
    b = np.random.default_rng(8).standard_normal(1024).astype(np.float32)
    got = pyasc.operator(lambda t, s, c: (t - c) * s)(x, 1.5, b)
    assert_matches(got, (x - b) * np.float32(1.5))
    # A transposed view is not C order: it is gathered, with the same result.
    xt = np.ascontiguousarray(x[:1024].T)
    assert_matches(pyasc.operator(lambda t, c: t - c)(xt.T, b), x[:1024] - b)


def test_long_row_max_and_sum():
    x = np.random.default_rng(9).standard_normal((64, 100_003)).astype(np.float32)
    x[5, 77_777] = np.nan
    x[9, 3] = np.inf
    mx = pyasc.operator(lambda t: t.max(axis=1))(x)
    assert_matches(mx, x.max(axis=1))
    s = pyasc.operator(lambda t: t.sum(axis=1))(x)
    ref = x.astype(np.float64).sum(axis=1)
    fin = np.isfinite(ref)
    np.testing.assert_allclose(s[fin].astype(np.float64), ref[fin], rtol=2e-7, atol=1e-6)
    assert np.isnan(s[5]) and np.isposinf(s[9])
