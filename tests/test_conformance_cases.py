"""Expressions that once gave wrong answers or internal errors, against NumPy: reductions
broadcast back against square operands, rounding dtypes, empty reductions feeding reductions,
infinities in float64 activations."""

from __future__ import annotations

import numpy as np
import pyasc
import pytest
from conftest import assert_matches

SQUARE = np.arange(25, dtype=np.float64).reshape(5, 5) * 0.37 - 3.0


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x * x.mean(axis=1),
        lambda x: x + x.min(axis=-1),
        lambda x: x - x.max(axis=1) * 2.0,
        lambda x: (x - x.mean(axis=-1)) * 0.5,
        lambda x: x * x.sum(axis=0),
        lambda x: x * x.mean(axis=1, keepdims=True),
        lambda x: x / np.sqrt((x * x).mean(axis=-1) + 1.0),
    ],
)
@pytest.mark.parametrize("level", [1, 2, 3])
def test_reduction_broadcast_against_a_square_operand(fn, level):
    got = pyasc.operator(fn, op_break_level=level)(SQUARE)
    assert_matches(got, fn(SQUARE), rtol=1e-13)


def test_layer_norm_weights_taken_from_a_reduction():
    x = SQUARE

    def fn(t):
        w = t.mean(axis=0)
        return pyasc.layer_norm(t) * w if isinstance(t, pyasc.Tensor) else None

    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    want = (x - mu) / np.sqrt(var + 1e-5) * x.mean(axis=0)
    assert_matches(pyasc.operator(fn)(x), want, rtol=1e-12)


def test_rint_of_integers_is_float64_and_round_keeps_integers():
    i = np.array([14, 15, 25, -15, -25, 7], np.int32)
    assert_matches(pyasc.operator(lambda t: np.rint(t))(i), np.rint(i))
    for d in (-1, 0, 1, 2):
        assert_matches(pyasc.operator(lambda t, d=d: np.round(t, d))(i), np.round(i, d))
    f = np.array([0.5, 1.5, 2.5, -0.5, 1.25], np.float32)
    assert_matches(pyasc.operator(lambda t: np.rint(t))(f), np.rint(f))


def test_reduction_of_an_empty_axis_reduction():
    e = np.zeros((0, 3), bool)
    for fn in (lambda t: np.all(t, axis=0).sum(), lambda t: np.any(t, axis=0).sum(), lambda t: np.all(t, 0).sum() + 1):
        assert_matches(pyasc.operator(fn)(e), np.asarray(fn(e)))
    z = np.zeros((0, 4), np.float32)
    assert_matches(pyasc.operator(lambda t: t.sum(axis=0).max())(z), np.asarray(z.sum(axis=0).max()))


def test_slice_reduction_beside_a_row_reduction():
    x = np.arange(40.0).reshape(10, 4)
    fn = lambda t: t[8:9].any(axis=0) + t.sum(axis=1, keepdims=True)  # noqa: E731
    assert_matches(pyasc.operator(fn)(x), fn(x))


def test_normalisations_of_broadcast_views():
    b = np.broadcast_to(np.arange(1.0, 5.0), (3, 4))
    rms = b / np.sqrt((b * b).mean(axis=-1, keepdims=True) + 1e-6)
    assert_matches(pyasc.operator(lambda t: pyasc.rms_norm(t))(b), rms, rtol=1e-12)
    mu = b.mean(-1, keepdims=True)
    ln = (b - mu) / np.sqrt(((b - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
    assert_matches(pyasc.operator(lambda t: pyasc.layer_norm(t))(b), ln, rtol=1e-12)


def test_gelu_at_infinity_matches_float32():
    x = np.array([np.inf, -np.inf, np.nan, 0.0])
    got64 = pyasc.operator(lambda t: pyasc.gelu(t))(x)
    got32 = pyasc.operator(lambda t: pyasc.gelu(t))(x.astype(np.float32))
    assert got64[0] == np.inf and got32[0] == np.inf
    np.testing.assert_array_equal(np.isnan(got64), np.isnan(got32))


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: np.broadcast_to(t, (2**40, 2**40, 3)),
        lambda t: np.pad(t, 2**62),
        lambda t: t.reshape(2**62, -1),
    ],
)
def test_sizes_past_the_address_space_are_shape_errors(fn):
    with pytest.raises(pyasc.ShapeError):
        pyasc.operator(fn)(np.ones(3, np.float32))


def test_reductions_of_huge_broadcasts_need_no_row_sized_memory():
    n = 2**33
    x = np.broadcast_to(np.full(1, 1.5, np.float32), (n,))
    s, m, a = pyasc.operator(lambda t: (t.sum(), t.max(), t.argmin()))(x)
    assert s == np.float32(1.5 * n) and m == np.float32(1.5) and a == 0
    assert s.dtype == np.float32 and a.dtype == np.int64


def test_broadcast_rows_longer_than_memory_reduce_in_closed_form():
    x = np.broadcast_to(np.arange(3, dtype=np.int64)[:, None], (3, 2**40))
    s, m = pyasc.operator(lambda t: (t.sum(axis=1), (t * 2).max(axis=1)))(x)
    np.testing.assert_array_equal(s, [0, 2**40, 2**41])
    np.testing.assert_array_equal(m, [0, 2, 4])


@pytest.mark.parametrize("make", [lambda: pyasc.DeviceArray((2**40, 2**40), np.float32),
                                  lambda: pyasc.zeros((2**62, 8)), lambda: pyasc.empty((2**61,), np.float64)])
def test_device_arrays_past_the_address_space_are_shape_errors(make):
    with pytest.raises(pyasc.ShapeError):
        make()


def test_ufunc_of_a_python_scalar_is_a_strong_numpy_scalar():
    x = np.ones(3, np.float32)
    got = pyasc.operator(lambda v, s: v * np.sign(s))(x, 2.0)
    assert_matches(got, x * np.sign(2.0))
    # Arithmetic on Python scalars alone stays weak, as in NumPy.
    assert_matches(pyasc.operator(lambda v, s: v * (s * 2))(x, 2.0), x * (2.0 * 2))


def test_integer_mean_accumulates_in_float64():
    x = np.array([2**62, 2**62, 1], np.int64)
    assert_matches(pyasc.operator(lambda v: v.mean())(x), np.asarray(x.mean()))
    assert_matches(pyasc.operator(lambda v: np.mean(v, axis=0))(x.reshape(3, 1)), x.reshape(3, 1).mean(axis=0))


def test_comparisons_with_python_ints_outside_the_dtype_are_exact():
    x = np.array([-3, 0, 7], np.int32)
    fn = lambda v: (v < 2**40, v == 2**32 + 7, v > -2**40, v != 2**33, v >= 2**31)  # noqa: E731
    for g, w in zip(pyasc.operator(fn)(x), fn(x)):
        assert_matches(g, w)


def test_real_imag_conj_methods():
    x = np.array([1.5, -2.0, 0.0])
    got = pyasc.operator(lambda v: (v.real, v.imag, v.conj(), v.conjugate(), np.conj(v)))(x)
    for g, w in zip(got, (x.real, x.imag, x.conj(), x.conjugate(), np.conj(x))):
        assert_matches(g, np.ascontiguousarray(w))


def test_bool_and_integer_unary_dtypes_follow_numpy():
    b = np.array([True, False, True])
    i = np.array([-3, -1, 1, 2, 7], np.int32)
    cases = [(np.floor, b), (np.ceil, b), (np.trunc, b), (np.square, b), (np.reciprocal, b),
             (np.reciprocal, i), (np.fabs, i), (np.abs, b)]
    for fn, x in cases:
        got = pyasc.operator(fn)(x)
        with np.errstate(divide="ignore"):
            want = fn(x) if fn is not np.reciprocal or x.dtype != bool else np.array([1, 0, 1], np.int8)
        assert_matches(got, want)
    assert_matches(pyasc.relu(b), np.maximum(b, False))


def test_float_functions_of_a_python_bool_are_float16():
    got = pyasc.operator(lambda v: np.exp(v))(True)
    assert got.dtype == np.float16 and got == np.exp(True)


def test_big_endian_inputs_are_read_through_a_native_copy():
    x = np.arange(6.0).reshape(2, 3).astype(">f4")
    i = np.arange(-3, 4).astype(">i8")
    got = pyasc.operator(lambda a, b: (a * 2 + 1, b.sum(), a.T))(x, i)
    for g, w in zip(got, (x * 2 + 1, i.sum(), x.T)):
        assert_matches(g, np.asarray(w, w.dtype.newbyteorder("=")))
    assert x.dtype == np.dtype(">f4")  # the input is untouched


def test_zero_d_reductions_take_axis_0_and_minus_1_as_numpy_does():
    a = np.array(2.5)
    got = pyasc.operator(lambda t: (np.sum(t, axis=0), t.max(axis=-1), np.argmax(t, axis=0)))(a)
    for g, w in zip(got, (np.sum(a, axis=0), a.max(axis=-1), np.argmax(a, axis=0))):
        assert_matches(g, np.asarray(w))
    with pytest.raises(pyasc.ShapeError):
        pyasc.operator(lambda t: t.sum(axis=1))(a)


def test_moving_a_python_scalar_makes_it_strongly_typed():
    c = np.float32(1)
    f = pyasc.operator(lambda a, b: np.fmax(np.reshape(a, (1, -1)).T, b))
    assert_matches(f(-2, c), np.fmax(np.reshape(-2, (1, -1)).T, c))


def test_a_negative_integer_exponent_known_only_at_run_time_is_a_value_error():
    f = pyasc.operator(lambda a, b: a ** b)
    np.testing.assert_array_equal(f(np.arange(4), 2), np.arange(4) ** 2)
    for exp in (-1, np.array([1, 2, -3, 0])):
        with pytest.raises(pyasc.InvalidArgumentError, match="negative integer powers") as e:
            f(np.arange(1, 5, dtype=np.int32), exp)
        assert isinstance(e.value, ValueError)
    np.testing.assert_array_equal(f(np.arange(4), 3), np.arange(4) ** 3)  # still usable


@pytest.mark.parametrize("x", [np.arange(-3, 4), np.array([0, 2**64 - 1], np.uint64), np.arange(3, dtype=np.int8),
                               np.linspace(-1, 1, 4, dtype=np.float32)])
def test_comparisons_with_python_ints_beyond_every_integer_dtype(x):
    def f(a):
        return a < 2**64, a > -2**70, a == 2**65, a != -2**65, 2**200 <= a

    with np.errstate(over="ignore"):  # NumPy warns converting 2**200 to float32, then compares
        wants = f(x)
    for got, want in zip(pyasc.operator(f)(x), wants):
        assert_matches(got, want)


def test_python_ints_computed_from_arguments_are_range_checked_at_each_call():
    x = np.arange(3, dtype=np.int8)
    f = pyasc.operator(lambda a, s: a + (s + 1))
    for s in (5, 126, -129):
        assert_matches(f(x, s), x + (s + 1))
    with pytest.raises(pyasc.IntegerOverflowError) as e:
        f(x, 127)
    assert isinstance(e.value, OverflowError)
    with pytest.raises(OverflowError):
        x + (127 + 1)  # NumPy raises the same
    g = pyasc.operator(lambda a, s: (a < s * 2, a == s - 300))
    for got, want in zip(g(x, 100), (x < 200, x == 100 - 300)):
        assert_matches(got, want)


def test_python_int_arithmetic_on_arguments_that_leaves_int64_is_an_overflow_error():
    f = pyasc.operator(lambda x, s: x + (s + 1))
    with pytest.raises(pyasc.IntegerOverflowError):
        f(np.zeros(2, np.int64), 2**63 - 1)
    g = pyasc.operator(lambda x, s: x + s * s)
    with pytest.raises(pyasc.IntegerOverflowError):
        g(np.zeros(2, np.int8), 2**32)
    assert_matches(g(np.zeros(2), 3), np.zeros(2) + 9)


def test_overlapping_device_array_copies_match_np_copyto():
    n = 1 << 22  # large enough for the parallel copy path
    for shift in (1, -1):
        a = pyasc.to_device(np.arange(n, dtype=np.float32))
        ref = np.arange(n, dtype=np.float32)
        if shift > 0:
            a[1:].copy_from(a[:-1])
            np.copyto(ref[1:], ref[:-1])
        else:
            a[:-1].copy_from(a[1:])
            np.copyto(ref[:-1], ref[1:])
        np.testing.assert_array_equal(a.numpy(), ref)


def test_big_endian_captured_arrays():
    w = np.arange(4, dtype=">f4")
    f = pyasc.operator(lambda x: x + w)
    assert_matches(f(np.zeros(4, np.float32)), np.arange(4, dtype=np.float32))
    w[:] = 7
    assert_matches(f(np.zeros(4, np.float32)), np.full(4, 7, np.float32))


def test_geared_shape_rules_broken_by_padding_run_unpadded():
    w = np.ones((4, 5))
    op = pyasc.operator(dynamic_shape=True, gears={0: [8]})(lambda x, w: w @ x)
    x = np.arange(15.0).reshape(5, 3)
    np.testing.assert_array_equal(op(x, w), w @ x)
    bad = pyasc.operator(dynamic_shape=True, gears={0: [8]})(lambda x, w: w @ x)
    with pytest.raises(pyasc.ShapeError):
        bad(np.ones((6, 3)), w)


@pytest.mark.parametrize("dt", [np.bool_, np.int8, np.int16, np.uint16, np.int32, np.float32, np.int64, np.complex64])
def test_reshape_that_copies_a_strided_view_of_every_element_size(dt):
    # A reshape the strides cannot express gathers the elements into a copy of their own size.
    a = (np.arange(48).reshape(4, 3, 4) % 11).astype(dt)[::2]
    for _ in range(20):  # a wrong element size wrote past the copy and corrupted the heap
        got = pyasc.operator(lambda t: (np.reshape(t, -1)[::2], np.reshape(t, (4, 6)).sum(axis=0)))(a)
        for g, w in zip(got, (np.reshape(a, -1)[::2], np.reshape(a, (4, 6)).sum(axis=0))):
            assert_matches(g, w)


@pytest.mark.parametrize("dt", [np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.float32])
def test_a_reduction_broadcast_along_columns_through_a_cast(dt):
    # Narrow integers put casts between a reduction and its consumer; a (n,) max of an n x n
    # array still broadcasts along the columns, not the rows.
    a = np.array([[4, 2, 1], [0, 3, 5], [7, 1, 2]]).astype(dt)
    for fn in (lambda t: np.max(t, axis=-1) + t, lambda t: t - np.min(t, axis=1),
               lambda t: np.max(t, axis=-1) * np.max(t, axis=-1, keepdims=True) + t[::-1]):
        assert_matches(pyasc.operator(fn)(a), fn(a))
        assert_matches(pyasc.operator(fn)(a[..., ::-1]), fn(a[..., ::-1]))


def test_a_reduction_of_a_value_uniform_over_each_row():
    y = np.array([[0.5, 1.5, -2, 1], [3, 4, 5, 6]], np.float32)

    def f(t):
        m = np.mean(t, axis=-1, keepdims=True)
        return np.sum(m + np.zeros_like(t), axis=-1), (m * 2 + 0 * t).max(axis=-1), (m + t * 0).sum(axis=-1) + t[:, 0]

    for got, want in zip(pyasc.operator(f)(y), f(y)):
        assert_matches(got, want, rtol=1e-6)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_uniform_value_beside_a_row_reduction():
    # The mean of an empty axis is a NaN that depends on nothing; beside a row maximum it is
    # computed once per row, and a fill of a non-row shape stays per element.
    c, e = np.arange(6.0).reshape(3, 2, 1), np.zeros(0)
    x = np.random.default_rng(3).standard_normal((3, 2, 3))

    def f(c, e):
        m = (c + e).mean(axis=-1, keepdims=True)
        r = (c + np.arange(3.0)).max(axis=-1, keepdims=True)
        s = (c + e).sum(axis=-1, keepdims=True)
        return np.minimum(m, r), np.minimum(m * 2 + 1, r) - s, (c + e).prod(-1) + r[..., 0]

    for got, want in zip(pyasc.operator(f)(c, e), f(c, e)):
        assert_matches(got, want)

    def g(t, z):
        return np.maximum(np.exp((z * t[..., :0]).sum(-1, keepdims=True)), t.max(-1, keepdims=True)) + t, -np.minimum(
            np.exp(t[0, :1, :0].sum(-1, keepdims=True) * 2), t.min(-1, keepdims=True))

    for got, want in zip(pyasc.operator(g)(x, np.float64(2.0)), g(x, np.float64(2.0))):
        assert_matches(got, want)

    def h(t, u):
        # uint64 floor division is not folded: the quotient of an empty uint64 sum stays an op
        # on a constant alone, lowered per row.
        s = ((u[..., :0] + np.uint64(3)).sum(-1, keepdims=True) + np.uint64(9)) // np.uint64(2)
        return np.minimum(s, t.max(-1, keepdims=True)), s - t.sum(-1, keepdims=True) + t

    u = np.arange(18, dtype=np.uint64).reshape(3, 2, 3)
    for got, want in zip(pyasc.operator(h)(x, u), h(x, u)):
        assert_matches(got, want)


@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64])
def test_integer_reciprocal_of_zero_is_numpys(dt):
    # NumPy's integer 1/0 on x86 is the "integer indefinite" MIN, wrapped to the dtype: MIN for
    # int32/int64, 0 for narrower and unsigned dtypes; kernels and constant folding agree.
    info = np.iinfo(dt)
    x = np.array([0, 1, 2, info.max, info.min, 0], dt)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.reciprocal(x)
        assert_matches(pyasc.operator(np.reciprocal)(x), want)
        assert_matches(pyasc.operator(lambda t: np.reciprocal(t[::-1]))(x), want[::-1])
        # The empty sum is a constant fill: its reciprocal is folded at compile time.
        fold = lambda t: np.reciprocal(np.sum(t[:0], dtype=dt, keepdims=True)) + t  # noqa: E731
        assert_matches(pyasc.operator(fold)(x), fold(x))
