"""Normalisation epilogues ``op1(a, b) * scale + shift`` run as one pass, bit-identical to NumPy.

NumPy evaluates each operation of the same expression on its own in the same dtype, so the
fused pass must match it exactly (no fused multiply-add, no reassociation).
"""

from __future__ import annotations

import numpy as np
import pyasc
import pytest


def _fused(op, *args) -> bool:
    prog = op.get_compiled_op(*args).tile_program(0)
    return "add(mul(" in prog and any(f"add(mul({f}(" in prog for f in ("add", "sub", "mul"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_epilogue_matches_numpy_bit_for_bit(dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((300, 257)) * 7 + 3).astype(dtype)
    m = rng.standard_normal(257).astype(dtype)
    s = rng.standard_normal(257).astype(dtype)
    b = rng.standard_normal(257).astype(dtype)
    saved = [a.copy() for a in (x, m, s, b)]
    for fn, want in [
        (lambda v, m, s, b: (v - m) * s + b, (x - m) * s + b),
        (lambda v, m, s, b: b + (v + m) * s, b + (x + m) * s),
        (lambda v, m, s, b: (v * m) * s + b, (x * m) * s + b),
        (lambda v, m, s, b: (v - m) * s + dtype(0.25), (x - m) * s + dtype(0.25)),
        (lambda v, m, s, b: (v - dtype(1.5)) * dtype(3) + b, (x - dtype(1.5)) * dtype(3) + b),
    ]:
        op = pyasc.operator(fn)
        got = op(x, m, s, b)
        assert _fused(op, x, m, s, b), op.get_compiled_op(x, m, s, b).tile_program(0)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)
    for a, before in zip((x, m, s, b), saved):
        np.testing.assert_array_equal(a, before)


def test_layer_norm_epilogue_is_fused_and_matches_its_own_unfused_steps():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((64, 1024)).astype(np.float32)
    w = rng.standard_normal(1024).astype(np.float32)
    b = rng.standard_normal(1024).astype(np.float32)
    op = pyasc.operator(lambda v, w, b: pyasc.layer_norm(v, w, b))
    got = op(x, w, b)
    assert _fused(op, x, w, b)
    # The same steps with the normalised value materialised: the epilogue alone differs.
    mean = x.astype(np.float64).mean(-1, keepdims=True).astype(np.float32)
    d = x - mean
    var = (d.astype(np.float64) ** 2).mean(-1, keepdims=True).astype(np.float32)
    r = np.float32(1) / np.sqrt(var + np.float32(1e-5))
    np.testing.assert_allclose(got, d * r * w + b, rtol=2e-6, atol=2e-6)
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_intermediates_read_twice_are_not_fused_and_stay_correct():
    rng = np.random.default_rng(3)
    x, m, s = (rng.standard_normal((128, 96)).astype(np.float32) for _ in range(3))
    op = pyasc.operator(lambda v, m, s: ((v - m) * s + m, (v - m) * s))
    got = op(x, m, s)
    t = (x - m) * s
    np.testing.assert_array_equal(got[0], t + m)
    np.testing.assert_array_equal(got[1], t)


def test_half_precision_keeps_its_own_path():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 80)).astype(np.float16)
    m, s, b = (rng.standard_normal(80).astype(np.float16) for _ in range(3))
    got = pyasc.operator(lambda v, m, s, b: (v - m) * s + b)(x, m, s, b)
    want = ((x.astype(np.float32) - m) * s + b).astype(np.float16)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=4e-3, atol=4e-3)
