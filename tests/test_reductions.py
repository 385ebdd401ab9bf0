"""Reductions against NumPy: random shapes (empty and size-1 dims included), axes (None, ints,
negative ints, tuples), keepdims, dtypes and strided views, through the tensor methods, the
``pyasc.*`` functions, NumPy's functions (``__array_function__``) and the eager functions on
arrays. Dtypes and shapes must match NumPy exactly; integers and booleans exactly; floats
against a float64 reference with a tolerance scaled by the magnitude of the reduced values."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pyasc
import pytest
from conftest import assert_matches, assert_ulp, line_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HERE = __file__
DTYPES = ["bool", "int32", "int64", "float32", "float64"]
REDUCTIONS = ["sum", "mean", "max", "min", "prod", "argmax", "argmin", "any", "all"]
NO_IDENTITY = {"max", "min", "argmax", "argmin"}
NP_FUNCS = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
            "argmax": np.argmax, "argmin": np.argmin, "any": np.any, "all": np.all}



def _values(rng, shape, dtype, name):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("int"):
        return rng.integers(-5, 6, shape).astype(dtype)
    if name == "prod":
        # Magnitudes near 1 so a product of hundreds of factors stays far from over/underflow.
        return (rng.choice([-1.0, 1.0], shape) * rng.uniform(0.8, 1.25, shape)).astype(dtype)
    return rng.uniform(-2, 2, shape).astype(dtype)


@st.composite
def arrays(draw, name=None, dtypes=DTYPES, max_rank=4):
    """A random array (possibly a transposed, reversed or stepped view) and its dtype name."""
    rank = draw(st.integers(0, max_rank))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    dtype = draw(st.sampled_from(dtypes))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    view = draw(st.sampled_from(["plain", "T", "rev", "step"])) if rank else "plain"
    if view == "T":
        x = _values(rng, shape[::-1], dtype, name).T
    elif view == "rev":
        x = _values(rng, shape, dtype, name)[..., ::-1]
    elif view == "step":
        x = _values(rng, (2 * shape[0],) + shape[1:], dtype, name)[::2]
    else:
        x = _values(rng, shape, dtype, name)
    assert x.shape == shape
    return x


@st.composite
def axes(draw, ndim, single=False):
    kind = draw(st.sampled_from(["none", "int", "tuple"] if not single else ["none", "int"]))
    if kind == "none" or (ndim == 0 and kind == "int"):
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    picked = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim)) if ndim else []
    return tuple(a - ndim if draw(st.booleans()) else a for a in picked)


def _reduced_count(shape, axis):
    nd = len(shape)
    ax = range(nd) if axis is None else [axis] if isinstance(axis, int) else axis
    n = 1
    for a in ax:
        n *= shape[a % nd]
    return n


def _method(name, axis):
    return lambda t: getattr(t, name)(axis=axis)


def _call(form, name, t, axis, keepdims):
    if form == "method":
        return getattr(t, name)(axis=axis, keepdims=keepdims)
    if form == "pyasc":
        return getattr(pyasc, name)(t, axis, keepdims)
    return NP_FUNCS[name](t, axis=axis, keepdims=keepdims)


def _check_float(got, want, x, name, axis, keepdims):
    """Float results: NumPy's dtype and shape, values within a tolerance of the float64 reference."""
    x64 = x.astype(np.float64)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # the mean of an empty axis is NaN
        ref = getattr(np, name)(x64, axis=axis, keepdims=keepdims)
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    eps = np.finfo(got.dtype).eps
    n = max(_reduced_count(x.shape, axis), 1)
    if name in ("sum", "mean") and got.dtype == np.float32:
        # Float sums accumulate in float64: a float32 sum is the float64 reference rounded (within
        # 1 ulp), where a float32 running or pairwise sum is off by up to log2(n) ulp or more. A
        # mean rounds twice, the sum to float32 (half an ulp of the sum, at most one of the mean)
        # and the quotient (half an ulp): 1.5 ulp.
        assert_ulp(got, ref, 1.0 if name == "sum" else 1.5, np.float32)
    elif name in ("sum", "mean"):
        scale = np.sum(np.abs(x64), axis=axis, keepdims=keepdims)
        if name == "mean":
            scale = scale / n
        err = np.abs(got.astype(np.float64) - ref)
        ok = (err <= 4 * eps * scale + 1e-300) | (np.isnan(got) & np.isnan(ref))
        assert np.all(ok), (got, ref, scale)
    elif name == "prod":
        np.testing.assert_allclose(got, ref, rtol=(n + 2) * eps, atol=0)
    else:  # max, min: exact
        np.testing.assert_array_equal(got, ref.astype(got.dtype))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_reductions_match_numpy(data):
    name = data.draw(st.sampled_from(REDUCTIONS), label="reduction")
    x = data.draw(arrays(name), label="x")
    single = name in ("argmax", "argmin")
    axis = data.draw(axes(x.ndim, single=single), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    form = data.draw(st.sampled_from(["method", "pyasc", "numpy", "eager"]), label="form")
    if form == "method" and x.ndim == 0:
        form = "pyasc"

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            want = np.asarray(NP_FUNCS[name](x, axis=axis, keepdims=keepdims))
        except ValueError:
            want = None  # an empty axis under a reduction with no identity

    if form == "eager":
        run = lambda: getattr(pyasc, name)(x, axis, keepdims)  # noqa: E731
    else:
        run = lambda: pyasc.operator(lambda t: _call(form, name, t, axis, keepdims))(x)  # noqa: E731

    if single and axis is None and x.ndim > 1:
        with pytest.raises(pyasc.UnsupportedError):
            run()
        return
    if want is None:
        assert name in NO_IDENTITY and _reduced_count(x.shape, axis) == 0
        with pytest.raises(pyasc.ShapeError):
            run()
        return
    got = run()
    if want.dtype.kind == "f":
        _check_float(got, want, x, name, axis, keepdims)
    else:
        assert_matches(got, want)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_reductions_fused_with_producers_and_broadcast_back(data):
    """Centering over random axes (a reduction broadcast back into its producer's shape) and a
    product reduced over random axes: non-row reductions, keepdims broadcasts, strided inputs."""
    x = data.draw(arrays(dtypes=["float32", "float64"]), label="x")
    y = data.draw(arrays(dtypes=["int32", "float32", "float64"]), label="y")
    axis = data.draw(axes(x.ndim), label="axis")
    x64 = x.astype(np.float64)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # the mean of an empty axis is NaN
        ref = x64 - x64.mean(axis=axis, keepdims=True)
        want = x - x.mean(axis=axis, keepdims=True)
    got = pyasc.operator(lambda t: t - t.mean(axis=axis, keepdims=True))(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    scale = np.abs(x64) + np.abs(x64).mean(axis=axis, keepdims=True) if x.size else 0
    assert np.all((np.abs(got - ref) <= 4 * np.finfo(x.dtype).eps * scale) | np.isnan(ref))

    if x.shape != y.shape:
        y = y.reshape(-1)[: x.size].reshape(x.shape) if y.size >= x.size else np.resize(y, x.shape)
    want = np.sum(x * y, axis=axis)
    got = pyasc.operator(lambda s, t: np.sum(s * t, axis=axis))(x, y)
    prod64 = x64 * y.astype(np.float64)
    ref = prod64.sum(axis=axis)
    assert got.dtype == want.dtype and got.shape == want.shape
    bound = 4 * np.finfo(want.dtype).eps * np.abs(prod64).sum(axis=axis)
    assert np.all(np.abs(got - ref) <= bound)


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("name,identity", [("sum", 0), ("prod", 1), ("any", False), ("all", True)])
def test_empty_axes_give_the_identity(name, identity, dtype):
    x = np.zeros((3, 0, 2), dtype)
    for axis in (None, 1, (0, 1), (-2, -1)):
        got = pyasc.operator(_method(name, axis))(x)
        want = getattr(np, name)(x, axis=axis)
        assert_matches(got, np.asarray(want))
        assert np.all(got == identity)


@pytest.mark.parametrize("shape,axis", [((0, 5), 1), ((3, 0), 0), ((0, 5), ()), ((2, 0, 3), (0, 2))])
@pytest.mark.parametrize("name", ["sum", "max", "any"])
def test_empty_result_over_nonempty_rows(name, shape, axis):
    x = np.ones(shape, np.float32)
    got = pyasc.operator(lambda t: getattr(pyasc, name)(t, axis))(x)
    assert_matches(got, np.asarray(getattr(np, name)(x, axis=axis)))


@pytest.mark.parametrize("name", sorted(NO_IDENTITY))
def test_empty_axis_without_identity_raises_shape_error_with_line(name):
    def f(t):
        return getattr(pyasc, name)(t, 1)  # empty reduction

    with pytest.raises(pyasc.ShapeError) as e:
        pyasc.operator(f)(np.zeros((3, 0), np.float32))
    assert e.value.lineno == line_of(f, "empty reduction")
    assert e.value.filename == HERE


def test_argmax_over_all_axes_of_a_matrix_is_unsupported_but_one_axis_works():
    x = np.random.default_rng(0).uniform(size=(4, 5))
    with pytest.raises(pyasc.UnsupportedError):
        pyasc.operator(lambda t: t.argmax())(x)
    assert_matches(pyasc.operator(lambda t: t.argmax(axis=1))(x), x.argmax(axis=1))
    assert_matches(pyasc.operator(lambda t: pyasc.argmin(t))(x[0]), np.asarray(x[0].argmin()))


def test_ties_take_the_first_index_like_numpy():
    x = np.array([[1, 3, 3, 0], [2, 2, 2, 2], [0, -1, 0, -1]], np.int32)
    for axis in (0, 1, -1):
        assert_matches(pyasc.operator(_method("argmax", axis))(x), x.argmax(axis=axis))
        assert_matches(pyasc.operator(_method("argmin", axis))(x), x.argmin(axis=axis))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_sum_accumulates_accurately(dtype):
    # 1 + many tiny values: a naive float32 running sum loses every tiny value.
    x = np.concatenate([[1.0], np.full(1 << 16, 1e-8)]).astype(dtype)
    got = pyasc.operator(lambda t: t.sum())(x)
    exact = math.fsum(x.astype(np.float64))
    assert got.dtype == dtype
    # At least as accurate as NumPy's pairwise sum, and within an ulp or so of the exact sum.
    numpy_err = abs(float(x.sum()) - exact)
    assert abs(float(got) - exact) <= max(numpy_err, 2 * np.finfo(dtype).eps * exact)


@st.composite
def float_rows(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([1.0, 30.0]))
    x = (rng.uniform(-1, 1, shape) * scale).astype(dtype)
    if draw(st.booleans()):
        x = x[..., ::-1]
    axis = draw(st.integers(-rank, rank - 1))
    return x, axis


def _tol(dtype):
    return 64 * np.finfo(dtype).eps


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(float_rows(), st.booleans())
def test_logsumexp_matches_float64(case, keepdims):
    x, axis = case
    x64 = x.astype(np.float64)
    m = x64.max(axis=axis, keepdims=True)
    ref = np.log(np.exp(x64 - m).sum(axis=axis, keepdims=True)) + m
    if not keepdims:
        ref = np.squeeze(ref, axis=axis)
    got = pyasc.operator(lambda t: pyasc.logsumexp(t, axis, keepdims))(x)
    assert got.dtype == x.dtype and got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=_tol(x.dtype), atol=_tol(x.dtype))
    np.testing.assert_allclose(pyasc.logsumexp(x, axis, keepdims), ref, rtol=_tol(x.dtype), atol=_tol(x.dtype))


def _softmax64(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _layer_norm64(x, w, b, eps, axis):
    mu = x.mean(axis=axis, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axis, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def _rms_norm64(x, w, eps, axis):
    y = x / np.sqrt((x * x).mean(axis=axis, keepdims=True) + eps)
    return y * (1 if w is None else w)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(float_rows(), st.sampled_from(["softmax", "log_softmax", "layer_norm", "rms_norm"]), st.booleans())
def test_composites_match_float64(case, name, affine):
    x, axis = case
    x64 = x.astype(np.float64)
    n = x.shape[axis]
    w = b = None
    if affine and name in ("layer_norm", "rms_norm"):
        if axis % x.ndim != x.ndim - 1:
            axis = -1  # weights broadcast along the last axis
            n = x.shape[-1]
        rng = np.random.default_rng(n)
        w = rng.uniform(0.5, 1.5, n).astype(x.dtype)
        b = rng.uniform(-1, 1, n).astype(x.dtype)
    if name == "softmax":
        ref = _softmax64(x64, axis)
        op = pyasc.operator(lambda t: pyasc.softmax(t, axis=axis))
        args = (x,)
    elif name == "log_softmax":
        ref = x64 - x64.max(axis=axis, keepdims=True) - np.log(
            np.exp(x64 - x64.max(axis=axis, keepdims=True)).sum(axis=axis, keepdims=True))
        op = pyasc.operator(lambda t: pyasc.log_softmax(t, axis=axis))
        args = (x,)
    elif name == "layer_norm":
        ref = _layer_norm64(x64, w, b, 1e-5, axis)
        if affine:
            op = pyasc.operator(lambda t, w_, b_: pyasc.layer_norm(t, w_, b_, eps=1e-5, axis=axis))
            args = (x, w, b)
        else:
            op = pyasc.operator(lambda t: pyasc.layer_norm(t, axis=axis))
            args = (x,)
    else:
        ref = _rms_norm64(x64, w, 1e-6, axis)
        if affine:
            op = pyasc.operator(lambda t, w_: pyasc.rms_norm(t, w_, eps=1e-6, axis=axis))
            args = (x, w)
        else:
            op = pyasc.operator(lambda t: pyasc.rms_norm(t, axis=axis))
            args = (x,)
    got = op(*args)
    assert got.dtype == x.dtype and got.shape == x.shape
    tol = _tol(x.dtype) * (30 if name == "log_softmax" else 1)
    atol = tol
    if name == "layer_norm":
        # x - mean cancels: rounding of order eps * |x| is amplified by 1 / std.
        spread = np.abs(x64).max(axis=axis, keepdims=True) / np.sqrt(x64.var(axis=axis, keepdims=True) + 1e-5)
        atol = tol * spread * (1 if w is None else np.abs(w).max())
    err = np.abs(got - ref)
    bound = atol + tol * np.abs(ref)
    assert np.all(err <= bound), (got, ref, np.max(err - bound))


# --- fusion -------------------------------------------------------------------------------------

def _kernels(fn, *args, **options):
    op = pyasc.operator(**options)(fn) if options else pyasc.operator(fn)
    op(*args)
    return op.get_compiled_op(*args).kernels()


def test_product_then_row_sum_is_one_kernel():
    rng = np.random.default_rng(1)
    x, y = rng.uniform(size=(64, 33)), rng.uniform(size=(64, 33))
    op = pyasc.operator(lambda a, b: (a * b).sum(axis=1))
    np.testing.assert_allclose(op(x, y), (x * y).sum(axis=1), rtol=1e-14)
    assert len(op.get_compiled_op(x, y).kernels()) == 1



@pytest.mark.parametrize("name", [
    "softmax",
    "log_softmax",
    "layer_norm",
    "rms_norm",
])
def test_row_composites_over_the_last_axis_are_one_kernel(name):
    x = np.random.default_rng(2).uniform(-3, 3, (37, 129)).astype(np.float32)
    fn = getattr(pyasc, name)
    assert len(_kernels(lambda t: fn(t), x)) == 1
    assert len(_kernels(lambda t: fn(t, axis=-1), x)) == 1


def test_row_reduction_with_cheap_row_ops_is_one_kernel():
    x = np.random.default_rng(5).uniform(1, 3, (37, 129)).astype(np.float32)
    op = pyasc.operator(lambda t: t * (t.sum(axis=1, keepdims=True) * 2.0))
    np.testing.assert_allclose(op(x), x * (x.astype(np.float64).sum(axis=1, keepdims=True) * 2), rtol=1e-6)
    assert len(op.get_compiled_op(x).kernels()) == 1


def test_row_reduction_with_a_log_of_the_row_sum_is_one_kernel():
    x = np.random.default_rng(5).uniform(1, 3, (37, 129)).astype(np.float32)
    op = pyasc.operator(lambda t: t - np.log(t.sum(axis=1, keepdims=True)))
    np.testing.assert_allclose(op(x), x - np.log(x.astype(np.float64).sum(axis=1, keepdims=True)), rtol=1e-6)
    assert len(op.get_compiled_op(x).kernels()) == 1


def test_layer_norm_with_affine_parameters_is_one_kernel():
    rng = np.random.default_rng(3)
    x = rng.uniform(-3, 3, (16, 64)).astype(np.float32)
    w, b = rng.uniform(size=64).astype(np.float32), rng.uniform(size=64).astype(np.float32)
    op = pyasc.operator(lambda t, w_, b_: pyasc.layer_norm(t, w_, b_))
    np.testing.assert_allclose(op(x, w, b), _layer_norm64(x.astype(np.float64), w, b, 1e-5, -1),
                               rtol=1e-5, atol=1e-5)
    assert len(op.get_compiled_op(x, w, b).kernels()) == 1


@pytest.mark.parametrize("shape, wshape", [((4099, 64), (64,)), ((3000, 1024), (1024,)), ((300, 7, 24), (7, 24)),
                                           ((6, 2000, 16), (2000, 16)), ((513, 3, 33), (1, 33))])
def test_row_kernels_read_broadcast_operands_right_in_every_tile(shape, wshape):
    # Many rows per tile, many tiles per block and a last partial tile: the weight and bias
    # broadcast over the rows are read once per block where every tile holds whole periods
    # of them, and gathered per tile where it does not.
    rng = np.random.default_rng(11)
    x = rng.uniform(-3, 3, shape).astype(np.float32)
    w, b = rng.uniform(size=wshape).astype(np.float32), rng.uniform(size=wshape).astype(np.float32)
    op = pyasc.operator(lambda t, w_, b_: (t - t.mean(-1, keepdims=True)) * w_ + b_)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(op(x, w, b), (x64 - x64.mean(-1, keepdims=True)) * w + b, rtol=1e-5, atol=1e-5)
    assert len(op.get_compiled_op(x, w, b).kernels()) == 1
    ln = pyasc.operator(lambda t, w_, b_: pyasc.layer_norm(t, w_, b_))
    np.testing.assert_allclose(ln(x, w, b), _layer_norm64(x64, w, b, 1e-5, -1), rtol=1e-5, atol=1e-5)


def test_softmax_without_reduction_fusion_takes_more_kernels():
    x = np.random.default_rng(4).uniform(-3, 3, (8, 40)).astype(np.float32)
    fused = _kernels(lambda t: pyasc.softmax(t), x)
    unfused = _kernels(lambda t: pyasc.softmax(t), x, op_break_level=1)
    per_op = _kernels(lambda t: pyasc.softmax(t), x, op_break_level=0)
    assert len(fused) == 1
    assert len(unfused) > len(fused)
    assert len(per_op) == 5  # max, sub, exp, sum, div
    got = pyasc.operator(op_break_level=1)(lambda t: pyasc.softmax(t))(x)
    np.testing.assert_allclose(got, _softmax64(x.astype(np.float64), -1), rtol=1e-6, atol=1e-7)


# --- errors -------------------------------------------------------------------------------------

def test_axis_out_of_range_names_the_line():
    def f(t):
        return t.sum(axis=2)  # bad axis

    with pytest.raises(pyasc.ShapeError) as e:
        pyasc.operator(f)(np.ones((2, 3)))
    assert e.value.lineno == line_of(f, "bad axis")
    assert e.value.filename == HERE


@pytest.mark.parametrize("axis", [-3, 2, (0, 2), (1, -3)])
@pytest.mark.parametrize("name", REDUCTIONS)
def test_axis_out_of_range_raises_shape_error(name, axis):
    if name in ("argmax", "argmin") and isinstance(axis, tuple):
        axis = axis[1]
    def f(t):
        return getattr(pyasc, name)(t, axis)  # out of range

    with pytest.raises(pyasc.ShapeError) as e:
        pyasc.operator(f)(np.ones((2, 3)))
    assert e.value.lineno == line_of(f, "out of range")


@pytest.mark.parametrize("axis", [(0, 0), (1, -1), (0, 1, -2)])
@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "any", "all"])
def test_repeated_axis_raises_shape_error_with_line(name, axis):
    def f(t):
        return getattr(t, name)(axis=axis)  # repeated axis

    with pytest.raises(pyasc.ShapeError) as e:
        pyasc.operator(f)(np.ones((2, 3)))
    assert e.value.lineno == line_of(f, "repeated axis")


def _special_values(data):
    """A row count, a row length and ``draw(rows, cols)``: float32 matrices of values with many
    ties, signed zeros, infinities and (in some examples) NaN, for row extremes and positions."""
    rows = data.draw(st.integers(1, 300))
    cols = data.draw(st.sampled_from([1, 3, 16, 80, 81, 200]))
    pool = np.array([0.0, -0.0, 0.5, -2.0, 3.0, np.inf, -np.inf, np.nan], np.float32)
    kinds = data.draw(st.sampled_from([7, 8]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    return rows, cols, lambda r, c: pool[rng.integers(0, kinds, (r, c))]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_row_max_and_its_argmax_in_one_kernel_match_numpy(data):
    # The two reductions of the same rows run as one pass over each row: values, positions
    # (the first of ties, the first NaN) and their order in the body must not matter.
    rows, cols, draw = _special_values(data)
    x = draw(rows, cols)

    @pyasc.operator
    def best(t):
        s = t * 2.0
        return s.argmax(axis=1), s.max(axis=1), s.min(axis=1), s.argmin(axis=1)

    s = x * np.float32(2.0)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = (s.argmax(axis=1), s.max(axis=1), s.min(axis=1), s.argmin(axis=1))
        got = best(x)
    for g, w in zip(got, want):
        assert_matches(g, w)
    if rows > 1 and cols > 1:
        assert len(best.get_compiled_op(x).kernels()) == 1


_ARITH = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_row_extreme_and_its_position_of_an_arithmetic_result_match_numpy(data):
    # A detector's best class and score, `(cls * obj).argmax(1)` beside `(cls * obj).max(1)`,
    # the pair reading a product computed in the same kernel: every operator, every operand
    # shape (a column of the same array per row, a whole matrix, a scalar), both orders of
    # the operands and of the pair, ties and NaN.
    rows, cols, draw = _special_values(data)
    x, y = draw(rows, cols + 5), draw(rows, cols)
    f = _ARITH[data.draw(st.sampled_from(sorted(_ARITH)))]
    other = data.draw(st.sampled_from(["column", "matrix", "scalar"]))
    largest = data.draw(st.booleans())
    value_first = data.draw(st.booleans())
    pick = {"column": lambda t, u: t[:, 4:5], "matrix": lambda t, u: u, "scalar": lambda t, u: np.float32(-1.5)}[other]
    swap = data.draw(st.booleans())

    def combine(t, u):
        a, b = t[:, 5:], pick(t, u)
        return f(b, a) if swap else f(a, b)

    def both(c):
        v, i = (c.max(axis=1), c.argmax(axis=1)) if largest else (c.min(axis=1), c.argmin(axis=1))
        return (v, i) if value_first else (i, v)

    op = pyasc.operator(lambda t, u: both(combine(t, u)))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = both(combine(x, y))
        got = op(x, y)
    for g, w in zip(got, want):
        assert_matches(g, w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_and_inf_propagate_like_numpy(dtype):
    x = np.array([[1, np.nan, 3, 7], [np.nan, -1, 2, 9], [0, 1, 2, 3], [np.inf, -np.inf, 1, 2]], dtype)
    long = np.arange(100, dtype=dtype)
    long[77] = np.nan
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for name in REDUCTIONS:
            for axis in (0, 1):
                got = pyasc.operator(_method(name, axis))(x)
                assert_matches(got, np.asarray(getattr(x, name)(axis=axis)))
            got = pyasc.operator(_method(name, None))(long)
            assert_matches(got, np.asarray(getattr(long, name)()))


def test_integer_sums_and_products_wrap_like_numpy():
    for x in (np.full(10, 2**62, np.int64), np.full(50, 2**40, np.int64), np.arange(1, 40, dtype=np.int32)):
        for name in ("sum", "prod"):
            assert_matches(pyasc.operator(_method(name, None))(x), np.asarray(getattr(x, name)()))
            assert_matches(getattr(pyasc, name)(x), np.asarray(getattr(x, name)()))


def test_amax_and_amin_through_numpy():
    x = np.random.default_rng(9).uniform(size=(3, 4)).astype(np.float32)
    assert_matches(pyasc.operator(lambda t: np.amax(t, axis=0))(x), np.amax(x, axis=0))
    assert_matches(pyasc.operator(lambda t: np.amin(t, axis=(0, 1), keepdims=True))(x),
                   np.amin(x, axis=(0, 1), keepdims=True))


@pytest.mark.parametrize("axis", [1, -2, (0,)])
def test_axis_of_a_0d_tensor_is_a_shape_error(axis):
    # NumPy takes an int axis 0 or -1 of a 0-d array (not a tuple); every other axis is an error.
    with pytest.raises(pyasc.ShapeError):
        pyasc.operator(lambda t: t.sum(axis=axis))(np.float32(2))


@pytest.mark.parametrize("shape,axis", [((3, 20000), -1), ((20000, 3), 0), ((2, 9000, 3), 1), ((400, 300), None)])
@pytest.mark.parametrize("view", ["plain", "T", "rev"])
def test_large_reductions_across_tiles_and_cores(shape, axis, view):
    rng = np.random.default_rng(10)
    if view == "T":
        x = rng.uniform(-2, 2, shape[::-1]).astype(np.float32).T
    else:
        x = rng.uniform(-2, 2, shape).astype(np.float32)
        x = x[..., ::-1] if view == "rev" else x
    for name in ("sum", "mean", "max", "argmin", "any"):
        if name == "argmin" and axis is None:
            continue
        got = pyasc.operator(_method(name, axis))(x)
        want = np.asarray(getattr(x, name)(axis=axis))
        if want.dtype.kind == "f":
            _check_float(got, want, x, name, axis, False)
        else:
            assert_matches(got, want)
    i = (x * 4).astype(np.int64)
    assert_matches(pyasc.operator(_method("sum", axis))(i), np.asarray(i.sum(axis=axis)))
    assert_matches(pyasc.operator(_method("max", axis))(i), np.asarray(i.max(axis=axis)))


def test_reduction_methods_take_numpys_signatures():
    x = (np.arange(24).reshape(2, 3, 4) % 7).astype(np.int8)
    cases = [
        lambda t: t.sum(1, np.int8), lambda t: t.sum(axis=0, dtype=np.float32, keepdims=True),
        lambda t: t.mean(None, np.float32), lambda t: t.prod(-1, np.int16, None, True),
        lambda t: t.max(1, None, True), lambda t: t.min(axis=(0, 2)), lambda t: t.argmax(1),
        lambda t: t.argmin(axis=0, keepdims=True), lambda t: t.any(0), lambda t: t.all(-1, keepdims=True),
        lambda t: np.sum(t, initial=5), lambda t: np.max(t, axis=1, initial=7), lambda t: t.min(initial=-3),
        lambda t: np.prod(t, axis=2, initial=2, dtype=np.int64), lambda t: np.sum(t, dtype=np.uint8),
    ]
    for i, f in enumerate(cases):
        got, want = pyasc.operator(f)(x), f(x)
        assert got.dtype == want.dtype, i
        np.testing.assert_array_equal(got, want, err_msg=str(i))
    with pytest.raises(TypeError):
        pyasc.operator(lambda t: t.sum(1, True))(x)  # NumPy's second parameter is the dtype
    with pytest.raises(OverflowError):
        pyasc.operator(lambda t: np.max(t, initial=1000))(x)
    def bad(t):
        return t.sum(0, out=t)

    with pytest.raises(pyasc.UnsupportedError) as e:
        pyasc.operator(bad)(x)
    assert e.value.lineno == line_of(bad, "t.sum(0, out=t)")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_row_kernels_reading_a_column_broadcast_over_each_row_match_numpy(data):
    # `x[:, 5:] * x[:, 4:5]` in a row kernel: the column is read one value per row when only
    # float arithmetic reads it, and filled over the row when a comparison reads it too.
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    rows = data.draw(st.integers(1, 300))
    cols = data.draw(st.sampled_from([2, 7, 17, 85, 130]))
    j = data.draw(st.integers(0, cols - 1))
    op = data.draw(st.sampled_from(["mul", "add", "sub", "rsub", "div"]))
    compare = data.draw(st.booleans())
    pool = np.array([0.0, -0.0, 0.5, -2.0, 3.0, 1e-3, np.inf, -np.inf, np.nan], dtype)
    kinds = data.draw(st.sampled_from([6, 9]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    x = np.where(rng.random((rows, cols)) < 0.5, pool[rng.integers(0, kinds, (rows, cols))],
                 rng.standard_normal((rows, cols)).astype(dtype))
    ops = {"mul": lambda a, c: a * c, "add": lambda a, c: a + c, "sub": lambda a, c: a - c,
           "rsub": lambda a, c: c - a, "div": lambda a, c: a / c}
    f = ops[op]

    @pyasc.operator
    def scored(t):
        s = f(t[:, 1:], t[:, j:j + 1])
        if compare:
            return s.argmax(axis=1), s.max(axis=1), (t[:, 1:] > t[:, j:j + 1]).sum(axis=1)
        return s.argmax(axis=1), s.max(axis=1), s - s.max(axis=1, keepdims=True)

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        s = f(x[:, 1:], x[:, j:j + 1])
        third = (x[:, 1:] > x[:, j:j + 1]).sum(axis=1) if compare else s - s.max(axis=1, keepdims=True)
        want = (s.argmax(axis=1), s.max(axis=1), third)
        got = scored(x)
    for g, w in zip(got, want):
        assert_matches(g, w)
