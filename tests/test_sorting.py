"""Sorting and selection inside operators, differential against NumPy (and jax.lax.top_k's
rule for topk): sort, argsort, partition, argpartition, topk, take_along_axis, searchsorted,
unique with a static size, median, nanmedian, quantile, percentile; every dtype, axes,
strided and broadcast views, ties, NaN, infinities and signed zeros; typed errors."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyasc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64"]
SHAPES = [(), (0,), (1,), (7,), (3, 0), (2, 1), (5, 33), (4, 3, 9), (2, 1100), (1, 5000)]


def _data(shape, dtype, rng, ties=False, specials=True):
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if ties:
            return rng.integers(max(info.min, -3), min(info.max, 3) + 1, shape).astype(dt)
        a = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
        if n >= 4:
            flat = a.reshape(-1)
            flat[:2] = [info.min, info.max]
        return a
    a = (rng.integers(-4, 4, shape) if ties else rng.standard_normal(shape) * 100).astype(dt)
    if specials and n >= 8:
        flat = a.reshape(-1)
        pos = rng.choice(n, size=min(n, 8), replace=False)
        flat[pos] = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, np.nan, 0.0], dt)[: len(pos)]
    return a


def _same(got, want):
    """Exact equality (NaN equals NaN; dtype and shape must match)."""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


def _axes(shape):
    return [None] + list(range(-len(shape), len(shape)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_sort_and_stable_argsort_match_numpy(dtype, shape):
    rng = np.random.default_rng(hash((dtype, shape)) % 2**32)
    for ties in (False, True):
        x = _data(shape, dtype, rng, ties)
        for axis in _axes(shape):
            if x.ndim == 0 and axis is not None:
                continue
            s = pyasc.operator(lambda v, a=axis: np.sort(v, axis=a))(x)
            _same(s, np.sort(x, axis=axis))
            i = pyasc.operator(lambda v, a=axis: np.argsort(v, axis=a, kind="stable"))(x)
            # NumPy orders -0.0 and 0.0 as equal: stable ties by index.
            want = np.argsort(x, axis=axis, kind="stable")
            _same(i, want.astype(np.int64))
            i2 = pyasc.operator(lambda v, a=axis: np.argsort(v, axis=a, stable=True))(x)
            _same(i2, want.astype(np.int64))


@pytest.mark.parametrize("dtype", ["float32", "int16", "uint64", "float64"])
def test_default_argsort_is_a_sorting_permutation(dtype):
    rng = np.random.default_rng(1)
    x = _data((6, 257), dtype, rng, ties=True)
    i = pyasc.operator(lambda v: np.argsort(v))(x)
    assert i.dtype == np.int64
    _same(np.take_along_axis(x, i, -1), np.sort(x, -1))
    _same(np.sort(i, -1), np.broadcast_to(np.arange(257), i.shape).astype(np.int64))


def test_strided_and_broadcast_views():
    rng = np.random.default_rng(2)
    base = rng.standard_normal((40, 30)).astype(np.float32)
    for v in (base.T, base[::-3, ::2], base[:, ::-1], np.broadcast_to(base[3], (5, 30)),
              np.broadcast_to(base[:, :1], (40, 7))):
        for axis in (0, 1, None):
            _same(pyasc.operator(lambda t, a=axis: np.sort(t, axis=a))(v), np.sort(v, axis=axis))
            _same(pyasc.operator(lambda t, a=axis: np.argsort(t, axis=a, kind="stable"))(v),
                  np.argsort(v, axis=axis, kind="stable").astype(np.int64))


def test_signed_zero_and_nan_order():
    x = np.array([0.0, -0.0, np.nan, -np.inf, 0.0, -0.0, -np.nan, np.inf, 1.0], np.float64)
    s = pyasc.operator(lambda v: np.sort(v))(x)
    _same(s, np.sort(x))
    assert np.isnan(s[-2:]).all()
    _same(pyasc.operator(lambda v: np.argsort(v, kind="stable"))(x), np.argsort(x, kind="stable"))


def _check_partition(x, part, kths, axis):
    srt = np.sort(x, axis=axis)
    pm, sm = (np.moveaxis(a, axis, -1) for a in (part, srt))
    assert np.array_equal(np.sort(pm, -1), sm, equal_nan=True)
    for k in kths:
        kv = pm[..., k:k + 1]
        np.testing.assert_array_equal(pm[..., k], sm[..., k])
        with np.errstate(invalid="ignore"):
            left_ok = np.isnan(kv) | (pm[..., :k] <= kv)
            right_ok = np.isnan(pm[..., k + 1:]) | (pm[..., k + 1:] >= kv)
        assert left_ok.all() and right_ok.all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_partition_contract(dtype):
    rng = np.random.default_rng(3)
    x = _data((5, 41), dtype, rng, ties=dtype.startswith("int"))
    for kth in (0, 7, -1, [3, 20, 40], (5, -2)):
        for axis in (-1, 0):
            n = x.shape[axis]
            ks = [k % n for k in np.atleast_1d(kth) if -n <= k < n]
            if len(ks) != len(np.atleast_1d(kth)):
                continue
            p = pyasc.operator(lambda v, k=kth, a=axis: np.partition(v, k, axis=a))(x)
            assert p.dtype == x.dtype
            _check_partition(x, p, ks, axis)
            ip = pyasc.operator(lambda v, k=kth, a=axis: np.argpartition(v, k, axis=a))(x)
            assert ip.dtype == np.int64
            _check_partition(x, np.take_along_axis(x, ip, axis), ks, axis)
            _same(np.sort(ip, axis), np.sort(np.argsort(x, axis=axis), axis).astype(np.int64))


def _ref_topk(x, k, axis):
    """jax.lax.top_k's rule: IEEE total order, largest first, ties to the lower index."""
    xm = np.moveaxis(x, axis, -1)
    if xm.dtype.kind == "f":
        ut = np.uint32 if xm.dtype == np.float32 else np.uint64
        bits = xm.view(ut)
        sign = ut(1) << ut(8 * xm.dtype.itemsize - 1)
        key = np.where(bits & sign, ~bits, bits | sign).astype(np.uint64)
    elif xm.dtype.kind == "i":
        key = xm.astype(np.int64).view(np.uint64) ^ np.uint64(1 << 63)
    else:
        key = xm.astype(np.uint64)
    idx = np.argsort(~key, axis=-1, kind="stable")[..., :k]
    return np.moveaxis(np.take_along_axis(xm, idx, -1), -1, axis), np.moveaxis(idx, -1, axis).astype(np.int64)


@pytest.mark.parametrize("dtype", DTYPES)
def test_topk_matches_lax_top_k_rule(dtype):
    rng = np.random.default_rng(4)
    for shape, axis in (((6, 300), -1), ((6, 300), 0), ((2, 3, 70), 1), ((1000,), 0), ((3, 5), -1)):
        for ties in (False, True):
            x = _data(shape, dtype, rng, ties)
            n = x.shape[axis]
            for k in sorted({0, 1, 5, n // 2, n} & set(range(n + 1))):
                v, i = pyasc.operator(lambda t, kk=k, a=axis: pyasc.topk(t, kk, axis=a))(x)
                wv, wi = _ref_topk(x, k, axis)
                _same(i, wi)
                _same(v, wv)


def test_topk_agrees_with_jax():
    jax = pytest.importorskip("jax")
    x = np.array([[1.0, np.nan, 0.0, -0.0, np.inf, 0.0, -np.nan, 3.0, 3.0]], np.float32)
    v, i = pyasc.topk(x, 9)
    jv, ji = jax.lax.top_k(x, 9)
    _same(i, np.asarray(ji).astype(np.int64))
    np.testing.assert_array_equal(np.signbit(v), np.signbit(np.asarray(jv)))


def test_topk_values_and_indices_share_one_selection():
    @pyasc.operator
    def f(x):
        return pyasc.topk(x, 4)

    x = np.random.default_rng(5).standard_normal((8, 64)).astype(np.float32)
    f(x)
    text = f.get_compiled_op(x).graph_ir()
    assert text.count("TopK") == 1, text


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "float32", "float64"])
def test_searchsorted(dtype):
    rng = np.random.default_rng(6)
    a = np.sort(_data((50,), dtype, rng, ties=True))
    v = _data((4, 9), dtype, rng, ties=True)
    for side in ("left", "right"):
        got = pyasc.operator(lambda s, t, sd=side: np.searchsorted(s, t, side=sd))(a, v)
        _same(got, np.searchsorted(a, v, side=side).astype(np.int64))
    perm = rng.permutation(50)
    shuffled = a[perm]
    sorter = np.argsort(shuffled, kind="stable")
    got = pyasc.operator(lambda s, t: np.searchsorted(s, t, side="right", sorter=sorter))(shuffled, v)
    _same(got, np.searchsorted(shuffled, v, side="right", sorter=sorter).astype(np.int64))


def test_searchsorted_nan_inf_and_zero():
    a = np.array([-np.inf, -1.0, -0.0, 0.0, 2.0, np.inf, np.nan], np.float32)
    v = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, 5.0], np.float32)
    for side in ("left", "right"):
        got = pyasc.operator(lambda s, t, sd=side: np.searchsorted(s, t, side=sd))(a, v)
        _same(got, np.searchsorted(a, v, side=side).astype(np.int64))


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_with_size(dtype):
    rng = np.random.default_rng(7)
    x = _data((6, 11), dtype, rng, ties=True)
    want = np.unique(x)
    for size in (0, 1, len(want), len(want) + 3):
        got = pyasc.operator(lambda t, s=size: pyasc.unique(t, size=s, fill_value=1))(x)
        pad = np.full(max(0, size - len(want)), 1, dtype=x.dtype)
        _same(got, np.concatenate([want[:size], pad]).astype(x.dtype))
    got = pyasc.operator(lambda t: pyasc.unique(t, size=len(want) + 2))(x)
    _same(got, np.concatenate([want, np.full(2, want[0], x.dtype)]))


def test_unique_nans_count_once():
    x = np.array([np.nan, 1.0, -0.0, np.nan, 0.0, 1.0, -np.nan], np.float64)
    got = pyasc.unique(x, size=4, fill_value=-7.0)
    _same(got, np.array([0.0, 1.0, np.nan, -7.0]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (7,), (8,), (5, 33), (4, 3, 10), (3, 0), (2, 700)])
def test_median_and_nanmedian(dtype, shape):
    rng = np.random.default_rng(8)
    x = _data(shape, dtype, rng, ties=True)
    for axis in _axes(shape) + ([(0, -1)] if len(shape) == 3 else []):
        for keepdims in (False, True):
            n_red = x.size if axis is None else int(np.prod([x.shape[a] for a in np.atleast_1d(axis)]))
            with _quiet():
                want = np.median(x, axis=axis, keepdims=keepdims)
                nwant = np.nanmedian(x, axis=axis, keepdims=keepdims)
            if n_red == 0:
                continue
            got = pyasc.operator(lambda t, a=axis, kd=keepdims: np.median(t, axis=a, keepdims=kd))(x)
            _same(got, np.asarray(want))
            got = pyasc.operator(lambda t, a=axis, kd=keepdims: np.nanmedian(t, axis=a, keepdims=kd))(x)
            _same(got, np.asarray(nwant))


class _quiet:
    def __enter__(self):
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


def _ref_stat(np_fn, x, q, axis, keepdims):
    """NumPy's statistic; a tuple axis is merged first (NumPy 2.4's nan-functions scramble the
    result of a 2-d q over a tuple of axes)."""
    if not isinstance(axis, tuple):
        return np.asarray(np_fn(x, q, axis=axis, keepdims=keepdims))
    rest = [i for i in range(x.ndim) if i not in axis]
    merged = np.transpose(x, rest + list(axis)).reshape([x.shape[i] for i in rest] + [-1])
    r = np.asarray(np_fn(merged, q, axis=-1))
    if keepdims:
        r = r.reshape(np.shape(q) + tuple(1 if i in axis else d for i, d in enumerate(x.shape)))
    return r


QS = [0.5, 0.0, 1.0, 0.3, [0.1, 0.5, 0.99], np.array([[0.25, 1.0], [0.0, 0.7]])]


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bool"])
def test_quantile_and_percentile(dtype):
    rng = np.random.default_rng(9)
    x = _data((5, 2, 37), dtype, rng, ties=dtype in ("float32", "int8"))
    for q in QS:
        for axis in (None, -1, 0, (0, 2)):
            for keepdims in (False, True):
                for np_fn, pct in ((np.quantile, False), (np.percentile, True), (np.nanquantile, False)):
                    qq = (np.asarray(q) * 100 if isinstance(q, np.ndarray) else
                          ([v * 100 for v in q] if isinstance(q, list) else q * 100)) if pct else q
                    with _quiet():
                        want = _ref_stat(np_fn, x, qq, axis, keepdims)
                    got = pyasc.operator(lambda t, f=np_fn, qv=qq, a=axis, kd=keepdims: f(t, qv, axis=a,
                                                                                         keepdims=kd))(x)
                    _same(got, want)


def test_quantile_integer_q_keeps_dtype():
    x = np.array([[3, -1, 7], [2, 2, 0]], np.int16)
    for q in (0, 1, [0, 1]):
        _same(pyasc.operator(lambda t, qv=q: np.quantile(t, qv, axis=1))(x), np.asarray(np.quantile(x, q, axis=1)))


def test_quantile_weak_and_strong_q_dtypes():
    x = np.random.default_rng(10).standard_normal(101).astype(np.float32)
    assert pyasc.operator(lambda t: np.quantile(t, 0.3))(x).dtype == np.float32
    assert pyasc.operator(lambda t: np.quantile(t, [0.3]))(x).dtype == np.float64
    assert pyasc.operator(lambda t: np.median(t))(x.astype(np.int8)).dtype == np.float64


def test_eager_calls_on_arrays():
    x = np.random.default_rng(11).standard_normal((3, 50))
    _same(pyasc.sort(x), np.sort(x))
    _same(pyasc.argsort(x, axis=0), np.argsort(x, axis=0, kind="stable"))
    v, i = pyasc.topk(x, 3)
    _same(i, np.argsort(-x, axis=-1, kind="stable")[:, :3])
    _same(pyasc.median(x, axis=1), np.median(x, axis=1))
    _same(pyasc.quantile(x, [0.2, 0.8]), np.quantile(x, [0.2, 0.8]))
    _same(pyasc.take_along_axis(x, i, -1), v)


def test_sort_fuses_with_elementwise_work():
    x = np.random.default_rng(12).standard_normal((9, 40)).astype(np.float32)

    @pyasc.operator
    def f(t):
        return np.sort(t * 2.0 + 1.0, axis=0)[::-1] - 3.0

    _same(f(x), np.sort(x * np.float32(2.0) + np.float32(1.0), axis=0)[::-1] - np.float32(3.0))


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from(DTYPES),
    shape=st.lists(st.integers(0, 9), min_size=1, max_size=3),
    seed=st.integers(0, 2**31),
    ties=st.booleans(),
    data=st.data(),
)
def test_hypothesis_differential(dtype, shape, seed, ties, data):
    rng = np.random.default_rng(seed)
    x = _data(tuple(shape), dtype, rng, ties)
    axis = data.draw(st.sampled_from(_axes(shape)))
    _same(pyasc.operator(lambda t: np.sort(t, axis=axis))(x), np.sort(x, axis=axis))
    _same(pyasc.operator(lambda t: np.argsort(t, axis=axis, kind="stable"))(x),
          np.argsort(x, axis=axis, kind="stable").astype(np.int64))
    ax = -1 if axis is None else axis
    n = x.shape[ax]
    if n:
        k = data.draw(st.integers(0, n))
        v, i = pyasc.operator(lambda t: pyasc.topk(t, k, axis=ax))(x)
        wv, wi = _ref_topk(x, k, ax)
        _same(i, wi)
        _same(v, wv)
        if dtype != "bool":
            q = data.draw(st.floats(0, 1))
            with _quiet():
                want = np.quantile(x, q, axis=ax)
            _same(pyasc.operator(lambda t: np.quantile(t, q, axis=ax))(x), np.asarray(want))
        with _quiet():
            want = np.median(x, axis=ax)
        _same(pyasc.operator(lambda t: np.median(t, axis=ax))(x), np.asarray(want))


def test_errors_are_typed_and_name_the_line():
    x = np.zeros((3, 4), np.float32)

    def f1(t):
        return pyasc.topk(t, 5)  # k > n

    def f2(t):
        return np.sort(t, axis=2)

    def f3(t):
        return np.unique(t)

    def f4(t):
        return np.partition(t, 4)

    def f5(t):
        return np.quantile(t, 1.5)

    for fn, cls in ((f1, pyasc.ShapeError), (f2, pyasc.ShapeError), (f3, pyasc.TraceError),
                    (f4, pyasc.ShapeError), (f5, pyasc.InvalidArgumentError)):
        with pytest.raises(cls) as ei:
            pyasc.operator(fn)(x)
        assert ei.value.filename == __file__, (fn, ei.value)
        assert ei.value.lineno == fn.__code__.co_firstlineno + 1, (fn, ei.value)
    with pytest.raises(pyasc.TraceError, match="size="):
        pyasc.operator(f3)(x)


def test_dynamic_shapes_trace_again_for_new_extents():
    @pyasc.operator(dynamic_shape=True)
    def f(t):
        return np.partition(t, -1), pyasc.topk(t, 2)[1], np.median(t, axis=-1)

    rng = np.random.default_rng(13)
    for n in (9, 30, 4):
        x = rng.standard_normal((3, n))
        p, i, m = f(x)
        _check_partition(x, p, [n - 1], -1)
        _same(i, _ref_topk(x, 2, -1)[1])
        _same(m, np.median(x, axis=-1))


def test_gather_index_out_of_range_raises():
    x = np.arange(12.0).reshape(3, 4)
    with pytest.raises(pyasc.ShapeError, match="out of bounds"):
        pyasc.operator(lambda t, i: np.take_along_axis(t, i, 1))(x, np.full((3, 2), 4))


def test_every_isa_path_gives_the_same_results():
    """Forced ISAs (AVX-512 quicksort and scan, AVX2 and portable paths) give NumPy's results."""
    code = (
        "import numpy as np, pyasc\n"
        "x = np.random.default_rng(0).standard_normal((64, 3000)).astype(np.float32)\n"
        "x[:, ::7] = 1.5\n"
        "v, i = pyasc.operator(lambda t: pyasc.topk(t, 5))(x)\n"
        "s = pyasc.operator(lambda t: np.sort(t))(x)\n"
        "a = pyasc.operator(lambda t: np.argsort(t, axis=0))(x)\n"
        "j = pyasc.operator(lambda t: np.sort(t))((x * 1000).astype(np.int32))\n"
        "import sys\n"
        "parts = [i.ravel().astype(np.float64), v.ravel(), s.ravel(), a.ravel(), j.ravel()]\n"
        "sys.stdout.buffer.write(np.concatenate(parts).astype(np.float64).tobytes())\n"
    )
    outs = []
    for isa in ("scalar", "sse2", "avx2", "avx512"):
        env = {**os.environ, "PYASC_ISA": isa}
        outs.append(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True).stdout)
    assert all(o == outs[0] for o in outs)
    x = np.random.default_rng(0).standard_normal((64, 3000)).astype(np.float32)
    x[:, ::7] = 1.5
    wv, wi = _ref_topk(x, 5, -1)
    got = np.frombuffer(outs[0], np.float64)
    want = [wi.ravel(), wv.ravel(), np.sort(x).ravel(), np.argsort(x, axis=0, kind="stable").ravel(),
            np.sort((x * 1000).astype(np.int32)).ravel()]
    np.testing.assert_array_equal(got, np.concatenate(want).astype(np.float64))
