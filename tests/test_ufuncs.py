"""NumPy ufuncs inside operators beyond the basic op library: inverse and hyperbolic
trigonometry, angle conversion, float bit functions, two-operand float functions, integer
functions and the composite multi-output ufuncs, each against mpmath or NumPy with NumPy's
result dtype."""

from __future__ import annotations

import zlib

import mpmath
import numpy as np
import pyasc
import pytest
from conftest import assert_matches, assert_ulp


def _mp(fn):
    def ref(x):
        with mpmath.workdps(40):
            def one(v):
                try:
                    r = fn(mpmath.mpf(float(v)))
                except (ValueError, ZeroDivisionError):
                    return float("nan")
                return float(r.real) if abs(r.imag) == 0 else float("nan")

            return np.frompyfunc(one, 1, 1)(np.asarray(x, np.float64)).astype(np.float64)

    return ref


# ufunc -> (mpmath reference, domain lo, hi)
UNARY = {
    "arcsin": (mpmath.asin, -1.0, 1.0),
    "arccos": (mpmath.acos, -1.0, 1.0),
    "arctan": (mpmath.atan, -1e6, 1e6),
    "sinh": (mpmath.sinh, -80.0, 80.0),
    "cosh": (mpmath.cosh, -80.0, 80.0),
    "arcsinh": (mpmath.asinh, -1e30, 1e30),
    "arccosh": (mpmath.acosh, 1.0, 1e30),
    "arctanh": (mpmath.atanh, -0.9999999, 0.9999999),
    "log10": (mpmath.log10, 1e-30, 1e30),
    "cbrt": (lambda v: mpmath.sign(v) * mpmath.cbrt(abs(v)), -1e30, 1e30),
    "deg2rad": (lambda v: v * mpmath.pi / 180, -1e6, 1e6),
    "rad2deg": (lambda v: v * 180 / mpmath.pi, -1e6, 1e6),
}


def _inputs(name, lo, hi, dtype):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    x = rng.uniform(lo, hi, 1500)
    span = min(hi, 4.0) - max(lo, -4.0)
    x = np.concatenate([x, max(lo, -4.0) + span * rng.random(1500), [lo, hi, 0.0, -0.0, 1e-30, -1e-30]])
    x = x[(x >= lo) & (x <= hi)]
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ufuncs_against_mpmath(name, dtype):
    ref, lo, hi = UNARY[name]
    uf = getattr(np, name)
    x = _inputs(name, lo, hi, dtype)
    got = pyasc.operator(lambda t: uf(t))(x)
    assert got.dtype == uf(x).dtype and got.shape == x.shape
    assert_ulp(got, _mp(ref)(x), 1 if dtype == np.float32 else 2)


@pytest.mark.parametrize("name", sorted(UNARY) + ["trunc", "spacing", "signbit", "positive", "conjugate"])
def test_unary_ufuncs_special_values_and_dtypes(name):
    uf = getattr(np, name)
    op = pyasc.operator(lambda t: uf(t))
    for dtype in (np.float32, np.float64):
        x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, 1e-40, -7.25], dtype)
        with np.errstate(all="ignore"):
            want = uf(x)
        got = op(x)
        assert got.dtype == want.dtype
        if want.dtype == np.bool_:
            np.testing.assert_array_equal(got, want)
        else:
            assert_ulp(got, want.astype(np.float64), 1)
            np.testing.assert_array_equal(np.signbit(got[~np.isnan(want)]), np.signbit(want[~np.isnan(want)]))
    xi = np.array([-3, 0, 5, 2**31 - 1], np.int32)
    with np.errstate(all="ignore"):
        want = uf(xi)
    assert_matches(op(xi), want, rtol=1e-15)


FLOAT_BINARY = ["hypot", "arctan2", "copysign", "nextafter", "fmod", "logaddexp", "logaddexp2", "heaviside",
                "fmax", "fmin", "float_power"]
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.5, -2.25, 1e-30, 700.0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", FLOAT_BINARY)
def test_float_binary_ufuncs(name, dtype):
    uf = getattr(np, name)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    a = np.concatenate([rng.uniform(-50, 50, 3000), np.repeat(SPECIALS, len(SPECIALS))]).astype(dtype)
    b = np.concatenate([rng.uniform(-50, 50, 3000), np.tile(SPECIALS, len(SPECIALS))]).astype(dtype)
    got = pyasc.operator(lambda x, y: uf(x, y))(a, b)
    with np.errstate(all="ignore"):
        want = uf(a, b)
        want64 = uf(a.astype(np.float64), b.astype(np.float64))
    assert got.dtype == want.dtype and got.shape == want.shape
    exact = name in ("copysign", "nextafter", "fmod", "heaviside", "fmax", "fmin")
    if exact:
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    else:
        assert_ulp(got, want64, 1 if dtype == np.float32 else 2, dtype=got.dtype)


def test_float_binary_ufuncs_promote_integers_like_numpy():
    i = np.array([3, -4, 0, 7], np.int32)
    j = np.array([4, 3, 0, -2], np.int64)
    for name in ["hypot", "arctan2", "logaddexp", "heaviside", "copysign", "fmod", "fmax", "ldexp"]:
        uf = getattr(np, name)
        a = i if name != "ldexp" else i.astype(np.float32)
        with np.errstate(all="ignore"):
            want = uf(a, j)
            got = pyasc.operator(lambda x, y, uf=uf: uf(x, y))(a, j)
        assert_matches(got, want, rtol=1e-15)


def test_ldexp_rounds_once_into_subnormals():
    x = np.array([1.5, -1.75, 3.0, np.inf, np.nan, 0.0], np.float32)
    e = np.array([-140, -149, 127, 3, 1, 5], np.int32)
    got = pyasc.operator(lambda a, b: np.ldexp(a, b))(x, e)
    with np.errstate(over="ignore"):
        assert_matches(got, np.ldexp(x, e))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("name", ["left_shift", "right_shift", "gcd", "lcm", "fmod", "fmax", "fmin"])
def test_integer_binary_ufuncs_exact(name, dtype):
    uf = getattr(np, name)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    info = np.iinfo(dtype)
    a = np.concatenate([rng.integers(-1000, 1000, 500), [info.min, info.max, 0, -1, 12, -12]]).astype(dtype)
    if name in ("left_shift", "right_shift"):
        b = rng.integers(0, info.bits, a.size).astype(dtype)
    else:
        b = np.concatenate([rng.integers(-50, 50, 500), [3, -1, 0, 5, 0, 18]]).astype(dtype)
    got = pyasc.operator(lambda x, y: uf(x, y))(a, b)
    with np.errstate(all="ignore"):
        assert_matches(got, uf(a, b))


def test_integer_only_ufuncs_reject_floats():
    x = np.ones(3, np.float32)
    with pytest.raises(pyasc.DTypeError):
        pyasc.operator(lambda t: np.gcd(t, t))(x)
    with pytest.raises(pyasc.DTypeError):
        pyasc.operator(lambda t: np.left_shift(t, 1))(x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_composite_ufuncs_and_functions(dtype):
    x = np.array([-3.0, -0.5, 0.0, -0.0, 0.75, 3.5, 1024.0, 7.0, -100.0], np.float64)
    if dtype != np.int32:
        x = np.concatenate([x, [np.inf, -np.inf, np.nan, 1e-310, 2.0**-1074, np.nextafter(2.0, 0), 1e-40]])
    x = x.astype(dtype)

    def body(t):
        m, e = np.frexp(t) if dtype != np.int32 else (t, t)
        a, b = np.modf(t)
        q, r = np.divmod(t, 3)
        return (m, e, a, b, q, r, np.angle(t), np.angle(t, deg=True), np.real(t), np.imag(t), np.copy(t),
                np.fix(t), np.float_power(t, 2), np.zeros_like(t), np.ones_like(t, dtype=np.float32),
                np.full_like(t, 7), np.conj(t), np.positive(t))

    got = pyasc.operator(body)(x)
    with np.errstate(all="ignore"):
        want = body(x)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (i, g.dtype, w.dtype)
        np.testing.assert_array_equal(g, w, err_msg=f"output {i}")
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w), err_msg=f"sign of output {i}")


def test_signbit_of_integers_and_lists_as_operands():
    xi = np.array([-5, 0, 3], np.int64)
    assert_matches(pyasc.operator(lambda t: np.signbit(t))(xi), np.signbit(xi))
    x = np.array([1.0, 2.0, 3.0])
    got = pyasc.operator(lambda t: np.add(t, [10, 20, 30]) * np.maximum(t, (2, 2, 2)))(x)
    assert got.dtype == np.float64
    assert_matches(got, np.add(x, [10, 20, 30]) * np.maximum(x, (2, 2, 2)))


@pytest.mark.parametrize("fn", [lambda x, y: np.exp(x) + y, lambda x, y: np.hypot(x, x) + y,
                                lambda x, y: np.arctan2(x, 2.0) * y, lambda x, y: np.logaddexp(x, x) * y])
def test_expensive_ops_are_computed_once_before_a_broadcast(fn):
    # A (64, 1) operand broadcast 64x: its expensive op gets its own kernel instead of being
    # recomputed for every column.
    a = np.linspace(0.5, 2.0, 64, dtype=np.float32).reshape(64, 1)
    b = np.ones((1, 64), np.float32)
    op = pyasc.operator(fn)
    assert len(op.get_compiled_op(a, b).kernels()) == 2
    assert_ulp(op(a, b), fn(a.astype(np.float64), b.astype(np.float64)), 2, dtype=np.float32)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"])
def test_bitwise_count_of_every_integer_dtype(dtype):
    info = np.iinfo(dtype)
    x = np.array([0, 1, int(info.max), int(info.min), int(info.max) // 3, 7, 255 % (int(info.max) + 1)], dtype)
    if info.min < 0:
        x = np.concatenate([x, np.array([-1, -7, info.min + 1], dtype)])
    got = pyasc.operator(np.bitwise_count)(x)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, np.bitwise_count(x))


def test_vecdot_matvec_vecmat():
    rng = np.random.default_rng(11)
    a = rng.standard_normal((2, 3, 4))
    v = rng.standard_normal(4)
    m = rng.standard_normal((4, 5))
    i = rng.integers(-9, 9, (3, 4))
    for fn, args in ((np.vecdot, (a, a)), (np.matvec, (a, v)), (np.vecmat, (v, m)), (np.vecdot, (i, i)),
                     (np.matvec, (i, i[0]))):
        got, want = pyasc.operator(fn)(*args), fn(*args)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-13)
