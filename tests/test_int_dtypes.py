"""Integer dtypes int8 int16 uint8 uint16 uint32 uint64 beside bool int32 int64 float32 float64:
NumPy 2's promotion table (checked against NumPy's own results, weak Python scalars included),
the value of every arithmetic, bitwise and comparison op on arrays holding each dtype's
extremes (exact equality), reductions, casts, Python ints out of range and float16 results."""

from __future__ import annotations

import itertools

import numpy as np
import pyasc
import pytest

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
NEW = [np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64]
ALL = [np.bool_] + INTS + [np.float32, np.float64]


def _name(t) -> str:
    return np.dtype(t).name


def extremes(t) -> np.ndarray:
    """min, max, -1 (signed), 0, 1, 2, min+1, max-1 and a few values in between."""
    info = np.iinfo(t)
    vals = {info.min, info.max, 0, 1, 2, 3, 7, info.min + 1, info.max - 1, info.max // 2, info.max // 3 + 1}
    if info.min < 0:
        vals |= {-1, -2, -7, info.min // 2, info.min // 3 - 1}
    return np.array(sorted(vals), dtype=t)


def cross(t):
    """Every pair of extremes as two flat arrays."""
    e = extremes(t)
    a, b = np.meshgrid(e, e, indexing="ij")
    return a.ravel(), b.ravel()


def numpy_or_error(fn, *args):
    with np.errstate(all="ignore"):
        try:
            return fn(*args)
        except (TypeError, OverflowError, ValueError) as e:
            return e


def method(name, *args, **kwargs):
    """`lambda v: v.name(*args, **kwargs)`, bound now."""
    return lambda v: getattr(v, name)(*args, **kwargs)


def small(t, values=(1, 2, 3, 5)) -> np.ndarray:
    return np.array(values).astype(t)


# ---------------------------------------------------------------------------------------------
# The promotion table
# ---------------------------------------------------------------------------------------------

PAIR_OPS = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "lt": lambda a, b: a < b,
    "div": lambda a, b: a / b,
}


@pytest.mark.parametrize("ta", ALL, ids=_name)
def test_promotion_table_matches_numpy(ta):
    """For every pair of the 11 dtypes, `a + b`, `a * b`, `a < b`, `a / b` have NumPy's dtype
    and value."""
    op = pyasc.operator(lambda a, b: tuple(f(a, b) for f in PAIR_OPS.values()))
    for tb in ALL:
        a, b = small(ta, (1, 0, 1, 1)), small(tb, (1, 1, 1, 1))
        if ta is not np.bool_:
            a = small(ta)
        if tb is not np.bool_:
            b = small(tb, (2, 1, 3, 5))
        want = [numpy_or_error(f, a, b) for f in PAIR_OPS.values()]
        assert not any(isinstance(w, Exception) for w in want), (ta, tb, want)
        got = op(a, b)
        for name, g, w in zip(PAIR_OPS, got, want):
            assert g.dtype == w.dtype, f"{_name(ta)} {name} {_name(tb)}: {g.dtype} != {w.dtype}"
            np.testing.assert_array_equal(g, w, err_msg=f"{_name(ta)} {name} {_name(tb)}")


WEAK = [True, 3, 2.5]


@pytest.mark.parametrize("ta", ALL, ids=_name)
@pytest.mark.parametrize("weak", WEAK, ids=lambda w: type(w).__name__)
def test_weak_python_scalars_match_numpy(ta, weak):
    """A Python bool/int/float yields to the array's dtype as NEP 50 says, as a constant in the
    function and as an argument, on either side."""
    a = small(ta, (1, 0, 1, 1)) if ta is np.bool_ else small(ta)
    const = pyasc.operator(lambda x: tuple(f(x, weak) for f in PAIR_OPS.values()) + (weak * x, weak < x))
    arg = pyasc.operator(lambda x, s: tuple(f(x, s) for f in PAIR_OPS.values()) + (s * x, s < x))
    want = [numpy_or_error(f, a, weak) for f in PAIR_OPS.values()] + [weak * a, weak < a]
    for got in (const(a), arg(a, weak)):
        for i, (g, w) in enumerate(zip(got, want)):
            if isinstance(w, Exception):
                continue
            assert g.dtype == w.dtype, f"{_name(ta)} op {i} {weak!r}: {g.dtype} != {w.dtype}"
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("ta", NEW, ids=_name)
def test_numpy_scalars_are_strongly_typed(ta):
    a = small(ta)
    for s in (np.int8(2), np.uint8(2), np.int16(2), np.uint64(2), np.float32(2)):
        want = numpy_or_error(lambda x, y: x + y, a, s)
        got = pyasc.operator(lambda x, y: x + y)(a, s)
        assert got.dtype == want.dtype, (ta, type(s))
        np.testing.assert_array_equal(got, want)


def test_uint64_with_int64_is_float64():
    u = np.array([0, 1, 2**63, 2**64 - 1], np.uint64)
    i = np.array([-1, 5, -(2**63), 7], np.int64)
    got = pyasc.operator(lambda a, b: (a + b, a * 2.0, a.astype(np.float32)))(u, i)
    want = (u + i, u * 2.0, u.astype(np.float32))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------------------------------------
# Values of every op on extremes
# ---------------------------------------------------------------------------------------------

BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "floor_divide": np.floor_divide,
    "remainder": np.remainder,
    "fmod": np.fmod,
    "minimum": np.minimum,
    "maximum": np.maximum,
    "fmin": np.fmin,
    "fmax": np.fmax,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "gcd": np.gcd,
    "lcm": np.lcm,
}


@pytest.mark.parametrize("t", INTS, ids=_name)
def test_binary_ops_on_extremes_equal_numpy(t):
    """Wrapping arithmetic, Python floor division and modulo (0 when dividing by zero, MIN // -1
    wraps), bitwise ops, comparisons, min/max: exactly NumPy's values on every pair of
    extremes."""
    a, b = cross(t)
    op = pyasc.operator(lambda x, y: tuple(f(x, y) for f in BINARY.values()))
    got = op(a, b)
    for name, g, f in zip(BINARY, got, BINARY.values()):
        want = numpy_or_error(f, a, b)
        assert g.dtype == want.dtype, (name, g.dtype, want.dtype)
        np.testing.assert_array_equal(g, want, err_msg=f"{name} {_name(t)}")


@pytest.mark.parametrize("t", INTS, ids=_name)
def test_operators_and_python_syntax_on_extremes(t):
    a, b = cross(t)
    op = pyasc.operator(lambda x, y: (x + y, x - y, x * y, x // y, x % y, x & y, x | y, x ^ y, ~x, -x, abs(x), +x))
    with np.errstate(all="ignore"):
        want = (a + b, a - b, a * b, a // b, a % b, a & b, a | b, a ^ b, ~a, -a, abs(a), +a)
    for i, (g, w) in enumerate(zip(op(a, b), want)):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w, err_msg=f"expression {i} {_name(t)}")


@pytest.mark.parametrize("t", INTS, ids=_name)
def test_unary_ops_on_extremes(t):
    x = extremes(t)
    fns = [np.negative, np.absolute, np.sign, np.square, np.invert, np.positive, np.floor, np.ceil, np.trunc]
    op = pyasc.operator(lambda v: tuple(f(v) for f in fns))
    with np.errstate(all="ignore"):
        for f, g in zip(fns, op(x)):
            w = f(x)
            assert g.dtype == w.dtype, f.__name__
            np.testing.assert_array_equal(g, w, err_msg=f.__name__)
    np.testing.assert_array_equal(pyasc.operator(lambda v: pyasc.relu(v))(x), np.maximum(x, 0).astype(t))


@pytest.mark.parametrize("t", INTS, ids=_name)
def test_power_wraps(t):
    x = extremes(t)
    e = np.array([0, 1, 2, 3, 5, 7, 8, 15, 16, 31, 63, 64, 100], dtype=np.int64)
    e = e[e <= np.iinfo(t).max].astype(t)
    a, b = np.meshgrid(x, e, indexing="ij")
    a, b = a.ravel(), b.ravel()
    got = pyasc.operator(lambda p, q: (p**q, np.power(p, q), p**3))(a, b)
    with np.errstate(all="ignore"):
        want = (a**b, np.power(a, b), a**3)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("t", INTS, ids=_name)
def test_shifts_including_counts_past_the_width(t):
    x = extremes(t)
    bits = 8 * np.dtype(t).itemsize
    counts = [0, 1, 3, bits - 1, bits, bits + 1, 2 * bits]
    if np.iinfo(t).min < 0:
        counts += [-1, -bits]
    counts = np.array([c for c in counts if c <= np.iinfo(t).max], dtype=t)
    a, s = np.meshgrid(x, counts, indexing="ij")
    a, s = a.ravel(), s.ravel()
    got = pyasc.operator(lambda p, q: (p << q, p >> q, np.left_shift(p, 1), np.right_shift(p, 2)))(a, s)
    want = (np.left_shift(a, s), np.right_shift(a, s), np.left_shift(a, t(1)), np.right_shift(a, t(2)))
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w, err_msg=f"shift {i} {_name(t)}")


@pytest.mark.parametrize("t", INTS, ids=_name)
def test_where_clip_and_mixed_with_bool(t):
    x = extremes(t)
    y = x[::-1].copy()
    lo, hi = t(np.iinfo(t).min // 4), t(np.iinfo(t).max // 4)
    op = pyasc.operator(lambda p, q: (np.where(p > q, p, q), np.clip(p, lo, hi), p * (p > q), pyasc.where(p < q, p, 2)))
    got = op(x, y)
    want = (np.where(x > y, x, y), np.clip(x, lo, hi), x * (x > y), np.where(x < y, x, t(2)))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("t", NEW, ids=_name)
def test_fused_chains_wrap_at_each_op(t):
    """`(x * 3 + 7) * x - 1` wraps after every op, as NumPy computes it step by step."""
    x = np.resize(extremes(t), 4099)
    got = pyasc.operator(lambda v: (v * 3 + 7) * v - 1)(x)
    with np.errstate(all="ignore"):
        want = (x * 3 + 7) * x - 1
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------

REDUCTIONS = ["sum", "prod", "max", "min", "argmax", "argmin", "any", "all"]


@pytest.mark.parametrize("t", INTS, ids=_name)
def test_reductions_dtype_and_value(t):
    """sum/prod of int8/16 give int64 and of uint8/16/32 uint64 (NumPy's rule, checked here);
    max/min keep the dtype; mean is float64."""
    x = np.resize(extremes(t), (7, 13))
    for name in REDUCTIONS:
        # argmax/argmin over all axes of a 2-D array need a flattening reshape pyasc lacks.
        for axis in (1, 0) if name.startswith("arg") else (None, 1, 0):
            got = pyasc.operator(method(name, axis=axis))(x)
            with np.errstate(all="ignore"):
                want = getattr(x, name)(axis=axis)
            assert got.dtype == np.asarray(want).dtype, (name, axis)
            np.testing.assert_array_equal(got, want, err_msg=f"{name} axis={axis}")
    for axis in (None, 1):
        got = pyasc.operator(method("mean", axis=axis))(x)
        want = x.mean(axis=axis)
        assert got.dtype == want.dtype == np.float64
        # Extremes cancel: float64 sums in another order differ by a few ulp of the largest term.
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=float(np.abs(x.astype(np.float64)).max()) * 1e-14)


@pytest.mark.parametrize("t", NEW, ids=_name)
def test_reductions_of_fused_products(t):
    x = np.resize(extremes(t), (5, 33))
    got = pyasc.operator(lambda v: ((v * v).sum(axis=1), (v + 1).max(axis=1), np.sum(v - 1)))(x)
    with np.errstate(all="ignore"):
        want = ((x * x).sum(axis=1), (x + 1).max(axis=1), np.sum(x - 1))
    for g, w in zip(got, want):
        assert g.dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------------------------------------
# Casts
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("src", ALL, ids=_name)
def test_casts_to_every_dtype(src):
    """Integer to integer wraps, to float rounds, to bool is `!= 0`; floats truncate toward zero
    (values in range of the target)."""
    if src in (np.float32, np.float64):
        x = np.array([0.0, 1.5, -2.5, 100.9, -100.9, 0.25, 126.0], dtype=src)
    elif src is np.bool_:
        x = np.array([True, False, True])
    else:
        x = extremes(src)
    op = pyasc.operator(lambda v: tuple(v.astype(d) for d in ALL))
    for d, g in zip(ALL, op(x)):
        xs = x
        if src in (np.float32, np.float64) and np.dtype(d).kind == "u":
            xs = np.abs(x)
            g = pyasc.operator(method("astype", d))(xs)
        with np.errstate(all="ignore"):
            want = xs.astype(d)
        assert g.dtype == want.dtype
        np.testing.assert_array_equal(g, want, err_msg=f"{_name(src)} -> {_name(d)}")


@pytest.mark.parametrize("t", NEW, ids=_name)
def test_eager_calls_device_arrays_and_astype(t):
    x = extremes(t)
    y = x[::-1].copy()
    np.testing.assert_array_equal(pyasc.maximum(x, y), np.maximum(x, y))
    np.testing.assert_array_equal(pyasc.abs(x), np.abs(x))
    assert pyasc.add(x, y).dtype == np.dtype(t)
    np.testing.assert_array_equal(pyasc.where(x > y, x, y), np.where(x > y, x, y))
    d = pyasc.to_device(x)
    assert d.dtype == np.dtype(t)
    out = pyasc.operator(lambda v: (v + 1, v.astype(np.float64)))(d)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out[0].numpy(), x + 1)
    np.testing.assert_array_equal(out[1].numpy(), x.astype(np.float64))
    z = pyasc.zeros((3, 4), dtype=t)
    assert z.dtype == np.dtype(t) and not z.numpy().any()
    np.testing.assert_array_equal(np.asarray(pyasc.to_device(x)), x)


# ---------------------------------------------------------------------------------------------
# Python ints out of range, float16 results
# ---------------------------------------------------------------------------------------------


def test_python_int_out_of_range_overflows_in_arithmetic():
    x = np.arange(4, dtype=np.int8)
    with pytest.raises(OverflowError, match="300"):
        pyasc.operator(lambda v: v + 300)(x)
    with pytest.raises(pyasc.IntegerOverflowError) as e:
        pyasc.operator(lambda v: np.maximum(v, -129))(x)
    assert e.value.code == 100008
    with pytest.raises(OverflowError):
        pyasc.operator(lambda v: v + (-1))(np.arange(4, dtype=np.uint64))
    # In range: fine, and it wraps like NumPy.
    np.testing.assert_array_equal(pyasc.operator(lambda v: v + 127)(x), x + 127)
    u = np.array([0, 5, 2**64 - 1], np.uint64)
    np.testing.assert_array_equal(pyasc.operator(lambda v: v + (2**64 - 1))(u), u + (2**64 - 1))
    np.testing.assert_array_equal(pyasc.operator(lambda v: v & 0xFFFF_FFFF_0000_0000)(u), u & 0xFFFF_FFFF_0000_0000)
    with pytest.raises(OverflowError):
        pyasc.operator(lambda v: v + 2**63)(np.arange(3))


def test_python_int_arguments_are_checked_at_each_call():
    add = pyasc.operator(lambda v, s: v + s)
    x = np.arange(4, dtype=np.uint8)
    np.testing.assert_array_equal(add(x, 255), x + 255)
    with pytest.raises(OverflowError, match="256"):
        add(x, 256)
    with pytest.raises(OverflowError):
        add(x, -1)
    np.testing.assert_array_equal(add(x, 3), x + 3)
    assert add.cache_info().compiles == 1
    with pytest.raises(OverflowError):
        add(np.arange(3), 2**64)


def test_python_int_arguments_above_int64_are_weak_uint64_values():
    # NumPy 2 takes 2**63 <= s < 2**64 beside uint64 and float arrays, and raises beside others.
    u = np.array([0, 5, 2**63 - 1], np.uint64)
    add, scale = pyasc.operator(lambda v, s: v + s), pyasc.operator(lambda v, s: v * s - 1)
    for s in (2**63, 2**64 - 1, 2**63 + 12345, 7):
        np.testing.assert_array_equal(add(u, s), u + s)
        got, want = scale(np.array([0.5, -2.0], np.float32), s), np.array([0.5, -2.0], np.float32) * s - 1
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-7)
    assert add.cache_info().compiles == 2  # one plan for int64-range ints, one above
    np.testing.assert_array_equal(pyasc.operator(lambda v, s: v + (s - 1))(u, 2**63), u + (2**63 - 1))
    for x in (np.arange(3), np.arange(3, dtype=np.uint8), np.array([True, False])):
        with pytest.raises(OverflowError):
            x + 2**63
        with pytest.raises(pyasc.IntegerOverflowError):
            add(x, 2**63)
    # Python ints computed from such an argument are exact, as Python computes them.
    np.testing.assert_array_equal(pyasc.operator(lambda v, s: v + s // 2)(np.arange(3), 2**63), np.arange(3) + 2**62)


@pytest.mark.parametrize("t", INTS, ids=_name)
def test_comparisons_with_out_of_range_ints_are_exact(t):
    x = extremes(t)
    # Python ints just outside the dtype (pyasc holds ints in [-2**63, 2**64)).
    big = int(np.iinfo(t).max) + 1 if t is not np.uint64 else 2**64 - 1
    neg = int(np.iinfo(t).min) - 1 if t is not np.int64 else -(2**63)
    const = pyasc.operator(lambda v: (v < big, v == big, v != big, v > neg, neg < v, v <= neg, big >= v))
    want = (x < big, x == big, x != big, x > neg, neg < x, x <= neg, big >= x)
    for i, (g, w) in enumerate(zip(const(x), want)):
        assert g.dtype == np.bool_
        np.testing.assert_array_equal(g, w, err_msg=f"comparison {i}")
    arg = pyasc.operator(lambda v, s: (v < s, v == s, s > v, v >= s))
    for s in (neg, -1, 0, 5, int(np.iinfo(t).max), big, 2**63, 2**64 - 1):
        if not -(2**63) <= s < 2**64:
            continue
        got = arg(x, s)
        want = (x < s, x == s, s > x, x >= s)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w, err_msg=f"{_name(t)} vs {s}")


@pytest.mark.parametrize("t", [np.bool_, np.int8, np.uint8], ids=_name)
def test_float16_results_are_computed_as_numpy(t):
    # NumPy computes float functions of bools and 8-bit integers in float16: so does pyasc
    # (in float32 lanes, rounded to float16 once, which for one op is NumPy's value).
    x = np.array([1, 0, 1, 7] if t is np.bool_ else [1, 0, 10, 7]).astype(t)
    pairs = ((np.sqrt, np.sqrt), (np.exp, np.exp), (lambda v: np.hypot(v, v), lambda v: np.hypot(v, v)),
             (lambda v: pyasc.sin(v), np.sin))
    for fn, ref in pairs:
        got = pyasc.operator(fn)(x)
        want = ref(x)
        assert got.dtype == np.float16 == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("t", [np.int16, np.uint16, np.uint32, np.uint64], ids=_name)
def test_float_functions_of_integers_have_numpy_dtype(t):
    x = np.array([1, 4, 9, 100]).astype(t)
    got = pyasc.operator(lambda v: (np.sqrt(v), np.exp(v / 100), np.arctan2(v, v), np.log1p(v)))(x)
    want = (np.sqrt(x), np.exp(x / 100), np.arctan2(x, x), np.log1p(x))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=2e-7 if w.dtype == np.float32 else 1e-15)


def test_float_ufuncs_of_mixed_integer_pairs_use_numpys_loop():
    """A float ufunc of two integer dtypes computes in the first float loop both cast to safely,
    not in the float of their promoted dtype: uint8 with int8 is float16,
    int16 with uint16 and uint16 with int8 are float32, int32 with uint16 float64."""
    fns = (np.hypot, np.arctan2, np.copysign, np.logaddexp, np.heaviside, np.nextafter)
    for ta, tb in itertools.product([np.bool_] + INTS, repeat=2):
        a = np.array([1, 2, 3]).astype(ta)
        b = np.array([3, 0, 1]).astype(tb)
        for fn in fns:
            want = fn(a, b)
            op = pyasc.operator(lambda p, q, fn=fn: fn(p, q))
            if want.dtype == np.float16 and fn is np.nextafter:
                # Its value depends on float16's own precision.
                with pytest.raises(pyasc.UnsupportedError, match="float16"):
                    op(a, b)
                continue
            got = op(a, b)
            assert got.dtype == want.dtype, (fn.__name__, _name(ta), _name(tb))
            np.testing.assert_allclose(got, want, rtol=4e-7, err_msg=f"{fn.__name__} {_name(ta)} {_name(tb)}")


def test_pairs_of_new_dtypes_compute_exactly():
    """Mixed pairs promote and compute exactly (int8 with uint8 in int16, uint32 with int32 in
    int64, uint16 with int8 in int32)."""
    for ta, tb in itertools.permutations(NEW, 2):
        a = np.resize(extremes(ta), 64)
        b = np.resize(extremes(tb), 64)
        want = numpy_or_error(lambda p, q: (p + q, p * q, p - q, np.maximum(p, q), p == q, p < q), a, b)
        got = pyasc.operator(lambda p, q: (p + q, p * q, p - q, np.maximum(p, q), p == q, p < q))(a, b)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype, (ta, tb)
            np.testing.assert_array_equal(g, w, err_msg=f"{_name(ta)} with {_name(tb)}")
