"""Statistics against NumPy: ``var std average ptp nan* count_nonzero clip``.

Random shapes (empty and size-1 axes, 0-d), axes (None, ints, negative, tuples), keepdims,
ddof, dtypes and strided views, through tensor methods, ``np.*`` on traced tensors and the
eager ``pyasc.*`` functions. Dtypes and shapes must equal NumPy's; integer results exactly;
float results against NumPy on the same values in float64, to a few ulp of the result dtype.
"""

from __future__ import annotations

import warnings

import numpy as np
import pyasc
import pytest
from conftest import assert_matches, line_of
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

HERE = __file__
EPS = {np.dtype(np.float32): float(np.finfo(np.float32).eps), np.dtype(np.float64): float(np.finfo(np.float64).eps)}
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _op(fn, **kw):
    """An operator applying ``fn(v, **kw)``."""
    return pyasc.operator(lambda v: fn(v, **kw))


def _np(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(fn(*args, **kw))


def _ref(fn, x, **kw):
    """NumPy's result dtype (from the original input) and its value computed in float64."""
    want = _np(fn, x, **kw)
    x64 = x.astype(np.float64) if x.dtype.kind == "f" else x
    ref = _np(fn, x64, **kw)
    return want, ref


def _check(got, want, ref, ulps=8.0, scale=None):
    """``got`` has ``want``'s dtype and shape and is within ``ulps`` of ``ref`` (float64)."""
    got = np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    eps = EPS[got.dtype]
    ref = ref.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(got[~finite], ref[~finite].astype(got.dtype))
    mag = np.abs(ref[finite]) if scale is None else np.broadcast_to(scale, ref.shape)[finite]
    np.testing.assert_array_less(np.abs(got[finite] - ref[finite]), ulps * eps * mag + 1e-300 + (
        0 if scale is not None else np.finfo(got.dtype).tiny))


@st.composite
def cases(draw, dtypes=("float32", "float64", "int32", "int8", "uint8", "bool")):
    rank = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    dtype = draw(st.sampled_from(dtypes))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        x = rng.integers(0, 2, shape).astype(bool)
    elif dtype in ("int8", "uint8", "int32"):
        lo = 0 if dtype == "uint8" else -100
        x = rng.integers(lo, 100, shape).astype(dtype)
    else:
        x = (rng.standard_normal(shape) * draw(st.sampled_from([1.0, 1e3]))).astype(dtype)
    x = np.asarray(x)
    kind = draw(st.sampled_from(["none", "int", "tuple"])) if rank else "none"
    if kind == "none":
        axis = None
    elif kind == "int":
        axis = draw(st.integers(-rank, rank - 1))
    else:
        axis = tuple(draw(st.permutations(range(rank)))[: draw(st.integers(0, rank))])
        axis = tuple(a - rank if draw(st.booleans()) else a for a in axis)
    return x, axis, draw(st.booleans())


def _reduced_count(x, axis):
    if axis is None:
        return x.size
    axes = axis if isinstance(axis, tuple) else (axis,)
    return int(np.prod([x.shape[a] for a in axes]))


@SETTINGS
@given(cases(), st.integers(0, 3), st.sampled_from(["method", "np", "pyasc"]))
def test_var_std_match_numpy(case, ddof, form):
    x, axis, keepdims = case
    for name in ("var", "std"):
        if form == "method":
            got = _op(lambda v, n: getattr(v, n)(axis=axis, ddof=ddof, keepdims=keepdims), n=name)(x)
        elif form == "np":
            got = _op(getattr(np, name), axis=axis, ddof=ddof, keepdims=keepdims)(x)
        else:
            got = getattr(pyasc, name)(x, axis, ddof=ddof, keepdims=keepdims)
        want, ref = _ref(getattr(np, name), x, axis=axis, ddof=ddof, keepdims=keepdims)
        # Squared deviations of values up to |x|: errors scale with the largest square.
        n = max(_reduced_count(x, axis), 1)
        big = float(np.max(np.abs(x.astype(np.float64)))) if x.size else 1.0
        scale = (big * big if name == "var" else big) / max(n - ddof, 1) * n
        _check(got, want, ref, ulps=16, scale=np.maximum(scale, np.abs(ref)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_var_large_mean_is_stable(dtype):
    rng = np.random.default_rng(7)
    x = (1e6 + rng.uniform(-1, 1, (16, 4096))).astype(dtype)
    ref = x.astype(np.float64).var(-1, ddof=1)
    got = pyasc.operator(lambda v: v.var(-1, ddof=1))(x)
    assert got.dtype == np.dtype(dtype)
    assert np.max(np.abs(got - ref) / ref) < 1e-5
    sd = pyasc.operator(lambda v: np.std(v, axis=(0, 1)))(x)
    assert abs(float(sd) - x.astype(np.float64).std()) / x.astype(np.float64).std() < 1e-5


def test_var_is_one_kernel_in_layer_norm_code():
    x = np.random.default_rng(1).standard_normal((64, 300)).astype(np.float32)

    @pyasc.operator
    def norm(v):
        return (v - v.mean(-1, keepdims=True)) / np.sqrt(v.var(-1, keepdims=True) + 1e-5)

    assert len(norm.get_compiled_op(x).kernels()) == 1
    x64 = x.astype(np.float64)
    ref = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(norm(x), ref, rtol=2e-6, atol=2e-6)

    std_op = pyasc.operator(lambda v: (v - np.mean(v, axis=1, keepdims=True)) / np.std(v, axis=1, keepdims=True))
    assert len(std_op.get_compiled_op(x).kernels()) == 1


@pytest.mark.parametrize("ddof", [0, 1, 2, 3, 5])
def test_ddof_at_or_past_n_gives_numpy_inf_nan(ddof):
    x = np.array([[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]], np.float32)
    for fn in (np.var, np.std):
        got = _op(fn, axis=1, ddof=ddof)(x)
        want, ref = _ref(fn, x, axis=1, ddof=ddof)
        _check(got, want, ref, ulps=8)
    got = pyasc.var(np.zeros((2, 0)), axis=1)
    assert_matches(got, _np(np.var, np.zeros((2, 0)), axis=1))


def test_var_dtype_mean_and_correction():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    got = pyasc.operator(lambda v: np.var(v, axis=0, dtype=np.float32))(x)
    want, ref = _ref(np.var, x, axis=0, dtype=np.float32)
    _check(got, want, ref)
    got = pyasc.operator(lambda v: v.std(1, correction=1))(x.astype(np.float64))
    _check(got, *_ref(np.std, x.astype(np.float64), axis=1, correction=1))
    m = x.astype(np.float64).mean(1, keepdims=True) + 0.5
    got = pyasc.operator(lambda v, mu: np.var(v, axis=1, mean=mu))(x.astype(np.float64), m)
    _check(got, *_ref(lambda a, **k: np.var(a, axis=1, mean=m), x.astype(np.float64)))
    assert pyasc.var(np.float32(3.0)).dtype == np.float32


def test_var_special_values_and_views():
    x = np.array([[1.0, np.inf, 2.0], [np.nan, 1.0, 1.0], [1.0, 2.0, 3.0]], np.float64)
    _check(pyasc.operator(lambda v: v.var(1))(x), *_ref(np.var, x, axis=1))
    base = np.random.default_rng(3).standard_normal((6, 8)).astype(np.float32)
    for view in (base.T, base[::2, ::-3], np.broadcast_to(base[0], (5, 8))):
        got = pyasc.operator(lambda v: np.std(v, axis=-1, ddof=1))(view)
        want, ref = _ref(np.std, view, axis=-1, ddof=1)
        _check(got, want, ref, ulps=16, scale=np.maximum(np.abs(ref), 4.0))


@SETTINGS
@given(cases(), st.booleans())
def test_average_matches_numpy(case, weighted):
    x, axis, keepdims = case
    assume(x.size > 0)  # NumPy raises ZeroDivisionError for empty averages (data-dependent)
    if x.dtype == bool:
        x = x.astype(np.float64)
    rng = np.random.default_rng(x.size)
    w = None
    if weighted and isinstance(axis, int):
        w = rng.uniform(0.5, 2.0, x.shape[axis]).astype(np.float32)
    elif weighted:
        w = rng.uniform(0.5, 2.0, x.shape).astype(np.float32)
    args = (x,) if w is None else (x, w)

    def f(v, *ws):
        return np.average(v, axis=axis, weights=ws[0] if ws else None, returned=True, keepdims=keepdims)

    avg, scl = pyasc.operator(f)(*args)
    want = _np(lambda *a: f(*a)[0], *args)
    want_s = _np(lambda *a: f(*a)[1], *args)
    ref = _np(lambda *a: f(*a)[0], x.astype(np.float64), *([] if w is None else [w.astype(np.float64)]))
    big = float(np.max(np.abs(x.astype(np.float64)))) if x.size else 1.0
    _check(avg, want, ref, ulps=16, scale=np.maximum(big, np.abs(ref)))
    _check(scl, want_s, want_s.astype(np.float64), ulps=8)


def test_average_weights_as_argument_and_errors():
    x = np.arange(12.0).reshape(3, 4)
    w = np.array([1.0, 2.0, 3.0])
    got = pyasc.operator(lambda v, ww: np.average(v, axis=0, weights=ww))(x, w)
    assert_matches(got, np.average(x, axis=0, weights=w))

    x3 = np.random.default_rng(0).standard_normal((2, 3, 4))
    w2 = np.random.default_rng(1).uniform(1, 2, (4, 2))

    def tuple_axis(v, ww):
        return np.average(v, axis=(2, 0), weights=ww, returned=True, keepdims=True)

    for g, e in zip(pyasc.operator(tuple_axis)(x3, w2), tuple_axis(x3, w2)):
        assert_matches(g, e, rtol=1e-14, atol=1e-14)

    def bad(v):
        return np.average(v, weights=np.ones(3))  # weights of another shape

    with pytest.raises(pyasc.ShapeError) as e:
        pyasc.operator(bad)(x)
    assert e.value.lineno == line_of(bad, "weights of another shape")


@SETTINGS
@given(cases(dtypes=("float32", "float64", "int32", "int8", "uint8")))
def test_ptp_and_count_nonzero(case):
    x, axis, keepdims = case
    if 0 not in x.shape or axis is not None and all(
            x.shape[a] for a in (axis if isinstance(axis, tuple) else (axis,))):
        got = pyasc.operator(lambda v: np.ptp(v, axis, keepdims=keepdims))(x)
        _check(got, *_ref(np.ptp, x, axis=axis, keepdims=keepdims))
    got = pyasc.operator(lambda v: np.count_nonzero(v, axis=axis, keepdims=keepdims))(x)
    assert_matches(got, _np(np.count_nonzero, x, axis=axis, keepdims=keepdims))
    assert_matches(pyasc.count_nonzero(x > 0, axis=axis), _np(np.count_nonzero, x > 0, axis=axis))


def _with_nans(x, rng):
    if x.dtype.kind != "f" or not x.size:
        return x
    x = x.copy()
    x[rng.random(x.shape) < 0.3] = np.nan
    if x.ndim:
        x[(0,) * (x.ndim - 1)] = np.nan  # one all-NaN slice along the last axis
    return x


@SETTINGS
@given(cases(dtypes=("float32", "float64", "int32", "uint8")), st.integers(0, 2))
def test_nan_functions_match_numpy(case, ddof):
    x, axis, keepdims = case
    x = _with_nans(x, np.random.default_rng(x.size))
    empty = _reduced_count(x, axis) == 0
    for name in ("nansum", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd"):
        fn = getattr(np, name)
        kw = {"ddof": ddof} if name in ("nanvar", "nanstd") else {}
        if name in ("nanmax", "nanmin") and empty:
            with pytest.raises(ValueError):
                _op(fn, axis=axis, keepdims=keepdims)(x)
            continue
        got = _op(fn, axis=axis, keepdims=keepdims, **kw)(x)
        want, ref = _ref(fn, x, axis=axis, keepdims=keepdims, **kw)
        big = float(np.nanmax(np.abs(x.astype(np.float64)))) if x.size and not np.all(np.isnan(x)) else 1.0
        n = max(_reduced_count(x, axis), 1)
        scale = {"nanvar": big * big * n, "nanstd": big * n, "nansum": big * n}.get(name, big)
        _check(got, want, ref, ulps=16, scale=np.maximum(scale, np.abs(ref)))


def test_nan_functions_on_all_nan_and_inf():
    x = np.array([[np.nan, np.nan], [np.inf, np.nan], [-np.inf, 1.0], [np.inf, -np.inf]], np.float32)
    for name in ("nansum", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd"):
        fn = getattr(np, name)
        got = _op(fn, axis=1)(x)
        assert_matches(got, _np(fn, x, axis=1))
        assert_matches(getattr(pyasc, name)(x, axis=0), _np(fn, x, axis=0))


def test_clip_with_array_bounds():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    x[0, 0] = np.nan
    lo = rng.uniform(-1, 0, (1, 6)).astype(np.float32)
    hi = rng.uniform(0, 1, (4, 1))
    got = pyasc.operator(lambda v, a, b: np.clip(v, a, b))(x, lo, hi)
    assert_matches(got, np.clip(x, lo, hi))
    got = pyasc.operator(lambda v: v.clip(lo, None))(x)
    assert_matches(got, x.clip(lo, None))
    got = pyasc.operator(lambda v, b: np.clip(v, min=-0.5, max=b))(x, hi)
    assert_matches(got, np.clip(x, min=-0.5, max=hi))
    xi = np.arange(-5, 5, dtype=np.int32)
    assert_matches(pyasc.operator(lambda v: np.clip(v, 1.5, 2.5))(xi), np.clip(xi, 1.5, 2.5))
    assert_matches(pyasc.operator(lambda v: np.clip(v, xi[::-1], 3))(xi), np.clip(xi, xi[::-1], 3))


def test_bad_arguments_raise_typed_errors_at_the_user_line():
    x = np.ones((3, 4), np.float32)

    def bad_axis(v):
        return v.var(axis=2)  # axis out of range

    def dup_axis(v):
        return np.nanmean(v, axis=(0, -2))  # duplicate axis

    def both(v):
        return np.std(v, ddof=1, correction=1)  # ddof and correction

    def scalar_axis(v):
        return np.var(v[0, 0], axis=0)  # axis of a 0-d value

    for fn, cls, text in [(bad_axis, pyasc.ShapeError, "axis out of range"),
                          (dup_axis, pyasc.ShapeError, "duplicate axis"),
                          (both, pyasc.InvalidArgumentError, "ddof and correction"),
                          (scalar_axis, pyasc.ShapeError, "axis of a 0-d value")]:
        with pytest.raises(cls) as e:
            pyasc.operator(fn)(x)
        assert e.value.lineno == line_of(fn, text), fn.__name__
        assert e.value.filename == HERE

    def out_arg(v):
        return np.var(v, out=v)  # out= refused

    with pytest.raises(pyasc.UnsupportedError) as e:
        pyasc.operator(out_arg)(x)
    assert e.value.lineno == line_of(out_arg, "out= refused")


def test_nan_functions_take_dtype():
    x = np.array([[1.5, np.nan, 2.25], [np.nan, np.nan, 4.0]], np.float32)
    for name in ("nansum", "nanmean", "nanvar", "nanstd"):
        fn = getattr(np, name)
        got = _op(fn, axis=1, dtype=np.float64)(x)
        assert_matches(got, _np(fn, x, axis=1, dtype=np.float64), rtol=1e-15)
    xi = np.array([[1, 2, 4], [7, 7, 7]], np.int8)
    assert_matches(_op(np.nansum, axis=1, dtype=np.int8)(xi), np.nansum(xi, axis=1, dtype=np.int8))
    assert_matches(_op(np.nanmean, axis=0)(xi), np.nanmean(xi, axis=0))
