"""Every elementwise op of the library against NumPy: dtypes exactly, values against a float64
reference in ulps (floats) or exactly (integers and booleans)."""

from __future__ import annotations

import math
import zlib

import mpmath
import numpy as np
import pyasc
import pytest
from conftest import assert_matches, assert_ulp

_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def erf64(x):
    return _erf(np.asarray(x, np.float64)).astype(np.float64)


def erfc64(x):
    return _erfc(np.asarray(x, np.float64)).astype(np.float64)


def gelu_exact(x):
    """GELU at 30 significant digits (the float64 formula loses ~1e-14 to the rounding of x/sqrt2)."""
    with mpmath.workdps(30):
        def one(v):
            v = mpmath.mpf(float(v))
            return float(v / 2 * mpmath.erfc(-v / mpmath.sqrt(2)))

        return np.frompyfunc(one, 1, 1)(np.asarray(x, np.float64)).astype(np.float64)


def cbrt64(x):
    # In extended precision, then rounded: NumPy's float64 cbrt (the C library's on some
    # machines) is itself up to 2.5 ulp off, e.g. at -6.142242672405793e29.
    return np.cbrt(np.asarray(x, np.longdouble)).astype(np.float64)


def sigmoid64(x):
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1 / (1 + np.exp(-x)), np.exp(x) / (1 + np.exp(x)))


# name -> (float64 reference, domain lo, hi, max ulp for float32, max ulp for float64)
REFERENCES = {
    "exp": (np.exp, -100, 100, 2, 1),
    "exp2": (np.exp2, -140, 140, 2, 1),
    "log": (np.log, 1e-30, 1e30, 2, 1),
    "log2": (np.log2, 1e-30, 1e30, 2, 1),
    "log10": (np.log10, 1e-30, 1e30, 1, 1),
    "cbrt": (cbrt64, -1e30, 1e30, 1, 1),
    "log1p": (np.log1p, -0.999, 1e6, 2, 1),
    "expm1": (np.expm1, -30, 80, 2, 1),
    "sqrt": (np.sqrt, 0, 1e30, 1, 1),
    "rsqrt": (lambda x: 1 / np.sqrt(x), 1e-30, 1e30, 1, 2),
    "reciprocal": (lambda x: 1 / x, -1e30, 1e30, 1, 1),
    "sin": (np.sin, -1e4, 1e4, 2, 1),
    "cos": (np.cos, -1e4, 1e4, 2, 1),
    "tan": (np.tan, -10, 10, 2, 4),
    "tanh": (np.tanh, -20, 20, 2, 4),
    "sigmoid": (sigmoid64, -100, 100, 2, 4),
    "erf": (erf64, -6, 6, 2, 2),
    "erfc": (erfc64, -6, 9, 2, 4),
    "relu": (lambda x: np.maximum(x, 0), -10, 10, 0, 0),
    "gelu": (gelu_exact, -10, 10, 4, 8),
    "fast_gelu": (lambda x: x * sigmoid64(1.702 * x), -10, 10, 4, 8),
    "silu": (lambda x: x * sigmoid64(x), -50, 50, 4, 8),
    "softplus": (lambda x: np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x))), -50, 50, 4, 8),
    "abs": (np.abs, -10, 10, 0, 0),
    "sign": (np.sign, -10, 10, 0, 0),
    "floor": (np.floor, -1e6, 1e6, 0, 0),
    "ceil": (np.ceil, -1e6, 1e6, 0, 0),
    "round": (np.round, -1e6, 1e6, 0, 0),
    "square": (np.square, -1e10, 1e10, 0.5, 0.5),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_unary_float_ops_against_float64(name, dtype):
    ref, lo, hi, ulp32, ulp64 = REFERENCES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    x = rng.uniform(lo, hi, 20000)
    if lo < 0 < hi:
        x = np.concatenate([x, rng.uniform(-1, 1, 5000), np.linspace(-3, 3, 601)])
    x = np.concatenate([x, [lo, hi]]).astype(dtype)
    fn = getattr(pyasc, name)
    op = pyasc.operator(lambda t: fn(t))
    got = op(x)
    assert got.dtype == x.dtype and got.shape == x.shape
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
    assert_ulp(got, want, ulp32 if dtype == np.float32 else ulp64)


@pytest.mark.parametrize("name", ["exp", "log", "sin", "tanh", "sigmoid", "erf", "sqrt", "gelu"])
def test_special_values(name):
    ref = REFERENCES[name][0]
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4e38, -3.4e38], np.float32)
    got = pyasc.operator(lambda t: getattr(pyasc, name)(t))(x)
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
    assert_ulp(got, want, 2)


def test_integer_inputs_compute_in_float64_like_numpy():
    x = np.arange(-5, 6, dtype=np.int32)
    got = pyasc.operator(lambda t: pyasc.exp(t) + pyasc.sqrt(pyasc.abs(t)))(x)
    assert_matches(got, np.exp(x) + np.sqrt(np.abs(x)), rtol=1e-15)
    assert pyasc.operator(lambda t: pyasc.floor(t))(x).dtype == np.floor(x).dtype


BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.true_divide,
    "floordiv": np.floor_divide,
    "mod": np.remainder,
    "pow": np.power,
    "minimum": np.minimum,
    "maximum": np.maximum,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
}


def _apply(name):
    return pyasc.operator(lambda a, b: pyasc._pyasc.apply_binary(name, a, b))


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("float64", "float32"), ("int32", "int32"),
                                    ("int64", "int32"), ("int32", "float32"), ("bool", "int64")])
def test_binary_ops_follow_numpy_promotion_and_values(name, dtypes):
    rng = np.random.default_rng(7)
    a = rng.integers(-20, 20, (50, 8)).astype(dtypes[0])
    b = rng.integers(-20, 20, (8,)).astype(dtypes[1])
    if name == "pow":
        a, b = np.abs(a) % 4, (np.abs(b) % 4).astype(dtypes[1])
    with np.errstate(all="ignore"):
        want = BINARY[name](a, b)
    if name == "pow" and a.dtype == np.bool_:
        return  # NumPy's power of bool is int8, which pyasc does not store.
    got = _apply(name)(a, b)
    assert_matches(got, want, rtol=1e-6 if want.dtype == np.float32 else 1e-15, atol=1e-30)


def test_float_division_by_zero_and_nan_propagation():
    a = np.array([1.0, -1.0, 0.0, np.nan, 5.5, -5.5], np.float64)
    b = np.array([0.0, 0.0, 0.0, 1.0, -2.0, 2.0], np.float64)
    for name in ("div", "floordiv", "mod", "minimum", "maximum"):
        with np.errstate(all="ignore"):
            want = BINARY[name](a, b)
        assert_matches(_apply(name)(a, b), want)


def test_integer_division_by_zero_gives_zero_like_numpy():
    a = np.array([7, -7, 0, 5], np.int64)
    b = np.array([0, 0, 0, -2], np.int64)
    with np.errstate(all="ignore"):
        assert_matches(_apply("floordiv")(a, b), a // b)
        assert_matches(_apply("mod")(a, b), a % b)


def test_integer_overflow_wraps_like_numpy():
    a = np.array([2**31 - 1, -(2**31)], np.int32)
    got = pyasc.operator(lambda x: x + 1)(a)
    assert_matches(got, a + np.int32(1))


def test_where_clip_cast_isnan_isinf():
    x = np.array([-2.0, -0.5, np.nan, 0.5, np.inf, -np.inf], np.float32)

    @pyasc.operator
    def f(x):
        return (pyasc.where(x > 0, x, -x), pyasc.clip(x, -1.0, 1.0), pyasc.cast(x, "int64"),
                pyasc.isnan(x), pyasc.isinf(x), pyasc.isfinite(x))

    w, c, i, n, inf, fin = f(x)
    assert_matches(w, np.where(x > 0, x, -x))
    assert_matches(c, np.clip(x, -1.0, 1.0))
    finite = np.isfinite(x)
    np.testing.assert_array_equal(i[finite], x[finite].astype(np.int64))
    assert i.dtype == np.int64
    assert_matches(n, np.isnan(x))
    assert_matches(inf, np.isinf(x))
    assert_matches(fin, np.isfinite(x))
    ints = np.arange(4, dtype=np.int32)
    assert_matches(pyasc.operator(lambda t: pyasc.isnan(t))(ints), np.isnan(ints))
    assert_matches(pyasc.operator(lambda t: pyasc.isfinite(t))(ints), np.isfinite(ints))


def test_python_operators_and_numpy_ufuncs_on_tensors():
    a = np.linspace(-2, 2, 9, dtype=np.float32)
    b = np.arange(9, dtype=np.int32) - 4

    @pyasc.operator
    def f(a, b):
        return (-a, +a, abs(a), a ** 2, 2 ** (b + 4), a // 0.5, a % 0.75, ~(a > 0), (a > 0) & (b > 0),
                (a > 0) | (b > 0), (a > 0) ^ (b > 0), b & 3, b | 8, b ^ 5, ~b,
                np.exp(a), np.sqrt(np.abs(a)), np.where(a > 0, a, b), np.maximum(a, b),
                np.logical_and(a > 0, b < 2), np.logical_not(a > 0), np.clip(a, -1, 1), np.round(a),
                np.add(a, 1, dtype=np.float64), np.power(a, 3), np.sign(b))

    with np.errstate(all="ignore"):
        want = (-a, +a, abs(a), a ** 2, 2 ** (b + 4), a // 0.5, a % 0.75, ~(a > 0), (a > 0) & (b > 0),
                (a > 0) | (b > 0), (a > 0) ^ (b > 0), b & 3, b | 8, b ^ 5, ~b, np.exp(a), np.sqrt(np.abs(a)),
                np.where(a > 0, a, b),
                np.maximum(a, b), np.logical_and(a > 0, b < 2), np.logical_not(a > 0), np.clip(a, -1, 1),
                np.round(a), np.add(a, 1, dtype=np.float64), np.power(a, 3), np.sign(b))
    got = f(a, b)
    for k, (g, w) in enumerate(zip(got, want)):
        assert_matches(g, np.asarray(w), rtol=1e-6, atol=1e-7), k


def test_python_scalar_arguments_do_not_split_chained_arithmetic():
    # The casts of Python float arguments to float32 are computed once per launch and come
    # first, so `(x - b) * s` stays one chained instruction, as with float32 arguments.
    x = np.linspace(-3, 3, 10_000, dtype=np.float32)
    op = pyasc.operator(lambda v, s, b: (v - b) * s)
    weak = op.get_compiled_op(x, 1.5, 0.25).kernels()
    strong = op.get_compiled_op(x, np.float32(1.5), np.float32(0.25)).kernels()
    assert len(weak) == len(strong) == 1
    assert weak[0]["instructions"] == strong[0]["instructions"] + 2  # the two casts, then one chain
    got = op(x, 1.5, 0.25)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, (x - np.float32(0.25)) * np.float32(1.5))
