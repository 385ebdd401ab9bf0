"""float16 inputs and results: stored in 16 bits, computed in float32 lanes, rounded once where
stored (NumPy's value for a single op, closer to the exact value for a chain of them)."""

import numpy as np
import pyasc
import pytest

EPS16 = float(np.finfo(np.float16).eps)
rng = np.random.default_rng(16)
X = (rng.standard_normal((33, 130)) * 3).astype(np.float16)
Y = (rng.standard_normal((33, 130)) + 0.5).astype(np.float16)

SINGLE = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "neg": lambda a, b: -a,
    "abs": lambda a, b: np.abs(a),
    "exp": lambda a, b: np.exp(a / 2),
    "tanh": lambda a, b: np.tanh(a),
    "sqrt": lambda a, b: np.sqrt(np.abs(a)),
    "maximum": lambda a, b: np.maximum(a, b),
    "where": lambda a, b: np.where(a > b, a, b),
    "scalar": lambda a, b: a * 0.1,
    "transpose": lambda a, b: a.T,
    "copy": lambda a, b: a,
    "element": lambda a, b: a[3, 7] * 2 + b[0, 1],
    "reshape": lambda a, b: a.reshape(130, 33),
    "max": lambda a, b: a.max(axis=-1),
    "argmin": lambda a, b: a.argmin(axis=0),
    "less": lambda a, b: a < b,
    "isfinite": lambda a, b: np.isfinite(a / b),
    "to_int8": lambda a, b: a.astype(np.int8),
    "from_f64": lambda a, b: (a.astype(np.float64) / 3).astype(np.float16),
}


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_single_ops_give_numpys_float16_values(name):
    fn = SINGLE[name]
    want = fn(X, Y)
    got = pyasc.operator(fn)(X, Y)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype == np.float16:
        # Both round the float32 value once; their float32 functions may differ by an ulp.
        g, w = got.astype(np.float64), want.astype(np.float64)
        np.testing.assert_allclose(g, w, rtol=EPS16, atol=2**-24)
    else:
        np.testing.assert_array_equal(got, want)


CHAINS = {
    "gelu": (lambda a, b: a * 0.5 * (1.0 + np.tanh(0.79788456 * (a + 0.044715 * a**3))), 8),
    "normalize": (lambda a, b: (a - a.mean(axis=-1, keepdims=True)) / np.sqrt(a.var(axis=-1, keepdims=True) + 1e-5), 8),
    "softmax": (lambda a, b: np.exp(a - a.max(-1, keepdims=True))
                / np.exp(a - a.max(-1, keepdims=True)).sum(-1, keepdims=True), 6),
    "matmul": (lambda a, b: (a @ b.T) / 16, 4),
    "sum": (lambda a, b: a.sum(axis=0), 2),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_chains_are_within_float16_rounding_of_float64(name):
    fn, ulps = CHAINS[name]
    want = fn(X.astype(np.float64), Y.astype(np.float64))
    got = pyasc.operator(fn)(X, Y)
    assert got.dtype == np.float16 and got.shape == want.shape
    scale = np.maximum(np.abs(want), np.abs(want).max() * 1e-3)
    err = np.abs(got.astype(np.float64) - want) / scale
    assert err.max() <= ulps * EPS16, (name, float(err.max()))


def test_sums_accumulate_in_float32():
    x = np.full(4096, 0.1, np.float16)
    got = pyasc.operator(lambda v: v.sum())(x)
    # float32 accumulation: the exact sum of the stored values, rounded once.
    assert got.dtype == np.float16
    assert got == np.float16(x.astype(np.float64).sum())


def test_a_float16_kernel_converts_on_load_and_store_in_one_pass():
    op = pyasc.operator(lambda v: v * 2 + 1)
    np.testing.assert_array_equal(op(X), (X.astype(np.float32) * 2 + 1).astype(np.float16))
    c = op.get_compiled_op(X)
    assert len(c.kernels()) == 1
    prog = c.tile_program(0)
    assert "f16" in prog or "float16" in prog, prog


def test_mixed_promotion_follows_numpy():
    for other in (np.float32, np.float64, np.int8, np.int16, np.uint8, np.bool_):
        b = np.ones(3, other)
        want = X[0, :3] + b
        got = pyasc.operator(lambda p, q: p + q)(X[0, :3], b)
        assert got.dtype == want.dtype, other
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=EPS16)


def test_device_arrays_and_streams_hold_float16():
    d = pyasc.to_device(X)
    assert d.dtype == np.float16
    op = pyasc.operator(lambda v: v + 1)
    s = pyasc.Stream()
    with pyasc.stream(s):
        out = op(d)
    s.synchronize()
    np.testing.assert_array_equal(out.numpy(), X + np.float16(1))


def test_ops_that_need_float16_precision_are_typed_errors():
    with pytest.raises(pyasc.UnsupportedError, match="float16"):
        pyasc.operator(lambda v: np.spacing(v))(X)
