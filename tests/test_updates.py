"""Updates inside operators (``y[idx] = v``, augmented assignment, ``np.add.at``, ``out=``,
``x.at[idx]``), checked against NumPy running the same function on arrays."""

import numpy as np
import pyasc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8, np.bool_]


def same(op_result, expected):
    got = np.asarray(op_result)
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_array_equal(got, expected)


def check(fn, *args):
    """Run ``fn`` as an operator and on NumPy copies; compare, and check no argument changed."""
    before = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    got = pyasc.operator(fn)(*args)
    for a, b in zip(args, before):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
    with np.errstate(all="ignore"):  # NumPy's scalar arithmetic warns where integers wrap
        expected = fn(*[np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args])
    if isinstance(expected, tuple):
        for g, e in zip(got, expected):
            same(g, e)
    else:
        same(got, expected)


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 50, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# -- static indices ---------------------------------------------------------------------------

KEYS = [
    0, -1, (1, 2), (-1, -2), slice(None), slice(1, None), slice(None, None, 2), slice(None, None, -1),
    slice(-2, 0, -1), (slice(None), 0), (Ellipsis, 1), (0, Ellipsis), (None, 0), (slice(None), None, 1),
    (slice(1, 3), slice(None, None, -2)), Ellipsis, (),
    np.array([0, 2]), np.array([2, 0, 2]), [1, -1], (np.array([0, 1]), np.array([2, 3])),
    (slice(None), np.array([3, 0, 3])), (np.array([[0], [2]]), np.array([1, 3])),
    (0, slice(None), np.array([1, 0])), (np.array([1, 0]), slice(None), 0),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_setitem_scalar_matches_numpy(key, dtype):
    x = data((3, 4, 5), dtype)

    def f(x):
        y = x * 2
        y[key] = 7
        return y

    check(f, x)


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_augmented_assignment_matches_numpy(key):
    x = data((3, 4, 5), np.float64)

    def f(x):
        y = x + 1
        y[key] += 10
        y[key] *= 2
        y[key] -= x[key]
        return y

    check(f, x)


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/=", "//=", "%=", "**=", "&=", "|=", "^=", "<<=", ">>="])
def test_every_augmented_operator(op):
    x = data((4, 3), np.int64, 1) + 1
    fl = op in ("/=",)
    ns = {}
    src = f"def f(x):\n    y = x {'* 1.0' if fl else '* 1'}\n    y[1:, ::2] {op} 2\n    y {op} 3\n    return y\n"
    exec(src, ns)
    check(ns["f"], x)


def test_whole_array_augmented_assignment_keeps_the_object():
    def f(x):
        y = x * 1
        z = y
        old = y + 0
        y += 1
        y *= x
        return z, old, y

    check(f, data((5, 3), np.float32))


def test_earlier_reads_keep_the_old_value():
    def f(x):
        y = x + 0
        a = y.sum()
        b = y * 2
        y[0] = 100
        return a, b, y

    check(f, data((3, 2), np.float64))


def test_views_follow_writes():
    def f(x):
        y = x + 0
        row, col, t = y[1], y[:, 2], y.T
        flat = y.reshape(-1)
        y[1, 2] = -5
        col[0] = 9
        t[3, 2] = 11
        flat[0] = 1
        return y, row * 1, col * 1, t * 1, flat * 1

    check(f, data((3, 4), np.float32))


def test_write_through_a_view_of_a_view():
    def f(x):
        y = x * 1
        v = y[1:, ::-1][0]
        v[::2] = 0
        w = y[::2]
        w += 1
        return y, v + 0

    check(f, data((4, 6), np.int32))


def test_reshape_of_a_transposed_view_is_a_copy_as_in_numpy():
    def f(x):
        y = x * 1
        r = y.T.reshape(-1)
        r[0] = 123
        return y, r + 0

    check(f, data((3, 4), np.float32))


def test_broadcast_view_is_read_only():
    def f(x):
        y = x * 1
        b = np.broadcast_to(y, (2, 3))
        b[0, 0] = 1
        return y

    with pytest.raises(pyasc.TraceError, match="read-only"):
        pyasc.operator(f)(data((3,), np.float32))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vdtype", [np.float64, np.int64, np.bool_, np.float32])
def test_setitem_casts_unsafely_as_numpy(dtype, vdtype):
    x = data((4, 3), dtype)
    # Non-negative values: a negative float cast to an unsigned type is undefined in NumPy.
    v = np.abs(data((3,), vdtype, 2)) * (3 if vdtype != np.bool_ else 1)

    def f(x, v):
        y = x.copy()
        y[1] = v
        y[2:, 0] = 2.75 if dtype != np.bool_ else True
        return y

    check(f, x, v)


def test_augmented_assignment_enforces_same_kind():
    def f(x):
        y = x * 1
        y += 1.5
        return y

    with pytest.raises(TypeError):
        f(np.arange(3))
    with pytest.raises(TypeError):
        pyasc.operator(f)(np.arange(3))


def test_augmented_assignment_cannot_broadcast_the_target():
    def f(x, z):
        y = x * 1
        y += z
        return y

    with pytest.raises(ValueError):
        f(np.ones(3), np.ones((2, 3)))
    with pytest.raises(ValueError):
        pyasc.operator(f)(np.ones(3), np.ones((2, 3)))


def test_value_broadcasting_and_leading_ones():
    def f(x, v, w):
        y = x * 1
        y[:, 1:3] = v
        y[0] = w
        return y

    check(f, data((4, 5), np.float32), data((4, 1), np.float32, 1), data((1, 1, 5), np.float32, 2))


def test_bad_value_shape_raises_like_numpy():
    def f(x):
        y = x * 1
        y[0] = np.ones(4)
        return y

    with pytest.raises(ValueError):
        f(np.ones((3, 5)))
    with pytest.raises(ValueError):
        pyasc.operator(f)(np.ones((3, 5)))


def test_out_of_bounds_static_index():
    def f(x):
        y = x * 1
        y[5] = 1
        return y

    with pytest.raises(IndexError):
        f(np.ones(3))
    with pytest.raises(pyasc.ShapeError):
        pyasc.operator(f)(np.ones(3))


# -- repeated indices -------------------------------------------------------------------------


def test_repeated_indices_last_write_wins_and_iadd_applies_once():
    def f(x):
        y = x * 1
        y[np.array([1, 1, 3, 1])] = np.array([10.0, 20.0, 30.0, 40.0])
        z = x * 1
        z[np.array([0, 0, 2, 0])] += np.array([1.0, 2.0, 4.0, 8.0])
        return y, z

    check(f, data((5,), np.float64))


def test_np_add_at_accumulates():
    def f(x):
        y = x * 1
        np.add.at(y, np.array([0, 0, 2, 0]), np.array([1, 2, 4, 8]))
        np.subtract.at(y, (np.array([1, 1]),), 3)
        np.multiply.at(y, np.array([4, 4]), 2)
        np.maximum.at(y, np.array([3, 3]), np.array([100, -100]))
        np.minimum.at(y, np.array([2]), -7)
        return y

    check(f, data((6,), np.int64))


# -- traced indices and masks -----------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 8), m=st.integers(0, 10), seed=st.integers(0, 2**16), dt=st.sampled_from(DTYPES[:6]))
def test_traced_integer_indices_match_numpy(n, m, seed, dt):
    rng = np.random.default_rng(seed)
    x = data((n, 3), dt, seed)
    idx = rng.integers(-n, n, size=m)
    v = data((m, 3), dt, seed + 1)

    def f(x, idx, v):
        y = x * 1
        y[idx] = v
        z = x * 1
        z[idx, 1] += v[:, 0]
        return y, z

    check(f, x, idx, v)


def test_traced_index_mixed_with_slices_and_separated_arrays():
    x = data((4, 5, 6), np.float32)
    i, j = np.array([3, 0, -1]), np.array([[3], [0]])

    def f(x, i, j):
        y = x * 1
        y[:, 1:4, i] = 0
        y[i, :, 2] = 7
        y[j, 1, i] -= 1
        return y, x[i, ::2, j], x[j, 1, i]

    check(f, x, i, j)


def test_traced_index_out_of_range_raises():
    def f(x, i):
        y = x * 1
        y[i] = 0
        return y

    with pytest.raises(pyasc.ShapeError):
        pyasc.operator(f)(np.ones(4), np.array([4]))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
def test_boolean_mask_assignment_is_where(dtype):
    x = data((5, 4), dtype)

    def f(x):
        y = x * 1
        y[y > 20] = 1
        y[x % 2 == 0] = 3
        y[y > 10] += 2
        y[(x > 5) & (x < 30)] *= 2
        y[y < 4] //= 2
        m = x[:, 0] > 10
        y[m] = 0
        return y

    check(f, x)


def test_static_boolean_mask_reads_and_writes():
    mask = np.array([True, False, True, True])

    def f(x):
        y = x * 1
        y[mask] = -1
        return y, x[mask], x[:, mask[:3]] if x.ndim == 2 else x

    check(f, data((4,), np.float64))


def test_traced_boolean_mask_read_still_raises_with_the_where_hint():
    with pytest.raises(pyasc.TraceError, match="where"):
        pyasc.operator(lambda x: x[x > 0])(np.ones(3))

    def read_then_use(x):
        y = x * 1
        z = y[y > 0] + 1
        return z

    with pytest.raises(pyasc.TraceError, match="where"):
        pyasc.operator(read_then_use)(np.ones(3))


# -- arguments are never written --------------------------------------------------------------


def _line_of(fn, text):
    import inspect

    src, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(src) if text in line)


def w_item(x):
    x[0] = 1  # write
    return x


def w_iadd(x):
    x += 1  # write
    return x


def w_out(x):
    np.add(x, 1, out=x)  # write
    return x


def w_view(x):
    x[:, 0][0] = 1  # write
    return x


def w_transposed(x):
    x.T[0] = 1  # write
    return x


def w_reshaped(x):
    x.reshape(-1)[0] = 1  # write
    return x


def w_add_at(x):
    np.add.at(x, [0], 1)  # write
    return x


def w_mask_iadd(x):
    x[x > 0] += 1  # write
    return x


def w_view_iadd(x):
    v = x[1:]
    v *= 2  # write
    return x


@pytest.mark.parametrize("fn", [w_item, w_iadd, w_out, w_view, w_transposed, w_reshaped, w_add_at, w_view_iadd,
                                w_mask_iadd])
def test_writing_an_argument_is_a_trace_error_at_the_users_line(fn):
    x = np.ones((3, 4), np.float32)
    with pytest.raises(pyasc.TraceError, match="argument") as e:
        pyasc.operator(fn)(x)
    assert e.value.lineno == _line_of(fn, "# write")
    assert e.value.filename == __file__
    np.testing.assert_array_equal(x, 1)


def test_scalar_arguments_rebind_on_augmented_assignment():
    def f(x, a):
        a += 1
        return x * a

    check(f, np.arange(3.0), 2.0)


def test_out_on_body_arrays_and_return_value():
    def f(x):
        y = x * 1
        r = np.add(x, 1, out=y)
        np.multiply(y, 2, out=y)
        return y, r

    check(f, data((3, 3), np.float32))


# -- JAX's x.at ---------------------------------------------------------------------------------


def jax_like(x, idx, v, mode):
    y = np.array(x, copy=True)
    if mode == "set":
        y[idx] = v
    else:
        {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}[mode].at(y, idx, v)
    return y


@pytest.mark.parametrize("mode", ["set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("traced", [False, True])
def test_at_updates_on_arguments(mode, traced):
    x = data((6, 2), np.int64, 3)
    idx = np.array([1, 4, 1, -1, 1])
    v = data((5, 2), np.int64, 4)
    if traced:
        op = pyasc.operator(lambda x, i, v: getattr(x.at[i], mode)(v))
        got = op(x, idx, v)
    else:
        op = pyasc.operator(lambda x, v: getattr(x.at[idx], mode)(v))
        got = op(x, v)
    same(got, jax_like(x, idx, v, mode))
    np.testing.assert_array_equal(x, data((6, 2), np.int64, 3))


def test_at_with_slices_masks_and_get():
    x = data((4, 5), np.float32)

    @pyasc.operator
    def f(x):
        return x.at[1:3, ::2].set(0), x.at[x > 0].multiply(2), x.at[:, 1].get(), x.at[0].add(1.5)

    a, b, c, d = f(x)
    e = x.copy()
    e[1:3, ::2] = 0
    same(a, e)
    same(b, np.where(x > 0, x * 2, x))
    same(c, x[:, 1])
    e = x.copy()
    e[0] += np.float32(1.5)
    same(d, e)


def test_at_float_add_accumulates_in_order():
    x = np.zeros(3, np.float32)
    v = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    got = pyasc.operator(lambda x, v: x.at[np.array([0, 0, 0, 2])].add(v))(x, v)
    e = x.copy()
    np.add.at(e, np.array([0, 0, 0, 2]), v)
    same(got, e)


# -- differential fuzzing over random programs of updates ----------------------------------------


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), steps=st.integers(1, 6), dt=st.sampled_from(DTYPES[:6]))
def test_random_update_programs(seed, steps, dt):
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in rng.integers(1, 5, size=int(rng.integers(1, 4))))
    x = data(shape, dt, seed)
    ops = []
    for _ in range(steps):
        ax = int(rng.integers(0, len(shape)))
        kind = rng.integers(0, 4)
        if kind == 0:
            start = int(rng.integers(-shape[ax], shape[ax]))
            key = (slice(None),) * ax + (start,)
        elif kind == 1:
            step = int(rng.choice([-2, -1, 1, 2]))
            key = (slice(None),) * ax + (slice(None, None, step),)
        elif kind == 2:
            key = (slice(None),) * ax + (rng.integers(-shape[ax], shape[ax], size=int(rng.integers(0, 5))),)
        else:
            key = Ellipsis
        ops.append((key, str(rng.choice(["=", "+=", "*=", "-="])), int(rng.integers(0, 9))))

    def f(x):
        y = x * 1
        for key, how, val in ops:
            if how == "=":
                y[key] = val
            elif how == "+=":
                y[key] += val
            elif how == "*=":
                y[key] *= val
            else:
                y[key] -= val
        return y

    check(f, x)


def test_flatten_is_a_copy_and_ravel_a_view():
    def f(x):
        y = x * 1
        a, b = y.flatten(), y.ravel()
        y[0, 0] = 50
        return a + 0, b + 0

    check(f, data((2, 3), np.float32))


@pytest.mark.parametrize("opts", [{"dynamic_shape": True}, {"dynamic_shape": True, "gears": "pow2"}])
def test_updates_under_dynamic_shapes_and_gears(opts):
    def f(x):
        y = x * 1
        y[-1] = 5
        y[1:] += 1
        y[::2] *= 3
        return y

    op = pyasc.operator(**opts)(f)
    for n in (4, 6, 5, 3, 4):
        x = np.arange(n, dtype=np.float32)
        same(np.asarray(op(x))[:n], f(x.copy()))


def test_updates_with_device_arrays_on_a_stream():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    @pyasc.operator
    def f(x, i):
        y = x * 2
        y[i, 1:] += 1
        return y, x.at[i].set(0)

    s = pyasc.Stream()
    with pyasc.stream(s):
        y, z = f(pyasc.to_device(x), pyasc.to_device(np.array([2, 0])))
    assert isinstance(y, pyasc.DeviceArray)
    e = x * 2
    e[np.array([2, 0]), 1:] += 1
    same(y.numpy(), e)
    e = x.copy()
    e[[2, 0]] = 0
    same(z.numpy(), e)


def test_unary_plus_makes_a_new_array():
    # NumPy's `+x` is np.positive: a copy, so writing into it leaves the argument alone.
    x = np.arange(4.0)

    def f(t):
        y = +t
        y[0] = 9
        return y, +t

    got, want = pyasc.operator(f)(x), f(x.copy())
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(x, np.arange(4.0))
    with pytest.raises(TypeError):
        pyasc.operator(lambda t: +t)(np.array([True]))
