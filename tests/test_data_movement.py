"""Data movement against NumPy, exactly (values, dtype and shape): ``pad`` in every mode,
``concatenate``/``stack`` with NumPy's promotion, ``take`` and integer-array indexing, and the
creation functions ``zeros ones full arange`` inside and outside operators."""

from __future__ import annotations

import numpy as np
import pyasc
import pytest
from conftest import assert_matches, line_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

MODES = ["constant", "edge", "reflect", "wrap"]
DTYPES = ["bool", "int32", "int64", "float32", "float64"]



def _values(rng, shape, dtype):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(-50, 51, shape).astype(dtype)


def _pad_ref(x, width, mode, cval=0):
    if mode == "constant":
        return np.pad(x, width, mode=mode, constant_values=cval)
    return np.pad(x, width, mode=mode)


# ---------------------------------------------------------------------------------------------
# pad


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("width", [0, 2, (1, 3), ((2, 0), (1, 4)), ((3,), (1,)), ((0, 0), (0, 0))])
def test_pad_width_forms_2d(mode, width):
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    want = _pad_ref(x, width, mode)
    assert_matches(pyasc.operator(lambda t: np.pad(t, width, mode=mode))(x), want)
    assert_matches(pyasc.operator(lambda t: pyasc.pad(t, width, mode))(x), want)
    assert_matches(np.asarray(pyasc.pad(x, width, mode)), want)  # eager on a NumPy array


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cval", [0, 1, 7, -2.5, True])
def test_pad_constant_values(dtype, cval):
    x = _values(np.random.default_rng(1), (4, 3), dtype)
    if dtype in ("bool", "int32", "int64") and isinstance(cval, float):
        cval = -2  # NumPy would silently truncate; keep the reference well defined
    want = np.pad(x, ((1, 2), (3, 0)), constant_values=cval)
    got = pyasc.operator(lambda t: np.pad(t, ((1, 2), (3, 0)), mode="constant", constant_values=cval))(x)
    assert_matches(got, want)
    got = pyasc.operator(lambda t: pyasc.pad(t, ((1, 2), (3, 0)), "constant", cval))(x)
    assert_matches(got, want)


@pytest.mark.parametrize("mode", ["reflect", "wrap", "edge", "constant"])
@pytest.mark.parametrize("shape,width", [
    ((3,), (7, 11)),              # wider than the axis: reflect/wrap repeat periodically
    ((2,), 9),
    ((1,), (0, 3)),               # size-1 axis (reflect of one element is that element)
    ((4, 1), ((5, 6), (2, 3))),
    ((1, 3, 2), ((2, 2), (4, 5), (3, 1))),
    ((2, 3, 4), 1),
])
def test_pad_widths_larger_than_axis_and_size_one_axes(mode, shape, width):
    x = np.arange(1, int(np.prod(shape)) + 1, dtype=np.int32).reshape(shape)
    want = _pad_ref(x, width, mode)
    assert_matches(pyasc.operator(lambda t: np.pad(t, width, mode=mode))(x), want)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("view", ["T", "rev", "step", "bcast"])
def test_pad_of_views(mode, view):
    base = np.arange(30, dtype=np.float64).reshape(5, 6) - 7.5
    x = {"T": base.T, "rev": base[::-1, ::-2], "step": base[::2, 1::2],
         "bcast": np.broadcast_to(base[0], (3, 6))}[view]
    before = base.copy()
    width = ((2, 3), (4, 1))
    want = _pad_ref(x, width, mode)
    assert_matches(pyasc.operator(lambda t: np.pad(t, width, mode=mode))(x), want)
    np.testing.assert_array_equal(base, before)  # inputs are never modified


@pytest.mark.parametrize("mode", MODES)
def test_pad_of_views_traced_inside(mode):
    x = np.arange(24, dtype=np.int64).reshape(2, 3, 4)

    @pyasc.operator
    def f(t):
        return np.pad(t.transpose(2, 0, 1)[::-1], ((1, 0), (2, 2), (0, 3)), mode=mode)

    assert_matches(f(x), _pad_ref(x.transpose(2, 0, 1)[::-1], ((1, 0), (2, 2), (0, 3)), mode))


@pytest.mark.parametrize("mode", MODES)
def test_pad_then_elementwise(mode):
    rng = np.random.default_rng(2)
    x = rng.integers(-9, 10, (5, 7)).astype(np.float32)
    y = rng.integers(-9, 10, (8, 10)).astype(np.float32)

    @pyasc.operator
    def f(a, b):
        p = np.pad(a * 2.0, ((1, 2), (0, 3)), mode=mode)
        return p * b + 1.0, np.maximum(p, 0) - b

    p = _pad_ref(x * np.float32(2.0), ((1, 2), (0, 3)), mode)
    g1, g2 = f(x, y)
    assert_matches(g1, p * y + np.float32(1.0))
    assert_matches(g2, np.maximum(p, 0) - y)


def test_pad_int_promotes_with_float_after():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = pyasc.operator(lambda t: np.pad(t, 1, mode="wrap") / 2)(x)
    assert_matches(got, np.pad(x, 1, mode="wrap") / 2)


@pytest.mark.parametrize("width", [((1, 2), (3, 4), (5, 6)), ((1, 2, 3),), (-1, 2), ((1, -2), (0, 0))])
def test_pad_bad_width_is_shape_error(width):
    x = np.ones((3, 4), np.float32)
    with pytest.raises(pyasc.ShapeError):
        pyasc.operator(lambda t: np.pad(t, width))(x)
    with pytest.raises(pyasc.ShapeError):
        pyasc.pad(x, width)


@pytest.mark.parametrize("width", ["ab", 1.5, ((1, 2.5), (0, 0))])
def test_pad_non_integer_width_is_rejected(width):
    x = np.ones((3, 4), np.float32)
    with pytest.raises((pyasc.ShapeError, pyasc.DTypeError)):
        pyasc.operator(lambda t: np.pad(t, width))(x)


@pytest.mark.parametrize("mode", MODES)
def test_pad_empty_axis(mode):
    x = np.zeros((0, 3), np.float32)
    op = pyasc.operator(lambda t: np.pad(t, ((0, 0), (1, 2)), mode=mode))
    assert_matches(op(x), _pad_ref(x, ((0, 0), (1, 2)), mode))
    if mode == "constant":
        assert_matches(pyasc.operator(lambda t: np.pad(t, 1))(x), np.pad(x, 1))
    else:  # NumPy raises ValueError: nothing to extend an empty axis from
        with pytest.raises(pyasc.ShapeError):
            pyasc.operator(lambda t: np.pad(t, 1, mode=mode))(x)


def test_pad_symmetric_is_unsupported():
    x = np.ones((3, 4), np.float32)
    with pytest.raises(pyasc.UnsupportedError):
        pyasc.operator(lambda t: np.pad(t, 1, mode="symmetric"))(x)
    with pytest.raises(pyasc.UnsupportedError):
        pyasc.operator(lambda t: pyasc.pad(t, 1, "symmetric"))(x)


@st.composite
def pad_cases(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    mode = draw(st.sampled_from(MODES))
    dtype = draw(st.sampled_from(DTYPES))
    form = draw(st.sampled_from(["int", "pair", "per_axis"]))
    w = st.integers(0, 9)
    if form == "int":
        width = draw(w)
    elif form == "pair":
        width = (draw(w), draw(w))
    else:
        width = tuple((draw(w), draw(w)) for _ in range(rank))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    view = draw(st.sampled_from(["plain", "T", "rev"]))
    if view == "T":
        x = _values(rng, shape[::-1], dtype).T
    elif view == "rev":
        x = _values(rng, shape, dtype)[::-1]
    else:
        x = _values(rng, shape, dtype)
    cval = draw(st.integers(-3, 3)) if dtype != "bool" else draw(st.booleans())
    then = draw(st.sampled_from(["none", "add"]))
    return x, width, mode, cval, then


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pad_cases())
def test_pad_matches_numpy_hypothesis(case):
    x, width, mode, cval, then = case
    want = _pad_ref(x, width, mode, cval)
    if mode == "constant":
        fn = lambda t: np.pad(t, width, mode="constant", constant_values=cval)  # noqa: E731
    else:
        fn = lambda t: np.pad(t, width, mode=mode)  # noqa: E731
    if then == "add" and x.dtype != np.bool_:
        want = want + want
        got = pyasc.operator(lambda t: (lambda p: p + p)(fn(t)))(x)
    else:
        got = pyasc.operator(fn)(x)
    assert_matches(got, want)


# ---------------------------------------------------------------------------------------------
# concatenate and stack


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3, None])
def test_concatenate_axes(axis):
    rng = np.random.default_rng(3)
    a, b, c = (rng.integers(-9, 10, s).astype(np.float32) for s in [(2, 3, 4), (2, 3, 4), (2, 3, 4)])
    want = np.concatenate([a, b, c], axis=axis)
    assert_matches(pyasc.operator(lambda x, y, z: np.concatenate([x, y, z], axis=axis))(a, b, c), want)
    assert_matches(pyasc.operator(lambda x, y, z: pyasc.concatenate((x, y, z), axis))(a, b, c), want)
    assert_matches(np.asarray(pyasc.concatenate([a, b, c], axis)), want)


def test_concatenate_unequal_extents_on_axis():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    b = np.arange(10, dtype=np.int64).reshape(2, 5) * -1
    c = np.zeros((2, 0), np.int64)
    want = np.concatenate([a, c, b], axis=-1)
    assert_matches(pyasc.operator(lambda x, y, z: np.concatenate([x, z, y], axis=-1))(a, b, c), want)
    assert_matches(pyasc.operator(lambda x, y: np.concatenate([x, y], axis=None))(a, b),
                   np.concatenate([a, b], axis=None))


@pytest.mark.parametrize("d1,d2", [("int32", "float32"), ("int64", "float32"), ("bool", "int32"),
                                   ("int32", "int64"), ("float32", "float64"), ("bool", "float64")])
def test_concatenate_and_stack_promote_like_numpy(d1, d2):
    rng = np.random.default_rng(4)
    a, b = _values(rng, (3, 4), d1), _values(rng, (3, 4), d2)
    assert_matches(pyasc.operator(lambda x, y: np.concatenate([x, y], axis=1))(a, b), np.concatenate([a, b], axis=1))
    assert_matches(pyasc.operator(lambda x, y: np.stack([y, x], axis=-1))(a, b), np.stack([b, a], axis=-1))
    assert_matches(pyasc.operator(lambda x, y: pyasc.stack([x, y], 1))(a, b), np.stack([a, b], 1))


def test_concatenate_and_stack_of_views():
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    a, b, c = base.T[:, :4], base[::-1].T[:, 2:], np.broadcast_to(base[0, :4], (8, 4))
    assert_matches(pyasc.operator(lambda x, y, z: np.concatenate([x, y, z]))(a, b, c), np.concatenate([a, b, c]))
    assert_matches(pyasc.operator(lambda x, y, z: np.stack([x, y, z], axis=1))(a, b, c), np.stack([a, b, c], axis=1))

    @pyasc.operator
    def f(t):
        return np.concatenate([t.T, t[::-1].T], axis=0) + 1

    assert_matches(f(base), np.concatenate([base.T, base[::-1].T], axis=0) + 1)




def test_concatenate_and_stack_with_numpy_constants():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    k = np.full((3, 2), -1.0, np.float32)
    k64 = np.arange(4, dtype=np.int64)

    @pyasc.operator
    def f(t):
        return np.concatenate([k, t, k], axis=1)

    assert_matches(f(x), np.concatenate([k, x, k], axis=1))

    @pyasc.operator
    def g(t):
        return pyasc.stack([t[0], k64, t[2]])

    assert_matches(g(x), np.stack([x[0], k64, x[2]]))

    @pyasc.operator
    def h(t):
        return np.concatenate([np.ones((1, 4), np.float64), t * 2]) - 1

    assert_matches(h(x), np.concatenate([np.ones((1, 4), np.float64), x * 2]) - 1)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_stack_axes(axis):
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = -a
    want = np.stack([a, b, a], axis=axis)
    assert_matches(pyasc.operator(lambda x, y: np.stack([x, y, x], axis=axis))(a, b), want)
    assert_matches(np.asarray(pyasc.stack([a, b, a], axis)), want)


def test_concatenate_and_stack_mismatched_shapes_raise():
    a, b = np.ones((2, 3), np.float32), np.ones((3, 3), np.float32)
    with pytest.raises(pyasc.ShapeError):
        pyasc.operator(lambda x, y: np.concatenate([x, y], axis=1))(a, b)
    with pytest.raises(pyasc.ShapeError):
        pyasc.operator(lambda x, y: np.stack([x, y]))(a, b)
    with pytest.raises(pyasc.ShapeError):
        pyasc.operator(lambda x, y: np.concatenate([x, y[0]]))(a, b)  # ranks differ


def test_concatenate_mismatched_numpy_constant_is_shape_error():
    a = np.ones((2, 3), np.float32)
    with pytest.raises(pyasc.ShapeError):
        pyasc.operator(lambda x: np.concatenate([x, np.ones((2, 2), np.float32)], axis=0))(a)


@st.composite
def concat_cases(draw):
    rank = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank))
    axis = draw(st.integers(-rank, rank - 1))
    n = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    arrays = []
    for _ in range(n):
        s = list(shape)
        s[axis] = draw(st.integers(0, 4))
        arrays.append(_values(rng, tuple(s), draw(st.sampled_from(DTYPES))))
    kind = draw(st.sampled_from(["concatenate", "concat_none", "stack"]))
    if kind == "stack":
        s = tuple(shape)
        arrays = [_values(rng, s, a.dtype.name) for a in arrays]
        axis = draw(st.integers(-rank - 1, rank))
    return arrays, axis, kind


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(concat_cases())
def test_concatenate_stack_hypothesis(case):
    arrays, axis, kind = case
    if kind == "stack":
        want = np.stack(arrays, axis=axis)
        got = pyasc.operator(lambda *t: np.stack(t, axis=axis))(*arrays)
    else:
        ax = None if kind == "concat_none" else axis
        want = np.concatenate(arrays, axis=ax)
        got = pyasc.operator(lambda *t: np.concatenate(t, axis=ax))(*arrays)
    assert_matches(got, want)


# ---------------------------------------------------------------------------------------------
# take and integer-array indexing


@pytest.mark.parametrize("idx_dtype", ["int32", "int64"])
@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_take_traced_indices(idx_dtype, axis):
    x = np.arange(20, dtype=np.float32).reshape(4, 5) * 1.5
    idx = np.array([3, 0, -1, 2, -4, 3], dtype=idx_dtype)
    want = np.take(x, idx, axis=axis)
    assert_matches(pyasc.operator(lambda t, i: np.take(t, i, axis=axis))(x, idx), want)
    assert_matches(pyasc.operator(lambda t, i: pyasc.take(t, i, axis))(x, idx), want)
    assert_matches(np.asarray(pyasc.take(x, idx, axis)), want)


@pytest.mark.parametrize("axis", [0, 1, 2, None])
def test_take_2d_constant_indices(axis):
    x = np.arange(60, dtype=np.int64).reshape(3, 4, 5) - 30
    idx = np.array([[0, -1], [2, 1], [-2, 0]])

    @pyasc.operator
    def f(t):
        return np.take(t, idx, axis=axis) * 2

    assert_matches(f(x), np.take(x, idx, axis=axis) * 2)


def test_take_of_views():
    x = np.arange(24, dtype=np.float64).reshape(4, 6)
    v = x[::-1].T
    i = np.array([1, 1, 0], np.int32)
    assert_matches(pyasc.operator(lambda t, j: np.take(t, j, axis=0))(v, i), np.take(v, i, axis=0))
    assert_matches(pyasc.operator(lambda t, j: np.take(t, j, axis=1))(v, i), np.take(v, i, axis=1))


@pytest.mark.parametrize("axis", [0, 1, None])
def test_take_scalar_index_drops_axis(axis):
    x = np.arange(24, dtype=np.float64).reshape(4, 6)[::-1].T
    assert_matches(pyasc.operator(lambda t: np.take(t, 2, axis=axis))(x), np.take(x, 2, axis=axis))
    i = np.array(-1, np.int64)
    assert_matches(pyasc.operator(lambda t, j: np.take(t, j, axis=axis))(x, i), np.take(x, i, axis=axis))


def test_take_indices_from_arithmetic():
    x = np.arange(10, dtype=np.int32) * 3
    i = np.array([0, 1, 2], np.int64)
    assert_matches(pyasc.operator(lambda t, j: pyasc.take(t, j * 2 + 1, 0))(x, i), np.take(x, i * 2 + 1, 0))


def test_take_out_of_range_is_shape_error_with_user_line():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    def f(t, i):
        return np.take(t, i, axis=1)  # TAKE-LINE

    op = pyasc.operator(f)
    with pytest.raises(pyasc.ShapeError) as ei:
        op(x, np.array([0, 4], np.int32))
    assert ei.value.lineno == line_of(f, "TAKE-LINE")
    with pytest.raises(pyasc.ShapeError) as ei:
        op(x, np.array([-5], np.int64))
    assert ei.value.lineno == line_of(f, "TAKE-LINE")

    def g(t):
        return np.take(t, np.array([7]), axis=0)  # CONST-LINE

    with pytest.raises(pyasc.ShapeError) as ei:
        pyasc.operator(g)(x)
    assert ei.value.lineno == line_of(g, "CONST-LINE")

    def h(t):
        return t[[0, 3]]  # INDEX-LINE

    with pytest.raises(pyasc.ShapeError) as ei:
        pyasc.operator(h)(x)
    assert ei.value.lineno == line_of(h, "INDEX-LINE")


def test_take_float_indices_is_dtype_error():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with pytest.raises(pyasc.DTypeError):
        pyasc.operator(lambda t, i: np.take(t, i, axis=0))(x, np.array([0.0, 1.0], np.float32))
    with pytest.raises(pyasc.DTypeError):
        pyasc.operator(lambda t: np.take(t, np.array([1.0]), axis=0))(x)


def test_integer_array_indexing():
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    assert_matches(pyasc.operator(lambda t: t[[2, 0]])(x), x[[2, 0]])
    assert_matches(pyasc.operator(lambda t: t[:, [1, 3]])(x), x[:, [1, 3]])
    assert_matches(pyasc.operator(lambda t: t[[-1, 0, -1]] + 1)(x), x[[-1, 0, -1]] + 1)
    assert_matches(pyasc.operator(lambda t: t[:, np.array([[4, 0], [1, 1]])])(x), x[:, np.array([[4, 0], [1, 1]])])
    i = np.array([3, 1], np.int64)
    assert_matches(pyasc.operator(lambda t, j: t[j])(x, i), x[i])
    assert_matches(pyasc.operator(lambda t, j: t.T[:, j])(x, i), x.T[:, i])


@st.composite
def take_cases(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    axis = draw(st.one_of(st.none(), st.integers(-rank, rank - 1)))
    n = int(np.prod(shape)) if axis is None else shape[axis]
    idx_shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=2)))  # 0-d: see scalar xfail
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    idx = rng.integers(-n, n, idx_shape).astype(draw(st.sampled_from(["int32", "int64"])))
    x = _values(rng, shape, draw(st.sampled_from(DTYPES)))
    return x, idx, axis, draw(st.booleans())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(take_cases())
def test_take_hypothesis(case):
    x, idx, axis, traced = case
    want = np.take(x, idx, axis=axis)
    if traced:
        got = pyasc.operator(lambda t, i: np.take(t, i, axis=axis))(x, idx)
    else:
        got = pyasc.operator(lambda t: np.take(t, idx, axis=axis))(x)
    assert_matches(got, want)


# ---------------------------------------------------------------------------------------------
# creation


@pytest.mark.parametrize("xdtype", ["int32", "float32", "float64", "bool"])
def test_creation_broadcasts_into_expressions(xdtype):
    x = _values(np.random.default_rng(5), (3, 4), xdtype)

    @pyasc.operator
    def f(t):
        return (t + pyasc.zeros((3, 4)), t * pyasc.ones(4, np.int32), t - pyasc.full((1, 4), 2.5),
                t + pyasc.full((3, 1), 7, np.int64), pyasc.zeros((2, 3, 4), np.float64) + t)

    want = (x + np.zeros((3, 4), np.float32), x * np.ones(4, np.int32), x - np.full((1, 4), 2.5),
            x + np.full((3, 1), 7, np.int64), np.zeros((2, 3, 4), np.float64) + x)
    for g, w in zip(f(x), want):
        assert_matches(g, w)


def test_full_dtype_from_value():
    x = np.arange(4, dtype=np.int32)
    got = pyasc.operator(lambda t: (t + pyasc.full(4, 3), t + pyasc.full(4, 0.5), t & pyasc.full(4, True)))(x)
    want = (x + np.full(4, 3), x + np.full(4, 0.5), x & np.full(4, True))
    for g, w in zip(got, want):
        assert_matches(g, w)


def test_arange_in_expressions():
    x = np.arange(1, 13, dtype=np.float32).reshape(6, 2)

    @pyasc.operator
    def f(t):
        return t * pyasc.arange(t.shape[1]), t.T * pyasc.arange(t.shape[0]), pyasc.arange(2, 14, 2) + t[:, 0]

    g1, g2, g3 = f(x)
    assert_matches(g1, x * np.arange(x.shape[1]))
    assert_matches(g2, x.T * np.arange(x.shape[0]))
    assert_matches(g3, np.arange(2, 14, 2) + x[:, 0])

    y = np.arange(5, dtype=np.int32)
    assert_matches(pyasc.operator(lambda t: t * pyasc.arange(t.shape[0]))(y), y * np.arange(5))
    assert_matches(pyasc.operator(lambda t: t + pyasc.arange(0.0, 1.0, 0.2, dtype=np.float32))(y),
                   y + np.arange(0.0, 1.0, 0.2, dtype=np.float32))
    assert_matches(pyasc.operator(lambda t: t - pyasc.arange(10, 0, -2))(y), y - np.arange(10, 0, -2))


def test_creation_outside_operators():
    z = pyasc.zeros((2, 3))
    assert isinstance(z, pyasc.DeviceArray)
    assert_matches(np.asarray(z), np.zeros((2, 3), np.float32))
    o = pyasc.ones(4, np.int64)
    assert isinstance(o, pyasc.DeviceArray)
    assert_matches(np.asarray(o), np.ones(4, np.int64))
    f = pyasc.full((2, 2), 1.5)
    assert isinstance(f, pyasc.DeviceArray)
    assert_matches(np.asarray(f), np.full((2, 2), 1.5))
    f = pyasc.full(3, 7, np.int32)
    assert_matches(np.asarray(f), np.full(3, 7, np.int32))
    a = pyasc.arange(5)
    assert type(a) is np.ndarray
    assert_matches(a, np.arange(5))
    assert_matches(pyasc.arange(1, 10, 3), np.arange(1, 10, 3))
    assert_matches(pyasc.arange(0.5, 2.0, 0.5), np.arange(0.5, 2.0, 0.5))
