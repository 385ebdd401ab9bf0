"""Every kind of op under every 16-bit policy, against float64 references.

Under ``force_*`` a float32 program's values are stored in the 16-bit type: its inputs are
rounded once, then computed in float32 lanes. Under ``mixed_*`` only the operands of matrix
products are rounded. So the reference is the same function in float64 on the inputs rounded
as the policy stores them, and the documented tolerance is float32's: results within
``TOL[kind]`` relative to the result's scale (8 float32 ulps for elementwise math, whose
float32 functions are within 4 ulps; 2e-6 for reductions, norms and matmul, which accumulate
in float32 over up to 256 terms).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pyasc
import pytest

EPS32 = float(np.finfo(np.float32).eps)
TOL = {"elementwise": 8 * EPS32, "accumulating": 2e-6, "exact": 0.0}
LOW = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16}

rng = np.random.default_rng(32)
X = (rng.standard_normal((24, 256)) * 2).astype(np.float32)
Y = (rng.standard_normal((24, 256)) + 3).astype(np.float32)
W = rng.standard_normal((256, 40)).astype(np.float32)

# name -> (function of (x, y, w), kind); w is only used by matrix products.
OPS = {
    "add": (lambda x, y, w: x + y, "elementwise"),
    "sub_mul": (lambda x, y, w: (x - y) * 1.5, "elementwise"),
    "div": (lambda x, y, w: x / y, "elementwise"),
    "pow": (lambda x, y, w: np.abs(x) ** 1.5, "elementwise"),
    "exp": (lambda x, y, w: np.exp(x / 2), "elementwise"),
    "log": (lambda x, y, w: np.log(np.abs(y) + 0.1), "elementwise"),
    "tanh": (lambda x, y, w: np.tanh(x), "elementwise"),
    "sin": (lambda x, y, w: np.sin(x), "elementwise"),
    "sqrt": (lambda x, y, w: np.sqrt(np.abs(y)), "elementwise"),
    "erf_gelu": (lambda x, y, w: x * 0.5 * (1.0 + pyasc.erf(x / 1.41421)), "elementwise"),
    "arctan2": (lambda x, y, w: np.arctan2(x, y), "elementwise"),
    "maximum": (lambda x, y, w: np.maximum(x, y - 3), "exact"),
    "where": (lambda x, y, w: np.where(x > 0, x, y), "exact"),
    "less": (lambda x, y, w: x < y - 3, "exact"),
    "argmax": (lambda x, y, w: x.argmax(axis=-1), "exact"),
    "max": (lambda x, y, w: x.max(axis=0), "exact"),
    "sum": (lambda x, y, w: x.sum(axis=-1), "accumulating"),
    "mean": (lambda x, y, w: (x * y).mean(axis=0), "accumulating"),
    "var": (lambda x, y, w: x.var(axis=-1), "accumulating"),
    "softmax": (lambda x, y, w: np.exp(x - x.max(-1, keepdims=True))
                / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True), "accumulating"),
    "layer_norm": (lambda x, y, w: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5),
                   "accumulating"),
    "matmul": (lambda x, y, w: x @ w, "accumulating"),
    "matmul_epilogue": (lambda x, y, w: np.maximum(x @ w + 0.5, 0.0), "accumulating"),
    "transpose_matmul": (lambda x, y, w: (w.T @ x.T).T, "accumulating"),
    "conv2d_relu": (lambda x, y, w: np.maximum(pyasc.conv2d(x.reshape(1, 24, 16, 16),
                                                            w.reshape(-1)[:1728].reshape(8, 24, 3, 3), padding=1), 0.0),
                    "accumulating"),
}

CUBE = {"matmul", "matmul_epilogue", "transpose_matmul", "conv2d_relu"}
MODES = ["force_fp16", "force_bf16", "mixed_fp16", "mixed_bf16"]


def stored(a, mode, cube):
    """``a`` as the policy stores it, in float64."""
    if mode == "fp32":
        return a.astype(np.float64)
    kind, low = mode.split("_")
    if kind == "force" or cube:
        return a.astype(LOW[low]).astype(np.float64)
    return a.astype(np.float64)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(OPS))
def test_op_under_policy_matches_float64_on_stored_inputs(name, mode):
    fn, kind = OPS[name]
    cube = name in CUBE
    want = fn(*(stored(a, mode, cube) for a in (X, Y, W)))
    got = pyasc.operator(precision_mode=mode)(fn)(X, Y, W)
    fp32 = fn(X, Y, W)
    # The policy never changes the result dtype.
    assert got.dtype == fp32.dtype and got.shape == fp32.shape
    if kind == "exact" or got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want.astype(got.dtype))
        return
    scale = max(float(np.abs(want).max()), 1e-30)
    err = float(np.abs(got.astype(np.float64) - want).max()) / scale
    assert err <= TOL[kind], (name, mode, err)


@pytest.mark.parametrize("mode", MODES)
def test_16_bit_inputs_keep_their_dtype_under_every_policy(mode):
    x16 = X.astype(np.float16)
    got = pyasc.operator(precision_mode=mode)(lambda v: np.exp(v / 4) + 1)(x16)
    assert got.dtype == np.float16
    want = np.exp(x16.astype(np.float64) / 4) + 1
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=float(np.finfo(np.float16).eps))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("mode", ["fp32", "force_bf16", "mixed_fp16"])
def test_quantised_integer_inputs(dtype, mode):
    q = rng.integers(0, 100, size=(16, 64)).astype(dtype)
    scale = np.float32(0.05)

    @pyasc.operator(precision_mode=mode)
    def dequant(q, s):
        return q.astype(np.float32) * s - 1.0

    got = dequant(q, scale)
    assert got.dtype == np.float32
    want = stored(q.astype(np.float32), mode, False) * stored(np.float32(0.05), mode, False) - 1.0
    np.testing.assert_allclose(got, want, rtol=4 * EPS32, atol=4 * EPS32)
