"""bfloat16 (ml_dtypes', the NumPy bfloat16 of JAX): stored in 16 bits, computed in float32 lanes,
rounded once where stored, promoted as ml_dtypes and JAX promote it."""

import ml_dtypes
import numpy as np
import pyasc
import pytest

BF16 = np.dtype(ml_dtypes.bfloat16)
EPS = float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps)
rng = np.random.default_rng(7)
X = (rng.standard_normal((33, 70)) * 3).astype(BF16)
Y = (rng.standard_normal((33, 70)) + 0.5).astype(BF16)

OPS = {
    "add": (lambda a, b: a + b, 1),
    "div": (lambda a, b: a / b, 1),
    "exp": (lambda a, b: np.exp(a / 4), 1),
    "tanh": (lambda a, b: np.tanh(a), 1),
    "transpose": (lambda a, b: a.T, 0),
    "element": (lambda a, b: a[3, 7] * 2 + b[0, 1], 1),
    "sum": (lambda a, b: a.sum(axis=-1), 1),
    "max": (lambda a, b: a.max(axis=0), 0),
    "where": (lambda a, b: np.where(a > b, a, b), 0),
    "gelu": (lambda a, b: a * 0.5 * (1.0 + np.tanh(0.79788456 * (a + 0.044715 * a**3))), 2),
    "matmul": (lambda a, b: (a @ b.T) / 16, 2),
    "from_float32": (lambda a, b: (a.astype(np.float32) / 3).astype(BF16), 1),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_ops_are_within_bfloat16_rounding_of_float64(name):
    fn, ulps = OPS[name]
    want = fn(X.astype(np.float64), Y.astype(np.float64))
    got = pyasc.operator(fn)(X, Y)
    assert got.dtype == BF16 and got.shape == np.shape(want)
    scale = np.maximum(np.abs(want), np.abs(want).max() * 1e-2)
    err = np.abs(got.astype(np.float64) - want) / scale
    # One rounding to bfloat16 is half an ulp; float32 computation adds nothing visible.
    assert err.max() <= max(ulps, 0.5) * EPS, (name, float(err.max()))


@pytest.mark.parametrize("other", [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.float16, np.float32,
                                   np.float64, BF16], ids=lambda d: np.dtype(d).name)
def test_promotion_follows_ml_dtypes(other):
    b = np.ones(3, other)
    want = np.result_type(BF16, b.dtype)
    got = pyasc.operator(lambda p, q: p + q)(X[0, :3], b)
    assert got.dtype == want
    np.testing.assert_allclose(got.astype(np.float64), X[0, :3].astype(np.float64) + 1, rtol=EPS)


def test_sums_accumulate_in_float32():
    x = np.full(4096, 0.1, BF16)
    got = pyasc.operator(lambda v: v.sum())(x)
    assert got.dtype == BF16
    assert got == np.asarray(x.astype(np.float64).sum()).astype(BF16)


def test_device_arrays_hold_bfloat16():
    d = pyasc.to_device(X)
    assert d.dtype == BF16
    np.testing.assert_array_equal(pyasc.operator(lambda v: v * 2)(d).numpy(), (X.astype(np.float32) * 2).astype(BF16))
