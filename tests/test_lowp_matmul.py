"""Matrix products of bfloat16 and float16 arrays: the 16-bit operands are read as they are,
products and sums are float32, and the result is rounded to the 16-bit dtype where stored (or
kept in float32 by ``.astype(np.float32)``). Checked against NumPy float64 products of the
exactly converted inputs, on the fastest path and, in a subprocess, below AVX-512."""

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pyasc
import pytest

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
DTYPES = [BF16, F16]
U32 = 2.0**-24  # float32 unit roundoff

CASES = {
    "square": ((33, 70), (70, 20)),
    "odd": ((7, 257), (257, 33)),
    "one_by_one": ((1, 1), (1, 1)),
    "deep": ((100, 600), (600, 65)),
    "vec_mat": ((33,), (33, 7)),
    "mat_vec": ((7, 100), (100,)),
    "vec_vec": ((100,), (100,)),
    "batch": ((3, 17, 40), (40, 9)),
    "broadcast": ((2, 1, 5, 12), (3, 12, 7)),
}


def _data(shape, dtype, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _bound(a, b):
    """float64 product and the float32 summation bound ``2 k u sum|a b|`` per element."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    k = a.shape[-1]
    return a64 @ b64, 2 * k * U32 * (np.abs(a64) @ np.abs(b64)) + 1e-300


def _check(got, a, b, dtype):
    """``got`` (16-bit, or float32 when unrounded) against the float64 product of ``a @ b``."""
    want, tol = _bound(a, b)
    assert got.shape == want.shape
    g = got.astype(np.float64)
    if got.dtype != np.float32:
        assert got.dtype == dtype
        # One rounding to the 16-bit dtype: half an ulp of the float32 sum.
        eps = float(ml_dtypes.finfo(dtype).eps)
        tol = tol + 0.5 * eps * (np.abs(want) + tol) + float(ml_dtypes.finfo(dtype).smallest_subnormal)
    err = np.abs(g - want)
    assert (err <= tol).all(), (float(err.max()), float((err / tol).max()))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", sorted(CASES))
def test_products_match_float64_and_round_once(case, dtype):
    sa, sb = CASES[case]
    a, b = _data(sa, dtype, 1), _data(sb, dtype, 2)
    a0, b0 = a.copy(), b.copy()
    got = pyasc.operator(lambda x, y: x @ y)(a, b)
    _check(np.asarray(got), a, b, dtype)
    unrounded = pyasc.operator(lambda x, y: (x @ y).astype(np.float32))(a, b)
    assert np.asarray(unrounded).dtype == np.float32
    _check(np.asarray(unrounded), a, b, dtype)
    # The rounded result is the float32 one rounded once.
    np.testing.assert_array_equal(np.asarray(got), np.asarray(unrounded).astype(dtype))
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_transposed_and_strided_operands(dtype):
    a, b = _data((80, 41), dtype, 3), _data((66, 80), dtype, 4)
    fn = pyasc.operator(lambda x, y: (x.T @ y.T).astype(np.float32))
    _check(np.asarray(fn(a, b)), a.T, b.T, dtype)
    # Every other row, last first, of the left operand; every other column of a slice of the right one.
    fn = pyasc.operator(lambda x, y: (x[::-2] @ y[:, 3:30:2]).astype(np.float32))
    _check(np.asarray(fn(a.T, b.T)), a.T[::-2], b.T[:, 3:30:2], dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_operands_are_read_in_16_bits_by_one_kernel(dtype):
    a, b = _data((16, 24), dtype, 5), _data((24, 8), dtype, 6)
    compiled = pyasc.operator(lambda x, y: x @ y).get_compiled_op(a, b)
    ir = compiled.graph_ir()
    assert "matmul(%0, %1) : float32(16, 8)" in ir, ir
    assert "cast<float32>(%0)" not in ir and "cast<float32>(%1)" not in ir, ir
    assert len(compiled.kernels()) == 1
    # A float32 result is the float32 sums themselves: no rounding to 16 bits and back.
    ir32 = pyasc.operator(lambda x, y: (x @ y).astype(np.float32)).get_compiled_op(a, b).graph_ir()
    assert "matmul(%0, %1) : float32(16, 8)" in ir32 and "cast" not in ir32, ir32


def _gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.79788456 * (x + 0.044715 * x**3)))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_bias_and_activation_fuse_into_the_product(dtype):
    a, w, c = _data((37, 50), dtype, 7), _data((50, 29), dtype, 8), _data((29,), dtype, 9)
    op = pyasc.operator(lambda x, y, z: _gelu(x @ y + z))
    assert len(op.get_compiled_op(a, w, c).kernels()) == 1
    got = np.asarray(op(a, w, c))
    assert got.dtype == dtype
    prod, tol = _bound(a, w)
    want = _gelu(prod + c.astype(np.float64))
    eps = float(ml_dtypes.finfo(dtype).eps)
    # gelu's slope is below 1.13; float32 epilogue arithmetic adds a few ulp of float32.
    allowed = 1.13 * tol + 0.5 * eps * np.abs(want) + 1e-5 * (np.abs(prod) + 1)
    err = np.abs(got.astype(np.float64) - want)
    assert (err <= allowed).all(), float((err / allowed).max())


def test_large_products_run_in_pieces_with_the_same_bounds():
    # Above about 2e10 flops a product runs in blocks of rows and columns (a cancellation check
    # between them); a column-major right operand and a broadcast batch take the same path.
    a = _data((2, 2208, 2240), BF16, 12)
    b = _data((2304, 2240), BF16, 13).T
    got = pyasc.operator(lambda x, y: (x @ y).astype(np.float32))(a, b)
    _check(np.asarray(got), a, b, BF16)


def test_empty_inner_dimension_gives_zeros():
    a, b = np.zeros((3, 0), BF16), np.zeros((0, 4), BF16)
    got = np.asarray(pyasc.operator(lambda x, y: x @ y)(a, b))
    assert got.dtype == BF16 and got.shape == (3, 4)
    np.testing.assert_array_equal(got.astype(np.float32), np.zeros((3, 4), np.float32))


_FALLBACK = """
import sys
import ml_dtypes, numpy as np, pyasc
rng = np.random.default_rng(11)
out = []
for dt in (ml_dtypes.bfloat16, np.float16):
    for sa, sb in (((45, 300), (300, 70)), ((3, 7, 33), (33, 5)), ((9,), (9, 4))):
        a = rng.standard_normal(sa).astype(dt)
        b = rng.standard_normal(sb).astype(dt)
        r = pyasc.operator(lambda x, y: (x @ y).astype(np.float32))(a, b)
        t = pyasc.operator(lambda x, y: (x.T @ y.T).astype(np.float32))(a.T, b.T) if a.ndim == 2 else r
        out += [np.asarray(r).ravel(), np.asarray(t).ravel()]
sys.stdout.buffer.write(np.concatenate(out).astype(np.float32).tobytes())
"""


def test_fallback_below_avx512_matches_float64():
    env = {**os.environ, "PYASC_ISA": "avx2"}
    raw = subprocess.run([sys.executable, "-c", _FALLBACK], env=env, capture_output=True, check=True).stdout
    got = np.frombuffer(raw, np.float32)
    rng = np.random.default_rng(11)
    pos = 0
    for dt in (BF16, F16):
        for sa, sb in (((45, 300), (300, 70)), ((3, 7, 33), (33, 5)), ((9,), (9, 4))):
            a = rng.standard_normal(sa).astype(dt)
            b = rng.standard_normal(sb).astype(dt)
            shape = (np.zeros(sa, np.float32) @ np.zeros(sb, np.float32)).shape
            size = int(np.prod(shape))
            for _ in range(2):
                _check(got[pos:pos + size].reshape(shape), a, b, dt)
                pos += size
    assert pos == got.size
