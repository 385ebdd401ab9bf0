"""Movement ops (views) against NumPy: random chains of transpose, reshape, ravel, squeeze,
swapaxes, moveaxis, expand_dims, flip, broadcast_to and indexing (ints, slices with any step,
Ellipsis, None) over random shapes (empty and size-1 dims included), dtypes and strided inputs,
through tensor methods, ``pyasc.*`` and NumPy's functions; ended by nothing (a pure view, which
must come back as a fresh C-contiguous array), an elementwise op or a reduction. Values are small
integers in every dtype, so even float sums are exact and every comparison is exact."""

from __future__ import annotations

import math

import numpy as np
import pyasc
import pytest
from conftest import assert_matches, line_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HERE = __file__
DTYPES = ["bool", "int32", "int64", "float32", "float64"]
MAX_RANK = 5
MAX_SIZE = 3000



def _values(rng, shape, dtype):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(-5, 6, shape).astype(dtype)


@st.composite
def inputs(draw, max_rank=4, dtypes=DTYPES):
    rank = draw(st.integers(0, max_rank))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    dtype = draw(st.sampled_from(dtypes))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    view = draw(st.sampled_from(["plain", "T", "rev", "step"])) if rank else "plain"
    if view == "T":
        x = _values(rng, shape[::-1], dtype).T
    elif view == "rev":
        x = _values(rng, shape, dtype)[..., ::-1]
    elif view == "step":
        x = _values(rng, (2 * shape[0],) + shape[1:], dtype)[::2]
    else:
        x = _values(rng, shape, dtype)
    return x


def _factor_shape(draw, size):
    """A random shape with `size` elements (size > 0), with some size-1 dims."""
    primes, n, p = [], size, 2
    while n > 1:
        while n % p == 0:
            primes.append(p)
            n //= p
        p += 1
    k = draw(st.integers(1 if size > 1 else 0, 4))
    dims = [1] * k
    for q in primes:
        dims[draw(st.integers(0, k - 1))] *= q
    return dims


@st.composite
def new_shape(draw, shape):
    size = math.prod(shape)
    if size == 0:
        k = draw(st.integers(1, 4))
        dims = draw(st.lists(st.integers(0, 5), min_size=k, max_size=k))
        dims[draw(st.integers(0, k - 1))] = 0
        return tuple(dims)
    dims = _factor_shape(draw, size)
    if dims and draw(st.booleans()):
        dims[draw(st.integers(0, len(dims) - 1))] = -1
    return tuple(dims)


@st.composite
def index_key(draw, shape):
    nd = len(shape)
    items = []
    for d in shape:
        if d > 0 and draw(st.integers(0, 2)) == 0:
            items.append(draw(st.integers(-d, d - 1)))
        else:
            start = draw(st.one_of(st.none(), st.integers(-7, 7)))
            stop = draw(st.one_of(st.none(), st.integers(-7, 7)))
            step = draw(st.sampled_from([None, 1, 2, 3, -1, -2, -3]))
            items.append(slice(start, stop, step))
    i = draw(st.integers(0, nd))
    j = draw(st.integers(i, nd))
    if draw(st.booleans()):
        items[i:j] = [Ellipsis]  # Ellipsis stands for axes i..j-1
    else:
        items = items[:i]  # trailing axes left out
    for _ in range(draw(st.integers(0, max(0, MAX_RANK - nd)))):
        if draw(st.booleans()):
            items.insert(draw(st.integers(0, len(items))), None)
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


@st.composite
def step(draw, shape):
    """One movement step as (description, pyasc function, NumPy function)."""
    nd = len(shape)
    kinds = ["T", "reshape", "ravel", "index", "flip"]
    if nd >= 1:
        kinds += ["transpose", "swapaxes", "moveaxis"]
    if 1 in shape:
        kinds += ["squeeze"]
    if nd < MAX_RANK:
        kinds += ["expand_dims", "broadcast_to"]
    kind = draw(st.sampled_from(kinds))
    if kind == "T":
        return "T", lambda t: t.T, lambda a: a.T
    if kind == "ravel":
        return "ravel", lambda t: t.ravel(), lambda a: a.ravel()
    if kind == "transpose":
        perm = tuple(draw(st.permutations(range(nd))))
        form = draw(st.sampled_from(["star", "tuple", "pyasc", "np"]))
        f = {"star": lambda t: t.transpose(*perm), "tuple": lambda t: t.transpose(perm),
             "pyasc": lambda t: pyasc.transpose(t, perm), "np": lambda t: np.transpose(t, perm)}[form]
        return f"transpose{perm}[{form}]", f, lambda a: a.transpose(perm)
    if kind == "reshape":
        s = draw(new_shape(shape))
        form = draw(st.sampled_from(["star", "tuple", "pyasc", "np"]))
        f = {"star": lambda t: t.reshape(*s), "tuple": lambda t: t.reshape(s),
             "pyasc": lambda t: pyasc.reshape(t, s), "np": lambda t: np.reshape(t, s)}[form]
        return f"reshape{s}[{form}]", f, lambda a: a.reshape(s)
    if kind == "squeeze":
        ones = [i for i, d in enumerate(shape) if d == 1]
        axis = draw(st.one_of(st.none(), st.sampled_from(ones), st.sampled_from([i - nd for i in ones])))
        form = draw(st.sampled_from(["method", "pyasc", "np"]))
        f = {"method": lambda t: t.squeeze(axis) if axis is not None else t.squeeze(),
             "pyasc": lambda t: pyasc.squeeze(t, axis), "np": lambda t: np.squeeze(t, axis)}[form]
        return f"squeeze({axis})[{form}]", f, lambda a: np.squeeze(a, axis)
    if kind == "swapaxes":
        a1, a2 = draw(st.integers(-nd, nd - 1)), draw(st.integers(-nd, nd - 1))
        form = draw(st.sampled_from(["method", "pyasc", "np"]))
        f = {"method": lambda t: t.swapaxes(a1, a2), "pyasc": lambda t: pyasc.swapaxes(t, a1, a2),
             "np": lambda t: np.swapaxes(t, a1, a2)}[form]
        return f"swapaxes({a1},{a2})[{form}]", f, lambda a: np.swapaxes(a, a1, a2)
    if kind == "moveaxis":
        src, dst = draw(st.integers(-nd, nd - 1)), draw(st.integers(-nd, nd - 1))
        form = draw(st.sampled_from(["pyasc", "np"]))
        f = {"pyasc": lambda t: pyasc.moveaxis(t, src, dst), "np": lambda t: np.moveaxis(t, src, dst)}[form]
        return f"moveaxis({src},{dst})[{form}]", f, lambda a: np.moveaxis(a, src, dst)
    if kind == "expand_dims":
        axis = draw(st.integers(-nd - 1, nd))
        form = draw(st.sampled_from(["pyasc", "np", "index"]))
        f = {"pyasc": lambda t: pyasc.expand_dims(t, axis), "np": lambda t: np.expand_dims(t, axis),
             "index": lambda t: pyasc.expand_dims(t, (axis,))}[form]
        return f"expand_dims({axis})[{form}]", f, lambda a: np.expand_dims(a, axis)
    if kind == "flip":
        axis = None if nd == 0 else draw(st.one_of(st.none(), st.integers(-nd, nd - 1)))
        form = draw(st.sampled_from(["pyasc", "np"]))
        f = {"pyasc": lambda t: pyasc.flip(t, axis), "np": lambda t: np.flip(t, axis)}[form]
        return f"flip({axis})[{form}]", f, lambda a: np.flip(a, axis)
    if kind == "broadcast_to":
        lead = draw(st.lists(st.integers(0, 3), max_size=MAX_RANK - nd))
        target = tuple(lead) + tuple(draw(st.integers(0, 3)) if d == 1 else d for d in shape)
        if math.prod(target) > MAX_SIZE:
            target = shape
        form = draw(st.sampled_from(["pyasc", "np"]))
        f = {"pyasc": lambda t: pyasc.broadcast_to(t, target), "np": lambda t: np.broadcast_to(t, target)}[form]
        return f"broadcast_to{target}[{form}]", f, lambda a: np.broadcast_to(a, target)
    key = draw(index_key(shape))
    return f"[{key!r}]", lambda t: t[key], lambda a: a[key]


@st.composite
def chains(draw):
    x = draw(inputs())
    steps, a = [], x
    for _ in range(draw(st.integers(1, 4))):
        desc, f, g = draw(step(a.shape))
        b = g(a)
        if b.ndim > MAX_RANK:
            continue
        steps.append((desc, f, g))
        a = b
    end = draw(st.sampled_from(["view", "view", "elementwise", "sum", "max"]))
    return x, steps, end


def _end(end, v, numpy):
    if end == "elementwise":
        return ~v if v.dtype == np.bool_ else v + v * 2
    if end == "sum":
        return np.sum(v) if numpy else v.sum()
    if end == "max":
        axis = -1 if v.ndim else None
        return np.max(v, axis=axis) if numpy else v.max(axis=axis)
    return v


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chains())
def test_movement_chains_match_numpy(case):
    x, steps, end = case
    a = x
    for _, _, g in steps:
        a = g(a)
    if end == "max" and (a.size == 0 or a.ndim and a.shape[-1] == 0):
        end = "sum"  # max of an empty axis is an error, tested in test_reductions
    want = np.asarray(_end(end, a, True))

    def fn(t):
        for _, f, _ in steps:
            t = f(t)
        return _end(end, t, False)

    got = pyasc.operator(fn)(x)
    assert_matches(got, want)
    if end == "view":
        assert got.flags.c_contiguous and got.flags.writeable
        assert not np.shares_memory(got, x)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(inputs(max_rank=3), st.data())
def test_eager_movement_functions_match_numpy(x, data):
    desc, f, g = data.draw(step(x.shape).filter(lambda s: "[pyasc]" in s[0]), label="step")
    got = f(x)
    assert_matches(np.asarray(got), g(x))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs(max_rank=3, dtypes=["int32", "float64"]), inputs(max_rank=3, dtypes=["int64", "float32"]),
       st.data())
def test_views_of_two_inputs_combine_elementwise(x, y, data):
    """A view of each input, broadcast together: NumPy's result dtype and shape, exact values."""
    _, fx, gx = data.draw(step(x.shape), label="step x")
    _, fy, gy = data.draw(step(y.shape), label="step y")
    vx, vy = gx(x), gy(y)
    try:
        want = vx * 3 - vy
    except ValueError:
        with pytest.raises(pyasc.ShapeError):
            pyasc.operator(lambda a, b: fx(a) * 3 - fy(b))(x, y)
        return
    got = pyasc.operator(lambda a, b: fx(a) * 3 - fy(b))(x, y)
    assert_matches(got, want)


def test_chain_of_views_elementwise_and_reduction():
    x = np.arange(60, dtype=np.float32).reshape(5, 12)
    op = pyasc.operator(lambda t: (t.T * 2).reshape(-1)[::3].sum())
    assert_matches(op(x), np.asarray((x.T * 2).reshape(-1)[::3].sum()))
    op = pyasc.operator(lambda t: (t[:, ::-2] + t[::-1, 1::2]).max(axis=0))
    assert_matches(op(x), (x[:, ::-2] + x[::-1, 1::2]).max(axis=0))
    op = pyasc.operator(lambda t: np.moveaxis(t.reshape(5, 3, 4), 0, -1)[..., None, 1:].sum(axis=(0, -1)))
    assert_matches(op(x), np.moveaxis(x.reshape(5, 3, 4), 0, -1)[..., None, 1:].sum(axis=(0, -1)))


def test_views_of_strided_inputs_are_read_in_place_and_unmodified():
    base = np.arange(120, dtype=np.int64).reshape(4, 5, 6)
    x = base[::-1, 1:, ::2].transpose(2, 0, 1)
    before = base.copy()
    op = pyasc.operator(lambda t: t[1:, ::-1].swapaxes(0, 2) * 1)
    assert_matches(op(x), x[1:, ::-1].swapaxes(0, 2) * 1)
    np.testing.assert_array_equal(base, before)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int16", "int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("n", [1, 5, 1153, 3001])
def test_several_columns_of_one_array_match_numpy(dtype, n):
    """Columns of one array (read in one walk) and of another layout, in one kernel."""
    rng = np.random.default_rng(n)
    x, y = _values(rng, (n, 7), dtype), _values(rng, (n, 5), dtype)

    def cols(t, u):
        # Four columns of t, one of u (another row stride), and two 2-D views of t with an
        # inner stride of 3.
        a = (t[:, 0] ^ t[:, 1]) | (t[:, 3] & t[:, 6]) if dtype == "bool" else t[:, 0] - t[:, 1] * t[:, 3] + t[:, 6]
        b = (u[:, 2] ^ t[:, 1]) if dtype == "bool" else u[:, 2] - t[:, 1]
        return a, b, t[:, 0:6:3], t[:, 1:7:3]

    got = pyasc.operator(cols)(x, y)
    for g, w in zip(got, cols(x, y)):
        assert_matches(g, np.ascontiguousarray(w))


@pytest.mark.parametrize("shape", [(1153, 80), (37, 5), (3, 1000), (300, 17)])
def test_row_results_after_a_kernel_that_left_nan_in_its_scratch(shape):
    """Tiles are not cleared between kernels: every value read is one just computed."""
    rng = np.random.default_rng(7)
    poison = pyasc.operator(lambda t: t * np.float32(np.nan) + t)
    rows = pyasc.operator(lambda t: (t.sum(axis=1), t.max(axis=1), t.argmax(axis=1), (t * 2).mean(axis=1),
                                     t[:, 1:] * t[:, :1]))
    x = rng.normal(size=shape).astype(np.float32)
    for _ in range(2):
        assert np.isnan(poison(rng.normal(size=(4096, 33)).astype(np.float32))).all()
        got = rows(x)
        want = (x.sum(axis=1), x.max(axis=1), x.argmax(axis=1), (x * 2).mean(axis=1), x[:, 1:] * x[:, :1])
        for g, w in zip(got, want):
            assert_matches(g, w.astype(g.dtype, copy=False), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "float32", "int64", "float64"])
@pytest.mark.parametrize("k", [2, 3, 4, 6, 8, 9])
def test_stack_of_columns_matches_numpy(dtype, k):
    """``stack(..., axis=1)`` of 1-D arrays, contiguous and strided, written row by row."""
    rng = np.random.default_rng(k)
    base = _values(rng, (k, 2 * 1153), dtype)
    arrays = [base[i, ::2] if i % 2 else base[i, :1153] for i in range(k)]
    op = pyasc.operator(lambda *a: (np.stack(list(a), axis=1), pyasc.stack(list(a), axis=-1)))
    for got in op(*arrays):
        assert_matches(got, np.stack(arrays, axis=1))


def test_pure_view_results_are_fresh_contiguous_arrays():
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    for f in (lambda t: t, lambda t: t.T, lambda t: t[:, ::-1], lambda t: t.reshape(4, 6),
              lambda t: pyasc.broadcast_to(t[0, 0], (3, 4)), lambda t: (t.T, t[1])):
        got = pyasc.operator(f)(x)
        want = f(x)
        for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
            assert_matches(g, np.asarray(w))
            assert g.flags.c_contiguous and not np.shares_memory(g, x)
            g[...] = -1  # writing the result never touches the input
    np.testing.assert_array_equal(x, np.arange(24, dtype=np.float64).reshape(2, 3, 4))


def test_moveaxis_with_sequences_of_axes():
    x = np.arange(24.0).reshape(2, 3, 4)
    got = pyasc.operator(lambda t: np.moveaxis(t, (0, 1), (-1, -2)))(x)
    assert_matches(got, np.moveaxis(x, (0, 1), (-1, -2)))


# --- errors -------------------------------------------------------------------------------------

def _error(exc, fn, *args):
    with pytest.raises(exc) as e:
        pyasc.operator(fn)(*args)
    return e.value


def _assert_line(err, fn, text):
    assert err.filename == HERE, (err.filename, str(err))
    assert err.lineno == line_of(fn, text), (err.lineno, str(err))
    assert f"{HERE}:{err.lineno}" in str(err)


def _reshape_wrong_size(t):
    return t.reshape(5, 5)  # wrong size


def _reshape_not_divisible(t):
    return pyasc.reshape(t, (7, -1))  # not divisible


def _too_many(t):
    return t[0, 1, 2]  # too many


def _too_many_ellipsis(t):
    return t[..., 0, None, 1:, 0]  # too many


def _out_of_bounds(t):
    return t[3]  # out of bounds


def _out_of_bounds_neg(t):
    return t[:, -6]  # out of bounds


def _tensor_mask(t):
    return t[t > 0]  # mask


_CONST_MASK = np.array([True, False, True])


def _const_mask(t):
    return t[_CONST_MASK]  # mask


def _bad_transpose(t):
    return t.transpose(0, 0)  # bad axes


def _short_perm(t):
    return t.transpose(0, 1)  # bad axes


def _perm_range(t):
    return pyasc.transpose(t, (0, 1, 3))  # bad axes


def _squeeze_non_1(t):
    return t.squeeze(0)  # bad axes


def _squeeze_range(t):
    return pyasc.squeeze(t, 5)  # bad axes


def _swapaxes_range(t):
    return t.swapaxes(0, 3)  # bad axes


def _moveaxis_range(t):
    return np.moveaxis(t, -4, 0)  # bad axes


def _flip_range(t):
    return pyasc.flip(t, 3)  # bad axes


def _expand_range(t):
    return np.expand_dims(t, 5)  # bad axes


def _broadcast_mismatch(t):
    return pyasc.broadcast_to(t, (2, 4, 4))  # bad shape


def _broadcast_rank(t):
    return np.broadcast_to(t, (4,))  # bad shape


def _two_unknowns(t):
    return t.reshape(-1, -1)  # two unknowns


_X3 = np.ones((2, 3, 4))
ERROR_CASES = {  # name -> (error, function, marker, input)
    "transpose-short-perm": (pyasc.ShapeError, _short_perm, "bad axes", _X3),
    "transpose-axis-out-of-range": (pyasc.ShapeError, _perm_range, "bad axes", _X3),
    "squeeze-non-1": (pyasc.ShapeError, _squeeze_non_1, "bad axes", _X3),
    "squeeze-axis-out-of-range": (pyasc.ShapeError, _squeeze_range, "bad axes", _X3),
    "swapaxes-axis-out-of-range": (pyasc.ShapeError, _swapaxes_range, "bad axes", _X3),
    "moveaxis-axis-out-of-range": (pyasc.ShapeError, _moveaxis_range, "bad axes", _X3),
    "flip-axis-out-of-range": (pyasc.ShapeError, _flip_range, "bad axes", _X3),
    "expand-dims-axis-out-of-range": (pyasc.ShapeError, _expand_range, "bad axes", _X3),
    "broadcast-mismatch": (pyasc.ShapeError, _broadcast_mismatch, "bad shape", _X3),
    "broadcast-lower-rank": (pyasc.ShapeError, _broadcast_rank, "bad shape", _X3),
    "reshape-two-unknowns": (pyasc.ShapeError, _two_unknowns, "two unknowns", _X3),
    "reshape-wrong-size": (pyasc.ShapeError, _reshape_wrong_size, "wrong size", np.ones((4, 6))),
    "reshape-not-divisible": (pyasc.ShapeError, _reshape_not_divisible, "not divisible", np.ones((4, 6))),
    "too-many-indices": (pyasc.ShapeError, _too_many, "too many", np.ones((3, 3))),
    "too-many-with-ellipsis": (pyasc.ShapeError, _too_many_ellipsis, "too many", np.ones((3, 3))),
    "index-out-of-bounds": (pyasc.ShapeError, _out_of_bounds, "out of bounds", np.ones((3, 5))),
    "negative-index-out-of-bounds": (pyasc.ShapeError, _out_of_bounds_neg, "out of bounds", np.ones((3, 5))),
    "tensor-mask": (pyasc.TraceError, _tensor_mask, "# mask", np.arange(-2.0, 3.0)),
    # A mask known when traced selects a static shape (tests/test_updates.py); one of the wrong
    # length is NumPy's IndexError.
    "constant-mask-wrong-length": (pyasc.ShapeError, _const_mask, "# mask", np.ones(4)),
    "transpose-repeated-axis": (pyasc.ShapeError, _bad_transpose, "bad axes", np.ones((3, 5))),
}


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_movement_errors_have_the_right_type(name):
    exc, fn, _, x = ERROR_CASES[name]
    _error(exc, fn, x)


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_movement_errors_name_the_users_line(name):
    exc, fn, marker, x = ERROR_CASES[name]
    _assert_line(_error(exc, fn, x), fn, marker)


def test_reshape_error_names_both_shapes():
    err = _error(pyasc.ShapeError, _reshape_wrong_size, np.ones((4, 6)))
    assert "(4, 6)" in str(err) or "24" in str(err)


def test_integer_array_indexing_takes_like_numpy():
    x = np.arange(20.0).reshape(4, 5)
    assert_matches(pyasc.operator(lambda t: t[[0, 2]])(x), x[[0, 2]])


def test_permute_is_transpose_with_an_order():
    x = np.arange(24.0).reshape(2, 3, 4)
    got = pyasc.operator(lambda t: (t.permute(2, 0, 1) * 2, pyasc.permute(t, (1, 2, 0)) + 1))(x)
    assert_matches(got[0], np.transpose(x, (2, 0, 1)) * 2)
    assert_matches(got[1], np.transpose(x, (1, 2, 0)) + 1)
